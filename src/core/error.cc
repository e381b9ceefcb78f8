#include "core/error.h"

namespace tessera {
namespace {

std::string compose(const std::string& file, const std::string& subject,
                    const std::string& problem) {
  std::string message = file.empty() ? std::string("<input>") : file;
  if (!subject.empty()) message += ": " + subject;
  message += ": " + problem;
  return message;
}

}  // namespace

Error::Error(std::string file, std::string subject, std::string problem)
    : std::runtime_error(compose(file, subject, problem)),
      file_(std::move(file)),
      subject_(std::move(subject)),
      problem_(std::move(problem)) {}

}  // namespace tessera
