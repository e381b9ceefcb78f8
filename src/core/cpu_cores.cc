#include "core/cpu_cores.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace tessera {

namespace {

// The CPUs this process may run on; empty where the OS does not say.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

bool read_int(const std::string& path, long& value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> value);
}

int count_physical_cores() {
  const std::vector<int> cpus = allowed_cpus();
  std::set<std::pair<long, long>> cores;  // (package, core)
  for (int c : cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    long package = 0, core = 0;
    if (!read_int(dir + "physical_package_id", package) || !read_int(dir + "core_id", core)) {
      cores.clear();
      break;
    }
    cores.emplace(package, core);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  if (!cpus.empty()) return static_cast<int>(cpus.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

int physical_core_count() {
  static const int count = count_physical_cores();
  return count;
}

}  // namespace tessera
