#include "core/error.h"

#include "core/utf8.h"

namespace tessera {
namespace {

// Messages quote bytes from untrusted files: keep them printable, valid UTF-8
// by escaping control bytes and malformed sequences as \xNN.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_valid_len(s, i);
    if (n == 0 || (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

std::string compose(const std::string& file, const std::string& subject,
                    const std::string& problem) {
  std::string message = file.empty() ? std::string("<input>") : printable(file);
  if (!subject.empty()) message += ": " + printable(subject);
  message += ": " + printable(problem);
  return message;
}

}  // namespace

Error::Error(std::string file, std::string subject, std::string problem)
    : std::runtime_error(compose(file, subject, problem)),
      file_(std::move(file)),
      subject_(std::move(subject)),
      problem_(std::move(problem)) {}

}  // namespace tessera
