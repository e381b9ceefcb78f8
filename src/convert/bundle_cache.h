// The default-bundle cache: `tessera run` / `chat` / `bench` and
// tessera.Model given a GGUF, an HF directory or a pulled name run on the
// fast integer kernels without a manual convert step. The first use converts
// the source to a bundle under $TESSERA_HOME/bundles/<key>; later uses load
// that bundle.
//
//   key = sha256("source " + sha256 of the source's bytes,
//                "converter " + kConverterVersion,
//                "options " + fingerprint of default_convert_options(source))
//         (first 32 hex digits)
//
// * Hashing a large GGUF on every run is too slow (0.33 s for Gemma 3 270M's 253 MB
//   here, seconds for multi-GB models), so its sha256 is cached in bundles/source-hashes.json
//   keyed by the file's identity (FileId in bundle_cache.cc says why that
//   identity is enough).
// * Conversion runs under an exclusive flock(2) on bundles/<key>.lock: a
//   second process wanting the same bundle waits for the first and then
//   loads what it wrote instead of converting again. The bundle is written
//   to a staging directory and renamed into place complete.
// * Each cached bundle holds cache-record.json: the key, the source, the
//   options, the sha256 of every file but weights.bin, and weights.bin's
//   size, mtime, ctime and inode. Every load re-hashes the small files
//   (manifest, tokenizer: milliseconds) and stats weights.bin; if
//   weights.bin's identity changed, every tensor's sha256 is verified
//   (LoadOptions::verify's check) and the bundle is rebuilt if one differs.
//   A cached bundle that fails a check is rebuilt, never used.
#pragma once

#include <memory>
#include <string>

#include "convert/converter.h"
#include "runtime/model.h"

namespace tessera {

// Bump whenever convert_model's output for the same source and options
// changes (a new tensor layout, quantizer, calibration, manifest content...):
// bundles cached by an older converter are then converted again.
inline constexpr int kConverterVersion = 2;  // 2: blk5 / blk6 codes, super-block scales

struct BundleCacheOptions {
  std::string home;      // empty: tessera_home()
  int threads = 1;       // conversion threads (the output is identical for any count)
  bool progress = true;  // messages and progress bars on stderr
  bool rebuild = false;  // convert again even if a valid cached bundle exists
};

struct CachedBundle {
  std::string directory;       // the bundle to load
  std::string source_path;     // the resolved source (GGUF file or HF directory)
  std::string key;
  std::string weights_format;  // of the layer matrices: "lut4", or "blk4-8" (a quantized GGUF's own values)
  bool converted = false;      // this call converted it
  std::string rebuilt_because; // set when a cached bundle failed its check and was replaced
};

// The default bundle of `source` (a GGUF file, an HF directory or a pulled
// name), converted on first use. Throws Error when the source cannot be
// resolved, read or converted.
CachedBundle default_bundle(const std::string& source, const BundleCacheOptions& options = {});

// The sha256 of a source's bytes: a GGUF file's, or for an HF directory the
// sha256 of the list of (file name, sha256) of the files the converter reads.
// Uses and updates the index in <home>/bundles.
std::string source_sha256(const std::string& resolved_path, const std::string& home, bool progress);

// A short fingerprint of everything in `o` that changes the converter's output.
std::string convert_options_fingerprint(const ConvertOptions& o);

}  // namespace tessera
