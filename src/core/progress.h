// Progress reporting for long steps (copying, hashing, converting), on
// stderr: a redrawn bar on a terminal, a line per 10% otherwise (logs, CI).
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

class Progress {
 public:
  Progress(std::string label, uint64_t total);
  ~Progress();  // finishes the line
  void update(uint64_t done);

 private:
  std::string label_;
  uint64_t total_;
  bool tty_;
  int last_shown_ = -1;  // percent (tty) or decile (log) last printed
};

}  // namespace tessera
