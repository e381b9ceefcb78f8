// The one error type of Tessera. Every failure that reaches a user names
// three things: the file (or input) it happened in, the subject inside it
// (a tensor, a metadata key, a config field), and the problem.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace tessera {

class Error : public std::runtime_error {
 public:
  Error(std::string file, std::string subject, std::string problem);

  const std::string& file() const { return file_; }
  const std::string& subject() const { return subject_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string file_, subject_, problem_;
};

// Throws Error with a fmt-formatted problem text. File and subject are
// views, so a call site never builds std::string temporaries of its own: with
// clang, such temporaries in switch cases that all throw made ASan report
// stack-use-after-scope in the unwinding cleanup (found by safetensors_fuzz).
template <typename... Args>
[[noreturn]] void fail(std::string_view file, std::string_view subject,
                       fmt::format_string<Args...> problem, Args&&... args) {
  throw Error(std::string(file), std::string(subject),
              fmt::format(problem, std::forward<Args>(args)...));
}

}  // namespace tessera
