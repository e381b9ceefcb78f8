#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

namespace tessera {

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)), total_(total), tty_(::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  update(total_);
  if (tty_) std::fputc('\n', stderr);
}

void Progress::update(uint64_t done) {
  const int percent = total_ == 0 ? 100 : static_cast<int>(done * 100 / total_);
  if (tty_) {
    if (percent == last_shown_) return;
    last_shown_ = percent;
    const int width = 30, filled = percent * width / 100;
    std::fprintf(stderr, "\r%s [%.*s%*s] %3d%%", label_.c_str(), filled,
                 "##############################", width - filled, "", percent);
  } else {
    const int decile = percent / 10;
    if (decile == last_shown_) return;
    last_shown_ = decile;
    std::fprintf(stderr, "%s: %d%%\n", label_.c_str(), decile * 10);
  }
  std::fflush(stderr);
}

}  // namespace tessera
