// The one error type of Tessera. Every failure that reaches a user names
// three things: the file (or input) it happened in, the subject inside it
// (a tensor, a metadata key, a config field), and the problem.
#pragma once

#include <stdexcept>
#include <string>

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

// Throws Error with a fmt-formatted problem text.
template <typename... Args>
[[noreturn]] void fail(const std::string& file, const std::string& subject,
                       fmt::format_string<Args...> problem, Args&&... args) {
  throw Error(file, subject, fmt::format(problem, std::forward<Args>(args)...));
}

}  // namespace tessera
