#include "backend/arithmetic.h"

#include "core/error.h"

namespace tessera {

const char* arithmetic_name(Arithmetic a) { return a == Arithmetic::Exact ? "exact" : "fast"; }

Arithmetic parse_arithmetic(const std::string& name) {
  if (name == "exact") return Arithmetic::Exact;
  if (name == "fast") return Arithmetic::Fast;
  fail("options", "arithmetic", "must be exact or fast, got '{}'", name);
}

}  // namespace tessera
