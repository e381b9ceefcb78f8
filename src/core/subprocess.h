// Runs a child program with an argument vector (no shell, so no quoting
// problems), stdin closed, stderr inherited (the child's own progress output
// reaches the user), stdout inherited, captured, or sent to our stderr (so a
// command whose stdout is its answer stays clean while a child talks).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tessera {

enum class ChildStdout { Inherit, Capture, ToStderr };

struct SubprocessResult {
  int exit_code = -1;   // the child's exit status; 128+N if killed by signal N
  std::string stdout_text;  // when captured
};

// `extra_env` entries are added to (or override) this process's environment.
// Throws Error if the program cannot be started.
SubprocessResult run_subprocess(const std::vector<std::string>& argv, ChildStdout stdout_mode,
                                const std::map<std::string, std::string>& extra_env = {});

}  // namespace tessera
