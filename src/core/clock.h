// The monotonic clock the runtime times its steps with.
#pragma once

#include <chrono>

namespace tessera {

using Clock = std::chrono::steady_clock;

// Seconds from t to now.
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace tessera
