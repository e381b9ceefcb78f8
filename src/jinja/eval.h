// Interpreter of the Jinja AST (jinja/parser.h) with the semantics of Jinja2
// 3.1 running in transformers' ImmutableSandboxedEnvironment: Python values
// (jinja/value.h), Jinja's scoping (a for-loop iteration and a macro call get
// their own scope; if-blocks do not; macros see the top-level variables at call
// time), the default Undefined (prints as "", errors on use), the builtin
// filters and tests chat templates use, and transformers' globals
// (raise_exception, strftime_now, namespace, dict) plus range.
//
// Hostile templates: output, string and list sizes, loop iterations, range()
// lengths and macro recursion are bounded (RenderLimits); going past a bound
// is an Error, never a crash or an unbounded allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "jinja/parser.h"
#include "jinja/value.h"

namespace tessera::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{32} << 20;  // also bounds every string value
  size_t max_list_items = size_t{1} << 20;
  uint64_t max_iterations = 10'000'000;         // loop iterations + macro calls
  int max_call_depth = 64;                      // nested macro calls
  int64_t max_range = 100000;                   // Jinja's sandbox MAX_RANGE
};

// Renders `tpl` with `context` as its variables (over the globals). Throws
// Error(tpl.origin, "line L, column C", problem) for every failure, including
// raise_exception(message) (the problem is then exactly `message`).
std::string render(const Template& tpl, const Dict& context, const RenderLimits& limits = {});

// Filters and tests the interpreter knows (for parse-time validation).
bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

// Throws Error naming the first filter or test `tpl` uses that is unknown,
// with its line and column (Jinja itself rejects those at compile time).
void validate(const Template& tpl);

}  // namespace tessera::jinja
