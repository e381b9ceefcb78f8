#include "convert/bundle_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bundle/bundle.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/cpu_cores.h"
#include "sources/model_registry.h"
#include "sources/model_source.h"

namespace tessera {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRecordFile = "cache-record.json";
constexpr const char* kIndexFile = "source-hashes.json";
constexpr int kRecordFormat = 1;

// What identifies one version of a file without reading it. The source's
// sha256 is cached under this identity (SourceHashIndex) instead of being
// recomputed on every run (0.33 s per 253 MB here, paid before every
// generation), and a cached bundle's weights.bin is checked against it.
// Why this is enough:
//   * size and mtime (ns) change on every ordinary write;
//   * ctime cannot be set from user space and changes on any write, chmod or
//     rename onto the file, so tools that restore mtime (cp -p, rsync -t,
//     touch -r, an editor preserving it) still change the identity;
//   * inode and device change when the path is replaced by another file
//     (rename over it, a new download, another filesystem).
// What it misses is a write that leaves size, mtime and ctime all equal,
// which needs the clock set back or raw block-device access. A key on
// (path, size, mtime) alone would also miss the mtime-restoring tools; hashing
// a prefix and suffix as a "fast check" would miss edits in the middle.
struct FileId {
  uint64_t size = 0, mtime_ns = 0, ctime_ns = 0, inode = 0, dev = 0;

  nlohmann::ordered_json to_json() const {
    return {{"size", size}, {"mtime_ns", mtime_ns}, {"ctime_ns", ctime_ns}, {"inode", inode}, {"dev", dev}};
  }
  bool matches(const nlohmann::json& j) const {
    return j.is_object() && j.value("size", uint64_t{~0ull}) == size && j.value("mtime_ns", uint64_t{0}) == mtime_ns &&
           j.value("ctime_ns", uint64_t{0}) == ctime_ns && j.value("inode", uint64_t{0}) == inode &&
           j.value("dev", uint64_t{0}) == dev;
  }
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  FileId id;
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec);
  id.ctime_ns = static_cast<uint64_t>(st.st_ctim.tv_sec) * 1000000000ull + static_cast<uint64_t>(st.st_ctim.tv_nsec);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.dev = static_cast<uint64_t>(st.st_dev);
  return id;
}

std::string sha256_text(const std::string& text) {
  return sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// Writes `text` to `path` atomically (a sibling temporary file, fsync'd, renamed).
void write_file_atomically(const std::string& path, const std::string& text) {
  static std::atomic<uint64_t> serial{0};  // threads of one process (Python) write apart too
  const std::string tmp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), serial.fetch_add(1));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail(tmp, "", "cannot create: {}", std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 &&
                  ::fsync(fileno(f)) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    fail(tmp, "", "write failed: {}", std::strerror(err));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail(path, "", "cannot move into place: {}", ec.message());
  }
}

std::optional<nlohmann::json> read_json_or_null(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// An exclusive flock(2) on `path` (created if missing), held until destroyed.
// The lock goes with the open file description, so it is released when the
// process exits however it exits: a killed conversion never leaves it held.
class FileLock {
 public:
  FileLock(const std::string& path, const std::string& waiting_message, bool announce) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(path, "", "cannot open the lock file: {}", std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    if (errno != EWOULDBLOCK) fail_and_close(path);
    if (announce) fmt::print(stderr, "{}\n", waiting_message);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) fail_and_close(path);
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
  [[noreturn]] void fail_and_close(const std::string& path) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(path, "", "cannot lock: {}", std::strerror(err));
  }
};

// The files of an HF directory the converter reads (hf_config, safetensors,
// tokenizer, chat template, stop tokens), sorted by name.
std::vector<std::string> hf_source_files(const std::string& dir) {
  static const char* kNamed[] = {"config.json",          "generation_config.json",  "tokenizer.json",
                                 "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                                 "chat_template.json"};
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string name = e.path().filename().string();
    const bool named = std::find_if(std::begin(kNamed), std::end(kNamed), [&](const char* n) { return name == n; }) !=
                       std::end(kNamed);
    const bool weights = name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json");
    if (named || weights) names.push_back(name);
  }
  if (ec) fail(dir, "", "cannot list the directory: {}", ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

// The index of source hashes: {"format": 1, "files": {canonical path: FileId + "sha256"}}.
class SourceHashIndex {
 public:
  explicit SourceHashIndex(std::string path) : path_(std::move(path)) {
    // A missing or malformed index is an empty one: it is only a cache.
    auto j = read_json_or_null(path_);
    if (j && j->is_object() && j->contains("format") && (*j)["format"] == 1 && j->contains("files") &&
        (*j)["files"].is_object())
      files_ = (*j)["files"];
  }

  // The file's sha256: from the index when its identity is unchanged, else
  // hashed (with a progress bar for large files) and recorded.
  std::string sha256(const std::string& path, bool progress) {
    std::error_code ec;
    const std::string key = fs::canonical(path, ec).string();
    if (ec) fail(path, "", "cannot resolve the path: {}", ec.message());
    const std::optional<FileId> before = file_id(key);
    if (!before) fail(path, "", "not a readable regular file");
    try {
      if (files_.contains(key) && before->matches(files_[key]) && files_[key].contains("sha256") &&
          files_[key]["sha256"].is_string())
        return files_[key]["sha256"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
      // A malformed entry: hash again and replace it.
    }
    std::optional<Progress> bar;
    if (progress && before->size >= (64u << 20)) bar.emplace("hashing " + fs::path(path).filename().string(), before->size);
    const std::string digest = sha256_file_hex(key, [&](uint64_t done, uint64_t) {
      if (bar) bar->update(done);
    });
    bar.reset();
    // A file that changed while it was hashed is not recorded: its digest
    // may mix two versions.
    const std::optional<FileId> after = file_id(key);
    if (after && after->matches(before->to_json())) {
      nlohmann::json entry = before->to_json();
      entry["sha256"] = digest;
      files_[key] = entry;
      dirty_ = true;
    }
    return digest;
  }

  // Rewrites the index (dropping entries of files that are gone). Another
  // process may rewrite it at the same time; one of the two versions wins and
  // the loser's entries are hashed again next time, so nothing is locked. A
  // failure to write only costs that rehash, so it is not an error.
  void save() {
    if (!dirty_) return;
    nlohmann::json kept = nlohmann::json::object();
    std::error_code ec;
    for (const auto& [path, entry] : files_.items())
      if (fs::is_regular_file(path, ec)) kept[path] = entry;
    try {
      write_file_atomically(path_, nlohmann::json{{"format", 1}, {"files", kept}}.dump(1) + "\n");
    } catch (const Error&) {
    }
  }

 private:
  std::string path_;
  nlohmann::json files_ = nlohmann::json::object();
  bool dirty_ = false;
};

nlohmann::ordered_json options_json(const ConvertOptions& o) {
  nlohmann::ordered_json keep = nlohmann::ordered_json::array();
  for (const auto& [re, f] : o.keep) keep.push_back(re + "=" + std::string(weight_format_name(f)));
  std::string calibration = o.calibration;
  if (calibration != "builtin" && calibration != "none") {
    // A text file: its bytes, not its name, decide the palettes.
    std::error_code ec;
    if (!fs::is_regular_file(calibration, ec)) fail(calibration, "calibration", "cannot read the calibration text file");
    calibration = "file sha256 " + sha256_file_hex(calibration);
  }
  return {{"keep_source_quant", o.keep_source_quant},
          {"weights", weight_format_name(o.weights)},
          {"embeddings", weight_format_name(o.embeddings)},
          {"lm_head", weight_format_name(o.lm_head)},
          {"group_size", o.group_size},
          {"seed", o.seed},
          {"kmeans_iterations", o.kmeans_iterations},
          {"calibration", calibration},
          {"calibration_tokens", o.calibration_tokens},
          {"keep", keep},
          {"chunks", o.chunks},
          {"prefill_sizes", o.prefill_sizes}};
}

// The sha256 of every file of a bundle directory but its weights file and
// the record, by name.
nlohmann::ordered_json small_file_hashes(const std::string& dir, const std::string& weights_file) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && name != weights_file && name != kRecordFile) names.push_back(name);
  }
  if (ec) fail(dir, "", "cannot list the directory: {}", ec.message());
  std::sort(names.begin(), names.end());
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const std::string& n : names) out[n] = sha256_file_hex((fs::path(dir) / n).string());
  return out;
}

struct Check {
  bool ok = false;
  std::string problem;  // when not ok; empty when the bundle is simply absent
};

// Is the cached bundle at `dir` intact and made for `key`? See the header:
// the small files are re-hashed, weights.bin is stat'ed, and verified in
// full only when its identity changed (the record is then updated).
Check check_cached_bundle_unguarded(const std::string& dir, const std::string& key, bool progress) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {false, ""};
  const std::string record_path = (fs::path(dir) / kRecordFile).string();
  std::optional<nlohmann::json> record = read_json_or_null(record_path);
  if (!record || !record->is_object()) return {false, fmt::format("{} is missing or unreadable", kRecordFile)};
  if (record->value("format", 0) != kRecordFormat || record->value("key", std::string()) != key)
    return {false, fmt::format("{} does not describe this bundle", kRecordFile)};
  const nlohmann::json& files = record->value("files", nlohmann::json());
  const nlohmann::json& weights = record->value("weights", nlohmann::json());
  if (!files.is_object() || !files.contains("manifest.json") || !weights.is_object() ||
      !weights.contains("file") || !weights["file"].is_string())
    return {false, fmt::format("{} is incomplete", kRecordFile)};
  for (const auto& [name, digest] : files.items()) {
    const std::string path = (fs::path(dir) / name).string();
    if (!fs::is_regular_file(path, ec)) return {false, fmt::format("{} is missing", name)};
    if (!digest.is_string() || sha256_file_hex(path) != digest.get<std::string>())
      return {false, fmt::format("{} differs from what was converted (sha256)", name)};
  }
  const std::string weights_file = weights["file"].get<std::string>();
  const std::string weights_path = (fs::path(dir) / weights_file).string();
  const std::optional<FileId> id = file_id(weights_path);
  if (!id) return {false, fmt::format("{} is missing", weights_file)};
  if (id->size != weights.value("size", uint64_t{~0ull}))
    return {false, fmt::format("{} has {} bytes, {} were written", weights_file, id->size,
                               weights.value("size", uint64_t{0}))};
  if (id->matches(weights)) return {true, ""};
  // Same size, another identity (touched, rewritten, copied): check every
  // tensor's sha256 against the (already checked) manifest.
  if (progress) fmt::print(stderr, "{} changed since it was converted: verifying every tensor's sha256\n", weights_path);
  try {
    Bundle::open(dir, true, FileMemory::Mmap);
  } catch (const Error& e) {
    return {false, fmt::format("{} failed verification: {}", weights_file, e.what())};
  }
  nlohmann::json updated = *record;
  nlohmann::json w = id->to_json();
  w["file"] = weights_file;
  updated["weights"] = w;
  try {
    write_file_atomically(record_path, updated.dump(1) + "\n");
  } catch (const Error&) {
    // Read-only cache: verified now, verified again next time.
  }
  return {true, ""};
}

Check check_cached_bundle(const std::string& dir, const std::string& key, bool progress) {
  try {
    return check_cached_bundle_unguarded(dir, key, progress);
  } catch (const nlohmann::json::exception& e) {
    return {false, fmt::format("{} is malformed: {}", kRecordFile, e.what())};
  }
}

void remove_tree(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) fail(p.string(), "", "cannot remove: {}", ec.message());
}

}  // namespace

std::string convert_options_fingerprint(const ConvertOptions& o) {
  return sha256_text(options_json(o).dump()).substr(0, 16);
}

std::string source_sha256(const std::string& resolved_path, const std::string& home, bool progress) {
  const fs::path bundles = fs::path(home) / "bundles";
  std::error_code ec;
  fs::create_directories(bundles, ec);
  if (ec) fail(bundles.string(), "", "cannot create the bundle cache directory: {}", ec.message());
  SourceHashIndex index((bundles / kIndexFile).string());
  std::string digest;
  if (fs::is_directory(resolved_path, ec)) {
    std::string listing;
    const std::vector<std::string> names = hf_source_files(resolved_path);
    if (std::find(names.begin(), names.end(), "config.json") == names.end())
      fail(resolved_path, "", "not a model directory: no config.json");
    for (const std::string& name : names)
      listing += name + "\t" + index.sha256((fs::path(resolved_path) / name).string(), progress) + "\n";
    digest = sha256_text(listing);
  } else {
    digest = index.sha256(resolved_path, progress);
  }
  index.save();
  return digest;
}

CachedBundle default_bundle(const std::string& source, const BundleCacheOptions& options) {
  const std::string home = options.home.empty() ? tessera_home() : options.home;
  CachedBundle out;
  out.source_path = resolve_model_path(source);
  const ConvertOptions co = default_convert_options(out.source_path, options.threads);
  const std::string fingerprint = convert_options_fingerprint(co);
  const std::string source_hash = source_sha256(out.source_path, home, options.progress);
  out.key = sha256_text(fmt::format("tessera bundle cache\nsource {}\nconverter {}\noptions {}\n", source_hash,
                                    kConverterVersion, fingerprint))
                .substr(0, 32);
  // What the layers become: the source's own blocks ("blk4-8": blk4, blk5, blk6, blk8) or a format.
  out.weights_format = co.keep_source_quant ? "blk4-8" : std::string(weight_format_name(co.weights));
  const fs::path bundles = fs::path(home) / "bundles";
  out.directory = (bundles / out.key).string();

  // Fast path, no lock: a valid bundle is there.
  Check check;
  if (!options.rebuild) {
    check = check_cached_bundle(out.directory, out.key, options.progress);
    if (check.ok) return out;
  }

  FileLock lock((bundles / (out.key + ".lock")).string(),
                fmt::format("waiting for another tessera process converting {} (lock {})", out.source_path,
                            (bundles / (out.key + ".lock")).string()),
                options.progress);
  // The first process to take the lock converts; the others find its bundle.
  // (A forced rebuild converts anyway.)
  if (!options.rebuild) {
    check = check_cached_bundle(out.directory, out.key, options.progress);
    if (check.ok) return out;
  } else {
    check.problem = "rebuild requested";
  }
  out.rebuilt_because = check.problem;
  if (options.progress) {
    if (!check.problem.empty())
      fmt::print(stderr, "cached bundle {} is not usable ({}): converting again\n", out.directory, check.problem);
    fmt::print(stderr, "converting {} to a {} bundle, once (later runs load {})\n", out.source_path,
               out.weights_format, out.directory);
  }
  // Leftovers of conversions of this key that were killed; nobody else is
  // converting it while we hold the lock.
  std::error_code ec;
  const std::string staging_prefix = ".staging-" + out.key;
  for (const auto& e : fs::directory_iterator(bundles, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(staging_prefix) || name.starts_with(".trash-" + out.key)) remove_tree(e.path());
  }
  const fs::path staging = bundles / (staging_prefix + "-" + std::to_string(::getpid()));
  remove_tree(staging);
  try {
    ConvertOptions c = co;
    c.progress = options.progress;
    c.force = false;
    convert_model(out.source_path, staging.string(), c);
    const Manifest m = Bundle::read_manifest(staging.string());
    const std::optional<FileId> weights_id = file_id((staging / m.weights_file).string());
    if (!weights_id) fail((staging / m.weights_file).string(), "", "missing after conversion");
    nlohmann::ordered_json w = weights_id->to_json();
    w["file"] = m.weights_file;
    nlohmann::ordered_json record = {{"format", kRecordFormat},
                                     {"key", out.key},
                                     {"source", {{"path", out.source_path}, {"sha256", source_hash}}},
                                     {"converter_version", kConverterVersion},
                                     {"tessera_version", TESSERA_VERSION},
                                     {"options", options_json(co)},
                                     {"options_fingerprint", fingerprint},
                                     {"files", small_file_hashes(staging.string(), m.weights_file)},
                                     {"weights", w}};
    write_file_atomically((staging / kRecordFile).string(), record.dump(1) + "\n");
    // Into place: a bad bundle already there is moved aside first (a
    // directory cannot be renamed over a non-empty one).
    if (fs::exists(out.directory, ec)) {
      const fs::path trash = bundles / (".trash-" + out.key + "-" + std::to_string(::getpid()));
      fs::rename(out.directory, trash, ec);
      if (ec) fail(out.directory, "", "cannot move the old bundle aside: {}", ec.message());
      remove_tree(trash);
    }
    fs::rename(staging, out.directory, ec);
    if (ec) fail(out.directory, "", "cannot move the converted bundle into place: {}", ec.message());
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
  out.converted = true;
  return out;
}

}  // namespace tessera
