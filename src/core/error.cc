#include "core/error.h"

namespace tessera {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) n = 2, cp = c & 0x1f;
  else if ((c & 0xf0) == 0xe0) n = 3, cp = c & 0x0f;
  else if ((c & 0xf8) == 0xf0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Messages quote bytes from untrusted files: keep them printable, valid UTF-8
// by escaping control bytes and malformed sequences as \xNN.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_sequence_length(s, i);
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
