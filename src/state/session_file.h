// A sequence's state and token history saved to a file and read back:
// Session::save / load (resume a long conversation after a restart without
// prefilling it again) and the prefix cache's disk tier
// (engine/disk_prefix_store.h).
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
// Reading refuses, with an Error naming the file, anything that is not such
// a file, another version, another model, a payload whose checksum does not
// match, or state that does not fit the destination (its context length or
// KV type): the destination is then unchanged. Writing goes to a temporary
// file that is renamed into place, so a crash never leaves half a file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "state/sequence_state.h"

namespace tessera {

inline constexpr uint32_t kSessionFileVersion = 1;

void write_session_file(const std::string& path, const std::string& model_identity,
                        std::span<const int32_t> history, const SequenceState& state);

// Reads the file into `state` (which gives the shape it must fit) and
// returns its history; throws Error, `state` unchanged, as described above.
std::vector<int32_t> read_session_file(const std::string& path, const std::string& model_identity,
                                       SequenceState& state);

// Only the header and the token history, without reading the state or
// checking the checksum (which read_session_file does): what an index of
// many files needs. Throws Error for a file that is not a session file of
// this version, or too short to hold its history.
struct SessionFileHead {
  std::string model;  // the model identity it was saved for
  std::vector<int32_t> history;
};
SessionFileHead read_session_file_head(const std::string& path);

}  // namespace tessera
