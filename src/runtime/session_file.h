// A session's state saved to a file and loaded back (Session::save / load):
// resume a long conversation after a restart without prefilling it again.
//
// Layout (little-endian on every machine Tessera builds for):
//   "TSESSION"            8 bytes, magic
//   u32 version           kSessionFileVersion
//   char[64] model        Model::identity(): sha256 (hex) of the bundle's
//                         manifest.json, or of the source's spec and path
//   u64 payload bytes
//   char[64] payload sha256 (hex)
//   payload: i64 tokens, the token history, then SequenceState::save
//            (per layer: KV rows, conv tails, recurrent matrices and log)
//
// Loading refuses, with an Error naming the file, anything that is not such
// a file, another version, another model, a payload whose checksum does not
// match, or state that does not fit the session (its context length or KV
// type): the session is then unchanged. Saving writes a temporary file and
// renames it, so a crash never leaves half a file.
#pragma once

#include <cstdint>

namespace tessera {

inline constexpr uint32_t kSessionFileVersion = 1;

}  // namespace tessera
