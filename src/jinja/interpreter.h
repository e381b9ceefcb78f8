// The interpreter behind render() (eval.h), shared by the files that
// implement it; nothing outside src/jinja includes this header.
//   eval.cc     statements and expressions: scopes, loops, macros, calls,
//               Python's operators, attribute / item lookup and slicing;
//   globals.cc  the functions every template can call: range, namespace,
//               dict, and transformers' raise_exception and strftime_now;
//   filters.cc  Jinja's filters (`x | upper`) and tests (`x is defined`),
//               and validate(), the parse-time check of their names;
//   methods.cc  Python's methods on str and dict values (`s.strip()`,
//               `d.items()`) and the str algorithms filters share with them.
// Every failure goes through Interpreter::error, which names the template and
// the line and column of the construct being evaluated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "jinja/eval.h"

namespace tessera::jinja {

// The variables of one Jinja scope. A for-loop iteration and a macro call get
// their own, so what they set does not leak out; an if-block uses the
// enclosing one. Lookup walks the parents: an iteration's is the loop's
// scope, a macro call's the scope the macro was defined in, and the root
// holds the globals and the render context.
struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Scope> parent;

  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get())
      for (const auto& [k, v] : s->vars)
        if (k == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [k, old] : vars) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    vars.emplace_back(name, std::move(v));
  }
};
using ScopePtr = std::shared_ptr<Scope>;

// How a statement list ended: normally, or at {% break %} / {% continue %}.
enum class Flow { Normal, Break, Continue };

class Interpreter {
 public:
  Interpreter(const Template& tpl, const RenderLimits& lim) : tpl_(tpl), lim_(lim) {}

  std::string run(const Dict& context);

  // ------------------------------------------------------------ errors
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> f, Args&&... args) const {
    fail(tpl_.origin, location(line_, col_), f, std::forward<Args>(args)...);
  }
  [[noreturn]] void raise(const std::string& message) const { throw Error(tpl_.origin, location(line_, col_), message); }

  // A filter / test reached at run time that Tessera lacks: Jinja's own
  // message for names Jinja does not know either (what transformers raises
  // when such a branch runs), else ours (filters.cc).
  [[noreturn]] void unknown_filter_or_test(const char* what, const std::string& name) const;

  [[noreturn]] void undefined_error(const Value& v) const {
    const std::string& hint = v.undefined_hint();
    error("{}", hint.empty() ? std::string("value is undefined") : hint);
  }

  void at(int line, int col) {
    line_ = line;
    col_ = col;
  }

  void tick() {
    if (++iterations_ > lim_.max_iterations)
      error("template exceeded {} loop iterations and macro calls", lim_.max_iterations);
  }

  void check_size(size_t n) const {
    if (n > lim_.max_output_bytes) error("string or output larger than {} bytes", lim_.max_output_bytes);
  }
  void check_items(size_t n) const {
    if (n > lim_.max_list_items) error("list longer than {} items", lim_.max_list_items);
  }

  const RenderLimits& limits() const { return lim_; }
  int& call_depth() { return call_depth_; }
  const Template& tpl() const { return tpl_; }

  // ------------------------------------------------------------ statements (eval.cc)
  Flow exec(const Body& body, const ScopePtr& scope, std::string& out);
  void exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void assign(const Stmt& s, const ScopePtr& scope, Value v);
  void assign_names(const std::vector<std::string>& names, bool tuple, Scope& scope, const Value& v);

  // ------------------------------------------------------------ expressions (eval.cc)
  Value eval(const Expr& e, const ScopePtr& scope);
  // The arguments of a call, filter or test expression, each evaluated in
  // source order: e.args[1..] (e.args[0] is the callee or the subject) and
  // e.kwargs.
  List eval_args(const Expr& e, const ScopePtr& scope);
  KwArgs eval_kwargs(const Expr& e, const ScopePtr& scope);
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
  Value call(const Value& callee, List args, KwArgs kwargs);
  Value binary(const std::string& op, const Value& l, const Value& r);
  bool compare(const std::string& op, const Value& l, const Value& r);
  bool contains(const Value& container, const Value& item);
  int cmp(const Value& l, const Value& r);  // <0, 0, >0; error if unorderable
  List iterate(const Value& v);             // Python iter() as a list

  // ------------------------------------------------------------ builtins
  // subject | name(args, kwargs) (filters.cc).
  Value filter(const std::string& name, const Value& subject, List args, KwArgs kwargs);
  // subject is name(args) (filters.cc).
  bool test(const std::string& name, const Value& subject, const List& args);
  // self.name(args, kwargs) on a str or a dict (methods.cc).
  Value method(const Value& self, const std::string& name, List args, KwArgs kwargs);

  // ------------------------------------------------------------ printing
  std::string to_str(const Value& v) const {
    if (contains_generator(v))
      error("unsupported Jinja feature: printing a generator (Jinja prints its memory address); add '| list'");
    if (v.is_callable() && v.as_callable().repr().empty())
      error("unsupported Jinja feature: printing the function '{}' (Python prints its memory address)",
            v.as_callable().name());
    std::string s = py_str(v);
    check_size(s.size());
    return s;
  }
  static bool contains_generator(const Value& v) {
    if (v.is_generator()) return true;
    if (v.is_list())
      for (const auto& e : v.as_list())
        if (contains_generator(e)) return true;
    if (v.is_dict())
      for (const auto& [k, e] : v.as_dict().items())
        if (contains_generator(e)) return true;
    return false;
  }
  // Python's str.upper() / str.lower(); an error naming the first code point
  // whose Python mapping is not one-to-one (methods.cc).
  std::string case_map(const std::string& s, bool upper) const;
  Value make_string(std::string s) const {
    check_size(s.size());
    return Value::string(std::move(s));
  }

  ScopePtr root_;

 private:
  const Template& tpl_;
  const RenderLimits& lim_;
  int line_ = 0, col_ = 0;
  uint64_t iterations_ = 0;
  int call_depth_ = 0;
};

// ---------------------------------------------------------------- arguments (eval.cc)
// Binding a call's arguments the way Python binds them to a signature.

const Value* kwarg(const KwArgs& kw, const char* name);
// Positional-or-keyword argument `i` named `name`.
const Value* arg(const List& args, const KwArgs& kw, size_t i, const char* name);
// Python's TypeError for more than max_pos positional arguments or a keyword
// not among names; `what` names the callee ("filter 'join'", "str.split()").
void check_args(Interpreter& in, const char* what, const List& args, const KwArgs& kw, size_t max_pos,
                std::initializer_list<const char*> names);

// ---------------------------------------------------------------- globals (globals.cc)

// Sets the global functions in the root scope, before the render context.
void add_globals(Scope& root);

// ---------------------------------------------------------------- methods.cc

// Whether `name` is a method of dict / of str: get_attr binds those to their
// receiver rather than looking up a key or an attribute.
bool is_dict_method(const std::string& name);
bool is_str_method(const std::string& name);
// Python's str.strip family (chars == nullptr: whitespace) and
// str.splitlines(), which the trim, int, float and indent filters use too.
std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right);
std::vector<std::string> py_splitlines(const std::string& s);

// ---------------------------------------------------------------- filters.cc

// markupsafe.escape of a str: the escape filter, and Markup + str.
std::string html_escape(const std::string& s);

}  // namespace tessera::jinja
