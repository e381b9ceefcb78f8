#include "jinja/eval.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <locale.h>
#include <wctype.h>
#include <set>

#include <fmt/format.h>

#include "core/error.h"

namespace tessera::jinja {

namespace {

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

enum class Flow { Normal, Break, Continue };

const std::set<std::string>& filter_names() {
  static const std::set<std::string> names = {
      "abs",   "attr",    "capitalize", "count",  "d",       "default", "dictsort", "e",          "escape",
      "first", "float",   "indent",     "int",    "items",   "join",    "last",     "length",     "list",
      "lower", "map",     "max",        "min",    "reject",  "rejectattr", "replace", "reverse",  "round",
      "safe",  "select",  "selectattr", "sort",   "string",  "sum",     "title",    "tojson",     "trim",
      "unique", "upper",  "wordcount",  "center", "batch"};
  return names;
}

const std::set<std::string>& test_names() {
  static const std::set<std::string> names = {
      "defined", "undefined", "none",   "boolean", "false",  "true",   "integer",   "float", "number",
      "string",  "mapping",   "iterable", "sequence", "callable", "odd", "even", "divisibleby", "eq",
      "equalto", "==",        "ne",     "!=",      "lt",     "lessthan", "<",     "le",   "<=",
      "gt",      "greaterthan", ">",    "ge",      ">=",     "in",     "lower",   "upper", "sameas",
      "escaped", "filter",    "test"};
  return names;
}

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// Python str.strip family. chars == nullptr: whitespace.
std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  const std::vector<uint32_t> cps = utf8_code_points(s);
  std::vector<uint32_t> set;
  if (chars) set = utf8_code_points(*chars);
  const auto strip_it = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : py_isspace(cp);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) utf8_append(out, cps[i]);
  return out;
}

// Python's str.upper()/lower() with the C.UTF-8 locale's simple case mappings,
// which equal Python's for every code point except the multi-character
// (SpecialCasing) ones and the context-dependent final sigma: those return
// the offending code point so the caller reports them instead of guessing.
bool special_casing(uint32_t cp, bool upper) {
  static const uint32_t kSpecial[] = {
      0xdf,   0x130,  0x149,  0x1f0,  0x390,  0x3b0,  0x587,  0x1e96, 0x1e97, 0x1e98, 0x1e99, 0x1e9a, 0x1f50,
      0x1f52, 0x1f54, 0x1f56, 0x1fb2, 0x1fb3, 0x1fb4, 0x1fb6, 0x1fb7, 0x1fbc, 0x1fc2, 0x1fc3, 0x1fc4, 0x1fc6,
      0x1fc7, 0x1fcc, 0x1fd2, 0x1fd3, 0x1fd6, 0x1fd7, 0x1fe2, 0x1fe3, 0x1fe4, 0x1fe6, 0x1fe7, 0x1ff2, 0x1ff3,
      0x1ff4, 0x1ff6, 0x1ff7, 0x1ffc, 0xfb00, 0xfb01, 0xfb02, 0xfb03, 0xfb04, 0xfb05, 0xfb06, 0xfb13, 0xfb14,
      0xfb15, 0xfb16, 0xfb17};
  if (cp >= 0x1f80 && cp <= 0x1faf) return true;
  if (!upper && cp == 0x3a3) return true;  // final sigma
  for (uint32_t x : kSpecial)
    if (x == cp) return true;
  return false;
}

locale_t utf8_locale() {
  static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return loc;
}

// Returns the first code point it cannot map like Python (0 when none).
uint32_t py_case(const std::string& s, bool upper, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = utf8_decode_escaped(s, i);
    if (cp < 0x80) {
      out += static_cast<char>(upper ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp) : (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
      continue;
    }
    if (cp >= 0xdc80 && cp <= 0xdcff) {
      utf8_append(out, cp);
      continue;
    }
    const locale_t loc = utf8_locale();
    if (!loc || special_casing(cp, upper)) return cp;
    utf8_append(out, static_cast<uint32_t>(upper ? towupper_l(static_cast<wint_t>(cp), loc)
                                                 : towlower_l(static_cast<wint_t>(cp), loc)));
  }
  return 0;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

// markupsafe.escape of a str.
std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

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
  // when such a branch runs), else ours.
  [[noreturn]] void unknown_filter_or_test(const char* what, const std::string& name) const {
    static const std::set<std::string> jinja_filters = {
        "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
        "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
        "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr",
        "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags",
        "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount",
        "wordwrap", "xmlattr"};
    static const std::set<std::string> jinja_tests = {
        "!=", "<", "<=", "==", ">", ">=", "boolean", "callable", "defined", "divisibleby", "eq", "equalto",
        "escaped", "even", "false", "filter", "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le",
        "lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas", "sequence", "string", "test",
        "true", "undefined", "upper"};
    const bool jinja_knows = std::string_view(what) == "filter" ? jinja_filters.count(name) : jinja_tests.count(name);
    if (jinja_knows) error("unsupported Jinja feature: {} '{}'", what, name);
    error("No {} named '{}' found. (unsupported Jinja feature: {} '{}')", what, name, what, name);
  }

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

  // ------------------------------------------------------------ statements
  Flow exec(const Body& body, const ScopePtr& scope, std::string& out);
  void exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void assign(const Stmt& s, const ScopePtr& scope, Value v);
  void assign_names(const std::vector<std::string>& names, bool tuple, Scope& scope, const Value& v);

  // ------------------------------------------------------------ expressions
  Value eval(const Expr& e, const ScopePtr& scope);
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
  Value call(const Value& callee, List args, KwArgs kwargs);
  Value binary(const std::string& op, const Value& l, const Value& r);
  bool compare(const std::string& op, const Value& l, const Value& r);
  bool contains(const Value& container, const Value& item);
  int cmp(const Value& l, const Value& r);  // <0, 0, >0; error if unorderable
  List iterate(const Value& v);             // Python iter() as a list
  Value filter(const std::string& name, const Value& subject, List args, KwArgs kwargs);
  bool test(const std::string& name, const Value& subject, const List& args);
  Value method(const Value& self, const std::string& name, List args, KwArgs kwargs);
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
  std::string case_map(const std::string& s, bool upper) const {
    std::string out;
    if (const uint32_t bad = py_case(s, upper, out)) {
      std::string ch;
      utf8_append(ch, bad);
      error("unsupported Jinja feature: {}() of '{}' (U+{:04X}: Python's mapping is not one-to-one)",
            upper ? "upper" : "lower", ch, bad);
    }
    return out;
  }
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

namespace {

// ---------------------------------------------------------------- callables

class Builtin : public Callable {
 public:
  using Fn = Value (*)(Interpreter&, List&, KwArgs&);
  Builtin(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  Value call(Interpreter& in, List args, KwArgs kwargs) const override { return fn_(in, args, kwargs); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  Fn fn_;
};

class BoundMethod : public Callable {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  Value call(Interpreter& in, List args, KwArgs kwargs) const override {
    return in.method(self_, name_, std::move(args), std::move(kwargs));
  }
  std::string name() const override { return self_.type_name() + "." + name_; }

 private:
  Value self_;
  std::string name_;
};

class Macro : public Callable {
 public:
  Macro(const Stmt& def, std::weak_ptr<Scope> scope) : def_(def), scope_(std::move(scope)) {}
  std::string name() const override { return def_.name; }
  std::string repr() const override { return "<Macro '" + def_.name + "'>"; }
  Value call(Interpreter& in, List args, KwArgs kwargs) const override {
    ScopePtr parent = scope_.lock();
    if (!parent) in.error("macro '{}' called after its scope ended", def_.name);
    if (args.size() > def_.params.size())
      in.error("macro '{}' takes not more than {} argument(s)", def_.name, def_.params.size());
    if (in.call_depth() >= in.limits().max_call_depth)
      in.error("macro calls nested deeper than {}", in.limits().max_call_depth);
    in.tick();
    auto scope = std::make_shared<Scope>();
    scope->parent = parent;
    for (auto& [k, v] : kwargs) {
      bool found = false;
      for (size_t i = 0; i < def_.params.size(); ++i) {
        if (def_.params[i].first == k) {
          if (i < args.size()) in.error("macro '{}' got multiple values for argument '{}'", def_.name, k);
          found = true;
        }
      }
      if (!found) in.error("macro '{}' takes no keyword argument '{}'", def_.name, k);
    }
    for (size_t i = 0; i < def_.params.size(); ++i) {
      const auto& [pname, pdefault] = def_.params[i];
      if (i < args.size()) {
        scope->set(pname, std::move(args[i]));
        continue;
      }
      const Value* kw = nullptr;
      for (const auto& [k, v] : kwargs)
        if (k == pname) kw = &v;
      if (kw) scope->set(pname, *kw);
      else if (pdefault) scope->set(pname, in.eval(*pdefault, scope));
      else scope->set(pname, Value::undefined(fmt::format("parameter '{}' was not provided", pname)));
    }
    std::string out;
    ++in.call_depth();
    struct Restore {
      Interpreter& in;
      ~Restore() { --in.call_depth(); }
    } restore{in};
    in.exec(def_.bodies[0], scope, out);
    return Value::string(std::move(out));
  }

 private:
  const Stmt& def_;
  std::weak_ptr<Scope> scope_;
};

const Value* kwarg(const KwArgs& kw, const char* name) {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

// Positional-or-keyword argument `i` named `name`.
const Value* arg(const List& args, const KwArgs& kw, size_t i, const char* name) {
  if (i < args.size()) return &args[i];
  return kwarg(kw, name);
}

void check_args(Interpreter& in, const char* what, const List& args, const KwArgs& kw, size_t max_pos,
                std::initializer_list<const char*> names) {
  if (args.size() > max_pos) in.error("{} takes at most {} positional argument(s), got {}", what, max_pos, args.size());
  for (const auto& [k, v] : kw) {
    bool ok = false;
    for (const char* n : names) ok = ok || k == n;
    if (!ok) in.error("{} got an unexpected keyword argument '{}'", what, k);
  }
}

Value builtin_range(Interpreter& in, List& a, KwArgs& kw) {
  if (!kw.empty()) in.error("range() takes no keyword arguments");
  if (a.empty() || a.size() > 3) in.error("range expected 1 to 3 arguments, got {}", a.size());
  for (const auto& v : a)
    if (!(v.is_int() || v.is_bool())) in.error("range() argument must be an integer, not '{}'", v.type_name());
  int64_t start = 0, stop, step = 1;
  if (a.size() == 1) {
    stop = a[0].as_int();
  } else {
    start = a[0].as_int();
    stop = a[1].as_int();
    if (a.size() == 3) step = a[2].as_int();
  }
  if (step == 0) in.error("range() arg 3 must not be zero");
  // Length without overflow.
  long double n = step > 0 ? std::ceil(((long double)stop - start) / step) : std::ceil(((long double)start - stop) / -step);
  if (n < 0) n = 0;
  if (n > static_cast<long double>(in.limits().max_range))
    in.error("range too big: {} items, the maximum is {}", static_cast<double>(n), in.limits().max_range);
  List out;
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) out.push_back(Value::integer(start + i * step));
  return Value::list(std::move(out));
}

Dict dict_from_args(Interpreter& in, const char* what, List& a, KwArgs& kw) {
  Dict d;
  if (a.size() > 1) in.error("{} expected at most 1 positional argument, got {}", what, a.size());
  if (a.size() == 1) {
    if (a[0].is_undefined()) in.undefined_error(a[0]);  // dict() looks up .keys on it
    if (a[0].is_dict()) {
      d = a[0].as_dict();
    } else {
      for (const auto& item : in.iterate(a[0])) {
        if (!item.is_list() || item.as_list().size() != 2) in.error("{}: sequence elements must be pairs", what);
        d.set(item.as_list()[0], item.as_list()[1]);
      }
    }
  }
  for (auto& [k, v] : kw) d.set(Value::string(k), v);
  return d;
}

Value builtin_namespace(Interpreter& in, List& a, KwArgs& kw) {
  Dict d = dict_from_args(in, "namespace()", a, kw);
  for (const auto& [k, v] : d.items())
    if (k.is_string() && starts_with(k.as_string(), "_"))
      in.error("chat templates cannot store underscore-prefixed attributes on a namespace, but got {}", py_repr(k));
  return Value::namespace_(std::move(d));
}

Value builtin_dict(Interpreter& in, List& a, KwArgs& kw) { return Value::dict(dict_from_args(in, "dict()", a, kw)); }

Value builtin_raise_exception(Interpreter& in, List& a, KwArgs& kw) {
  const Value* msg = arg(a, kw, 0, "message");
  in.raise(msg ? py_str(*msg) : std::string("raise_exception() called"));
}

Value builtin_strftime_now(Interpreter& in, List& a, KwArgs& kw) {
  const Value* f = arg(a, kw, 0, "format");
  if (!f || !f->is_string()) in.error("strftime_now() needs a format string");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::string buf(256 + f->as_string().size() * 8, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), f->as_string().c_str(), &tm);
  buf.resize(n);
  return Value::string(std::move(buf));
}

class LoopCycle : public Callable {
 public:
  explicit LoopCycle(std::shared_ptr<const int64_t> index0) : index0_(std::move(index0)) {}
  Value call(Interpreter& in, List args, KwArgs kwargs) const override {
    if (args.empty()) in.error("loop.cycle() needs at least one argument");
    return args[static_cast<size_t>(*index0_) % args.size()];
  }
  std::string name() const override { return "loop.cycle"; }

 private:
  std::shared_ptr<const int64_t> index0_;
};

// Python-style index normalization for slices.
void slice_indices(int64_t len, const Value& start, const Value& stop, int64_t step, int64_t& b, int64_t& e) {
  const auto norm = [&](const Value& v, int64_t dflt, bool is_start) -> int64_t {
    if (v.is_undefined() || v.is_none()) return dflt;
    int64_t x = v.as_int();
    if (x < 0) {
      x += len;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= len) {
      x = step < 0 ? len - 1 : len;
    }
    (void)is_start;
    return x;
  };
  if (step > 0) {
    b = norm(start, 0, true);
    e = norm(stop, len, false);
  } else {
    b = norm(start, len - 1, true);
    e = norm(stop, -1, false);
    if (!(stop.is_undefined() || stop.is_none()) && stop.as_int() < 0 && stop.as_int() + len < 0) e = -1;
  }
}

// Python's str.splitlines() boundaries.
bool is_line_break(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c || cp == 0x1d || cp == 0x1e ||
         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

std::vector<std::string> py_splitlines(const std::string& s) {
  std::vector<std::string> lines;
  std::string cur;
  const std::vector<uint32_t> cps = utf8_code_points(s);
  for (size_t i = 0; i < cps.size(); ++i) {
    if (is_line_break(cps[i])) {
      if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
      lines.push_back(std::move(cur));
      cur.clear();
    } else {
      utf8_append(cur, cps[i]);
    }
  }
  if (!cur.empty()) lines.push_back(std::move(cur));
  return lines;
}

}  // namespace

// ---------------------------------------------------------------- statements

std::string Interpreter::run(const Dict& context) {
  root_ = std::make_shared<Scope>();
  const auto add = [&](const char* name, Builtin::Fn fn) {
    root_->set(name, Value::callable(std::make_shared<Builtin>(name, fn)));
  };
  add("range", builtin_range);
  add("namespace", builtin_namespace);
  add("dict", builtin_dict);
  add("raise_exception", builtin_raise_exception);
  add("strftime_now", builtin_strftime_now);
  for (const auto& [k, v] : context.items()) {
    if (!k.is_string()) continue;
    root_->set(k.as_string(), v);
  }
  std::string out;
  exec(tpl_.body, root_, out);
  return out;
}

Flow Interpreter::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& sp : body) {
    const Stmt& s = *sp;
    at(s.line, s.col);
    switch (s.kind) {
      case Stmt::Kind::Text:
        check_size(out.size() + s.text.size());
        out += s.text;
        break;
      case Stmt::Kind::Print: {
        const Value v = eval(*s.expr, scope);
        const std::string text = to_str(v);
        check_size(out.size() + text.size());
        out += text;
        break;
      }
      case Stmt::Kind::If: {
        size_t i = 0;
        for (; i < s.conds.size(); ++i)
          if (eval(*s.conds[i], scope).truthy()) break;
        if (i < s.bodies.size()) {
          const Flow f = exec(s.bodies[i], scope, out);
          if (f != Flow::Normal) return f;
        }
        break;
      }
      case Stmt::Kind::For:
        exec_for(s, scope, out);
        break;
      case Stmt::Kind::Set:
        assign(s, scope, eval(*s.expr, scope));
        break;
      case Stmt::Kind::SetBlock:
      case Stmt::Kind::FilterBlock: {
        std::string captured;
        exec(s.bodies[0], scope, captured);
        Value v = Value::string(std::move(captured));
        for (const auto& f : s.filters) {
          at(f->line, f->col);
          List args;
          for (size_t i = 1; i < f->args.size(); ++i) args.push_back(eval(*f->args[i], scope));
          KwArgs kw;
          for (const auto& [k, e] : f->kwargs) kw.emplace_back(k, eval(*e, scope));
          v = filter(f->name, v, std::move(args), std::move(kw));
        }
        if (s.kind == Stmt::Kind::FilterBlock) {
          const std::string text = to_str(v);
          check_size(out.size() + text.size());
          out += text;
          break;
        }
        scope->set(s.targets[0], std::move(v));
        break;
      }
      case Stmt::Kind::Macro:
        scope->set(s.name, Value::callable(std::make_shared<Macro>(s, std::weak_ptr<Scope>(scope))));
        break;
      case Stmt::Kind::Break:
        return Flow::Break;
      case Stmt::Kind::Continue:
        return Flow::Continue;
      case Stmt::Kind::Scope: {
        const Flow f = exec(s.bodies[0], scope, out);
        if (f != Flow::Normal) return f;
        break;
      }
    }
  }
  return Flow::Normal;
}

void Interpreter::assign(const Stmt& s, const ScopePtr& scope, Value v) {
  if (!s.attr.empty()) {
    const Value* ns = scope->lookup(s.targets[0]);
    if (!ns || !ns->is_namespace()) error("cannot assign attribute '{}' on '{}': not a namespace", s.attr, s.targets[0]);
    if (starts_with(s.attr, "_"))
      error("chat templates cannot store underscore-prefixed attributes on a namespace, but got '{}'", s.attr);
    ns->namespace_attrs().set(Value::string(s.attr), std::move(v));
    return;
  }
  assign_names(s.targets, s.tuple_target, *scope, v);
}

void Interpreter::assign_names(const std::vector<std::string>& names, bool tuple, Scope& scope, const Value& v) {
  if (names.size() == 1 && !tuple) {
    scope.set(names[0], v);
    return;
  }
  const List items = iterate(v);
  if (items.size() != names.size()) error("cannot unpack {} values into {} names", items.size(), names.size());
  for (size_t i = 0; i < items.size(); ++i) scope.set(names[i], items[i]);
}

void Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  const Value iterable = eval(*s.expr, scope);
  if (!(iterable.is_undefined() || iterable.is_list() || iterable.is_dict() || iterable.is_string()))
    error("'{}' object is not iterable", iterable.type_name());
  List items = iterate(iterable);
  if (s.cond) {
    List kept;
    for (auto& item : items) {
      tick();
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      assign_names(s.targets, s.tuple_target, *probe, item);
      if (eval(*s.cond, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  // One loop.cycle per loop, reading the current iteration.
  auto cycle_index = std::make_shared<int64_t>(0);
  const Value cycle = Value::callable(std::make_shared<LoopCycle>(cycle_index));
  for (int64_t i = 0; i < n; ++i) {
    tick();
    at(s.line, s.col);
    auto iter = std::make_shared<Scope>();
    iter->parent = scope;
    static const Value kIndex0 = Value::string("index0"), kIndex = Value::string("index"),
                       kRevindex0 = Value::string("revindex0"), kRevindex = Value::string("revindex"),
                       kFirst = Value::string("first"), kLast = Value::string("last"),
                       kLength = Value::string("length"), kDepth = Value::string("depth"),
                       kDepth0 = Value::string("depth0"), kPrevitem = Value::string("previtem"),
                       kNextitem = Value::string("nextitem"), kCycle = Value::string("cycle");
    Dict loop;
    loop.reserve(12);
    loop.append(kIndex0, Value::integer(i));
    loop.append(kIndex, Value::integer(i + 1));
    loop.append(kRevindex0, Value::integer(n - i - 1));
    loop.append(kRevindex, Value::integer(n - i));
    loop.append(kFirst, Value::boolean(i == 0));
    loop.append(kLast, Value::boolean(i == n - 1));
    loop.append(kLength, Value::integer(n));
    loop.append(kDepth, Value::integer(1));
    loop.append(kDepth0, Value::integer(0));
    if (i > 0) loop.append(kPrevitem, items[static_cast<size_t>(i - 1)]);
    if (i + 1 < n) loop.append(kNextitem, items[static_cast<size_t>(i + 1)]);
    *cycle_index = i;
    loop.append(kCycle, cycle);
    iter->set("loop", Value::dict(std::move(loop)));
    assign_names(s.targets, s.tuple_target, *iter, items[static_cast<size_t>(i)]);
    const Flow f = exec(s.bodies[0], iter, out);
    if (f == Flow::Break) break;
  }
  if (n == 0 && s.bodies.size() > 1) exec(s.bodies[1], scope, out);
}

// ---------------------------------------------------------------- expressions

List Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.as_list();
    case Value::Kind::Dict: {
      List keys;
      for (const auto& [k, e] : v.as_dict().items()) keys.push_back(k);
      return keys;
    }
    case Value::Kind::String: {
      List chars;
      const std::string& s = v.as_string();
      for (size_t i = 0; i < s.size();) {
        std::string c;
        utf8_append(c, utf8_decode_escaped(s, i));
        chars.push_back(Value::string(std::move(c)));
      }
      return chars;
    }
    default: error("'{}' object is not iterable", v.type_name());
  }
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case Expr::Kind::Literal: return e.literal;
    case Expr::Kind::Name: {
      const Value* v = scope->lookup(e.name);
      if (!v) return Value::undefined(fmt::format("'{}' is undefined", e.name));
      return *v;
    }
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      List items;
      for (const auto& a : e.args) items.push_back(eval(*a, scope));
      return Value::list(std::move(items), e.kind == Expr::Kind::Tuple);
    }
    case Expr::Kind::Dict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i], scope);
        at(e.line, e.col);
        if (!(k.is_string() || k.is_number() || k.is_none() || k.is_tuple()))
          error("unhashable type: '{}'", k.type_name());
        d.set(std::move(k), eval(*e.args[i + 1], scope));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::Attr: {
      const Value obj = eval(*e.args[0], scope);
      at(e.line, e.col);
      return get_attr(obj, e.name);
    }
    case Expr::Kind::Item: {
      const Value obj = eval(*e.args[0], scope);
      const Value key = eval(*e.args[1], scope);
      at(e.line, e.col);
      return get_item(obj, key);
    }
    case Expr::Kind::Slice: {
      const Value obj = eval(*e.args[0], scope);
      Value parts[3] = {Value::none(), Value::none(), Value::none()};
      for (int i = 0; i < 3; ++i)
        if (e.args[1 + i]) parts[i] = eval(*e.args[1 + i], scope);
      at(e.line, e.col);
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::Call: {
      const Value callee = eval(*e.args[0], scope);
      List args;
      for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i], scope));
      KwArgs kw;
      for (const auto& [k, a] : e.kwargs) kw.emplace_back(k, eval(*a, scope));
      at(e.line, e.col);
      return call(callee, std::move(args), std::move(kw));
    }
    case Expr::Kind::Filter: {
      const Value subject = eval(*e.args[0], scope);
      List args;
      for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i], scope));
      KwArgs kw;
      for (const auto& [k, a] : e.kwargs) kw.emplace_back(k, eval(*a, scope));
      at(e.line, e.col);
      return filter(e.name, subject, std::move(args), std::move(kw));
    }
    case Expr::Kind::Test: {
      const Value subject = eval(*e.args[0], scope);
      List args;
      for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i], scope));
      at(e.line, e.col);
      if (!e.kwargs.empty()) error("test '{}' takes no keyword arguments", e.name);
      const bool r = test(e.name, subject, args);
      return Value::boolean(e.negated ? !r : r);
    }
    case Expr::Kind::Neg:
    case Expr::Kind::Pos: {
      const Value v = eval(*e.args[0], scope);
      at(e.line, e.col);
      if (v.is_undefined()) undefined_error(v);
      if (!v.is_number()) error("bad operand type for unary {}: '{}'", e.kind == Expr::Kind::Neg ? '-' : '+', v.type_name());
      if (e.kind == Expr::Kind::Pos) return v.is_bool() ? Value::integer(v.as_int()) : v;
      if (v.is_float()) return Value::floating(-v.as_double());
      if (v.as_int() == INT64_MIN) error("integer overflow");
      return Value::integer(-v.as_int());
    }
    case Expr::Kind::Not: return Value::boolean(!eval(*e.args[0], scope).truthy());
    case Expr::Kind::And: {
      Value l = eval(*e.args[0], scope);
      if (!l.truthy()) return l;
      return eval(*e.args[1], scope);
    }
    case Expr::Kind::Or: {
      Value l = eval(*e.args[0], scope);
      if (l.truthy()) return l;
      return eval(*e.args[1], scope);
    }
    case Expr::Kind::Binary: {
      const Value l = eval(*e.args[0], scope);
      const Value r = eval(*e.args[1], scope);
      at(e.line, e.col);
      return binary(e.name, l, r);
    }
    case Expr::Kind::Concat: {
      std::string s;
      for (const auto& a : e.args) {
        const Value v = eval(*a, scope);
        at(e.line, e.col);
        s += to_str(v);
        check_size(s.size());
      }
      return Value::string(std::move(s));
    }
    case Expr::Kind::Compare: {
      Value l = eval(*e.args[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value r = eval(*e.args[i + 1], scope);
        at(e.line, e.col);
        if (!compare(e.ops[i], l, r)) return Value::boolean(false);
        l = std::move(r);
      }
      return Value::boolean(true);
    }
    case Expr::Kind::Cond: {
      if (eval(*e.args[1], scope).truthy()) return eval(*e.args[0], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  error("internal error: unknown expression");
}

static bool dict_method_name(const std::string& n) {
  return n == "get" || n == "items" || n == "keys" || n == "values";
}

static bool str_method_name(const std::string& n) {
  static const std::set<std::string> names = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "title",
      "capitalize", "replace", "find", "rfind", "count", "join", "splitlines", "isdigit", "isspace", "isalpha",
      "isalnum", "islower", "isupper", "removeprefix", "removesuffix", "index", "rindex", "zfill", "center",
      "ljust", "rjust", "format", "swapcase", "casefold", "partition", "rpartition", "isnumeric", "isdecimal",
      "istitle", "encode", "expandtabs", "ljust", "translate", "maketrans", "isidentifier", "isprintable", "isascii"};
  return names.count(n) != 0;
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: undefined_error(obj);
    case Value::Kind::Dict: {
      if (dict_method_name(name)) return Value::callable(std::make_shared<BoundMethod>(obj, name));
      if (const Value* v = obj.as_dict().find(name)) return *v;
      if (name == "clear" || name == "pop" || name == "popitem" || name == "setdefault" || name == "update")
        return Value::undefined(fmt::format("access to attribute '{}' of 'dict' object is unsafe.", name));
      return Value::undefined(fmt::format("'dict object' has no attribute '{}'", name));
    }
    case Value::Kind::List:
      // ImmutableSandboxedEnvironment: a list's mutators exist but are unsafe.
      if (!obj.is_tuple() && !obj.is_generator() && !obj.dict_view_kind() &&
          (name == "append" || name == "clear" || name == "extend" || name == "insert" || name == "pop" ||
           name == "remove" || name == "reverse" || name == "sort"))
        return Value::undefined(fmt::format("access to attribute '{}' of 'list' object is unsafe.", name));
      break;
    case Value::Kind::Namespace: {
      if (const Value* v = obj.as_dict().find(name)) return *v;
      return Value::undefined(fmt::format("'Namespace object' has no attribute '{}'", name));
    }
    case Value::Kind::String:
      if (str_method_name(name)) return Value::callable(std::make_shared<BoundMethod>(obj, name));
      break;
    default: break;
  }
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", obj.type_name(), name));
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: undefined_error(obj);
    case Value::Kind::Dict:
    case Value::Kind::Namespace: {
      if (obj.is_dict()) {
        if (const Value* v = obj.as_dict().find(key)) return *v;
      }
      if (key.is_string()) return get_attr(obj, key.as_string());
      return Value::undefined(fmt::format("'{} object' has no attribute {}", obj.type_name(), py_repr(key)));
    }
    case Value::Kind::List:
    case Value::Kind::String: {
      if (obj.is_generator() || obj.dict_view_kind()) break;
      if (key.is_int() || key.is_bool()) {
        int64_t i = key.as_int();
        if (obj.is_list()) {
          const int64_t n = static_cast<int64_t>(obj.as_list().size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return obj.as_list()[static_cast<size_t>(i)];
        } else {
          const std::vector<uint32_t> cps = utf8_code_points(obj.as_string());
          const int64_t n = static_cast<int64_t>(cps.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) {
            std::string c;
            utf8_append(c, cps[static_cast<size_t>(i)]);
            return Value::string(std::move(c));
          }
        }
        return Value::undefined(fmt::format("{} object has no element {}", obj.type_name(), key.as_int()));
      }
      if (key.is_string()) return get_attr(obj, key.as_string());
      break;
    }
    default: break;
  }
  return Value::undefined(fmt::format("'{} object' has no attribute {}", obj.type_name(), py_repr(key)));
}

Value Interpreter::slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  if (obj.is_undefined()) undefined_error(obj);
  // Jinja compiles slices to plain Python subscripts (no getitem fallback).
  if (!(obj.is_list() || obj.is_string()) || obj.is_generator() || obj.dict_view_kind())
    error("'{}' object is not subscriptable", obj.type_name());
  for (const Value* p : {&start, &stop, &step_v})
    if (!(p->is_none() || p->is_int() || p->is_bool()))
      error("slice indices must be integers or None, not '{}'", p->type_name());
  const int64_t step = step_v.is_none() ? 1 : step_v.as_int();
  if (step == 0) error("slice step cannot be zero");
  const auto pick = [&](int64_t len, auto&& take) {
    int64_t b, e;
    slice_indices(len, start, stop, step, b, e);
    if (step > 0)
      for (int64_t i = b; i < e; i += step) take(i);
    else
      for (int64_t i = b; i > e; i += step) take(i);
  };
  if (obj.is_list()) {
    const List& items = obj.as_list();
    List out;
    pick(static_cast<int64_t>(items.size()), [&](int64_t i) { out.push_back(items[static_cast<size_t>(i)]); });
    return Value::list(std::move(out), obj.is_tuple());
  }
  if (obj.is_string()) {
    const std::vector<uint32_t> cps = utf8_code_points(obj.as_string());
    std::string out;
    pick(static_cast<int64_t>(cps.size()), [&](int64_t i) { utf8_append(out, cps[static_cast<size_t>(i)]); });
    return Value::string(std::move(out));
  }
  return Value::undefined(fmt::format("'{}' object is not subscriptable", obj.type_name()));
}

Value Interpreter::call(const Value& callee, List args, KwArgs kwargs) {
  if (callee.is_undefined()) undefined_error(callee);
  if (!callee.is_callable()) error("'{}' object is not callable", callee.type_name());
  const int line = line_, col = col_;
  Value r = callee.as_callable().call(*this, std::move(args), std::move(kwargs));
  at(line, col);
  return r;
}

static bool add_overflow(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
static bool sub_overflow(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
static bool mul_overflow(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

Value Interpreter::binary(const std::string& op, const Value& l, const Value& r) {
  if (l.is_undefined()) undefined_error(l);
  if (r.is_undefined()) undefined_error(r);
  const auto unsupported = [&]() -> Value {
    error("unsupported operand type(s) for {}: '{}' and '{}'", op, l.type_name(), r.type_name());
  };
  if (l.is_number() && r.is_number()) {
    const bool fl = l.is_float() || r.is_float();
    if (op == "+" || op == "-" || op == "*") {
      if (fl) {
        const double a = l.as_double(), b = r.as_double();
        return Value::floating(op == "+" ? a + b : op == "-" ? a - b : a * b);
      }
      int64_t out;
      const bool ovf = op == "+" ? add_overflow(l.as_int(), r.as_int(), &out)
                       : op == "-" ? sub_overflow(l.as_int(), r.as_int(), &out)
                                   : mul_overflow(l.as_int(), r.as_int(), &out);
      if (ovf) error("integer overflow in {}", op);
      return Value::integer(out);
    }
    if (op == "/") {
      if (r.as_double() == 0) error("division by zero");
      return Value::floating(l.as_double() / r.as_double());
    }
    if (op == "//" || op == "%") {
      if (r.as_double() == 0) error("{}", op == "//" ? "integer division or modulo by zero" : "modulo by zero");
      if (fl) {
        // CPython's float_divmod.
        const double a = l.as_double(), b = r.as_double();
        double mod = std::fmod(a, b);
        double div = (a - mod) / b;
        if (mod != 0) {
          if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
          }
        } else {
          mod = std::copysign(0.0, b);
        }
        double floordiv;
        if (div != 0) {
          floordiv = std::floor(div);
          if (div - floordiv > 0.5) floordiv += 1.0;
        } else {
          floordiv = std::copysign(0.0, a / b);
        }
        return Value::floating(op == "%" ? mod : floordiv);
      }
      const int64_t a = l.as_int(), b = r.as_int();
      if (a == INT64_MIN && b == -1) error("integer overflow in {}", op);
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (!fl && r.as_int() >= 0) {
        int64_t result = 1, base = l.as_int();
        for (int64_t e = r.as_int(); e > 0; --e) {
          if (mul_overflow(result, base, &result)) error("integer overflow in **");
          if (result == 0 || result == 1) break;
        }
        return Value::integer(result);
      }
      return Value::floating(std::pow(l.as_double(), r.as_double()));
    }
    return unsupported();
  }
  if (op == "+") {
    if (l.is_string() && r.is_string()) {
      check_size(l.as_string().size() + r.as_string().size());
      if (l.is_markup() || r.is_markup()) {  // Markup.__add__ / __radd__ escape the plain str
        const std::string ls = l.is_markup() ? l.as_string() : html_escape(l.as_string());
        const std::string rs = r.is_markup() ? r.as_string() : html_escape(r.as_string());
        check_size(ls.size() + rs.size());
        return Value::markup(ls + rs);
      }
      return Value::string(l.as_string() + r.as_string());
    }
    if (l.is_list() && r.is_list() && l.is_tuple() == r.is_tuple()) {
      check_items(l.as_list().size() + r.as_list().size());
      List out = l.as_list();
      out.insert(out.end(), r.as_list().begin(), r.as_list().end());
      return Value::list(std::move(out), l.is_tuple());
    }
    if (l.is_string()) error("can only concatenate str (not \"{}\") to str", r.type_name());
    return unsupported();
  }
  if (op == "*") {
    const Value* seq = (l.is_string() || l.is_list()) ? &l : (r.is_string() || r.is_list()) ? &r : nullptr;
    const Value* n = seq == &l ? &r : &l;
    if (seq && (n->is_int() || n->is_bool())) {
      const int64_t times = std::max<int64_t>(0, n->as_int());
      if (seq->is_string()) {
        if (times > 0 && seq->as_string().size() > lim_.max_output_bytes / static_cast<uint64_t>(times))
          check_size(lim_.max_output_bytes + 1);
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += seq->as_string();
        return Value::string(std::move(out));
      }
      if (times > 0 && seq->as_list().size() > lim_.max_list_items / static_cast<uint64_t>(times))
        check_items(lim_.max_list_items + 1);
      List out;
      for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq->as_list().begin(), seq->as_list().end());
      return Value::list(std::move(out), seq->is_tuple());
    }
  }
  if (op == "%" && l.is_string()) error("unsupported Jinja feature: printf-style string formatting ('%' on a string)");
  return unsupported();
}

int Interpreter::cmp(const Value& l, const Value& r) {
  if (l.is_undefined()) undefined_error(l);
  if (r.is_undefined()) undefined_error(r);
  if (l.is_number() && r.is_number()) {
    if (l.is_float() || r.is_float()) {
      const double a = l.as_double(), b = r.as_double();
      return a < b ? -1 : a > b ? 1 : 0;
    }
    return l.as_int() < r.as_int() ? -1 : l.as_int() > r.as_int() ? 1 : 0;
  }
  if (l.is_string() && r.is_string()) {
    const int c = l.as_string().compare(r.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (l.is_list() && r.is_list() && l.is_tuple() == r.is_tuple()) {
    const List &a = l.as_list(), &b = r.as_list();
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i].equals(b[i])) continue;
      return cmp(a[i], b[i]);
    }
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  error("'<' not supported between instances of '{}' and '{}'", l.type_name(), r.type_name());
}

bool Interpreter::contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (item.is_undefined()) undefined_error(item);
      if (!item.is_string()) error("'in <string>' requires string as left operand, not {}", item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const auto& v : container.as_list())
        if (v.equals(item)) return true;
      return false;
    case Value::Kind::Dict: return container.as_dict().find(item) != nullptr;
    case Value::Kind::Undefined: return false;
    default: error("argument of type '{}' is not iterable", container.type_name());
  }
}

bool Interpreter::compare(const std::string& op, const Value& l, const Value& r) {
  if (op == "==") return l.equals(r);
  if (op == "!=") return !l.equals(r);
  if (op == "in") return contains(r, l);
  if (op == "notin") return !contains(r, l);
  const int c = cmp(l, r);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

// ---------------------------------------------------------------- tests

bool Interpreter::test(const std::string& name, const Value& v, const List& args) {
  const auto need = [&](size_t n) {
    if (args.size() != n) error("test '{}' takes {} argument(s), got {}", name, n, args.size());
  };
  static const std::set<std::string> kNoArgs = {"defined", "undefined", "none", "boolean", "false", "true",
                                                 "integer", "float", "number", "string", "mapping", "iterable",
                                                 "sequence", "callable", "escaped", "odd", "even", "lower",
                                                 "upper", "filter", "test"};
  if (kNoArgs.count(name)) need(0);
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
  if (name == "sequence") return v.is_undefined() || v.is_string() || (v.is_list() && !v.is_generator()) || v.is_dict();
  if (name == "callable") return v.is_callable() || v.is_undefined();  // Undefined has __call__
  if (name == "escaped") return false;
  if (name == "odd" || name == "even") {
    if (!(v.is_int() || v.is_bool())) error("test '{}' needs an integer, got '{}'", name, v.type_name());
    const bool odd = (v.as_int() % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "divisibleby") {
    need(1);
    const Value m = binary("%", v, args[0]);
    return m.as_double() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return need(1), compare("==", v, args[0]);
  if (name == "ne" || name == "!=") return need(1), compare("!=", v, args[0]);
  if (name == "lt" || name == "lessthan" || name == "<") return need(1), compare("<", v, args[0]);
  if (name == "le" || name == "<=") return need(1), compare("<=", v, args[0]);
  if (name == "gt" || name == "greaterthan" || name == ">") return need(1), compare(">", v, args[0]);
  if (name == "ge" || name == ">=") return need(1), compare(">=", v, args[0]);
  if (name == "in") return need(1), contains(args[0], v);
  if (name == "sameas") {
    need(1);
    // Python `is`: identity holds for None, booleans and small ints in practice.
    if (v.is_none() || v.is_bool()) return v.kind() == args[0].kind() && v.equals(args[0]);
    return v.kind() == args[0].kind() && v.equals(args[0]) && (v.is_int() || v.is_undefined());
  }
  if (name == "lower" || name == "upper") {
    const std::string s = py_str(v);
    bool cased = false;
    for (char c : s) {
      if (name == "lower" && c >= 'A' && c <= 'Z') return false;
      if (name == "upper" && c >= 'a' && c <= 'z') return false;
      cased = cased || std::isalpha(static_cast<unsigned char>(c));
    }
    return cased;
  }
  if (name == "filter") return need(0), v.is_string() && is_known_filter(v.as_string());
  if (name == "test") return need(0), v.is_string() && is_known_test(v.as_string());
  unknown_filter_or_test("test", name);
}

// ---------------------------------------------------------------- filters

namespace {

// Jinja's make_attrgetter: "a.b.0" walks attributes / items.
Value attr_path(Interpreter& in, const Value& v, const Value& attribute) {
  if (!attribute.is_string()) return in.get_item(v, attribute);
  Value cur = v;
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = numeric ? in.get_item(cur, Value::integer(std::stoll(part))) : in.get_item(cur, Value::string(part));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

// Key for case-insensitive sorting (Jinja's ignore_case).
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(ascii_lower(v.as_string()));
  return v;
}

}  // namespace

Value Interpreter::filter(const std::string& name, const Value& v, List a, KwArgs kw) {
  const auto F = [&](size_t max_pos, std::initializer_list<const char*> names) {
    check_args(*this, fmt::format("filter '{}'", name).c_str(), a, kw, max_pos, names);
  };
  const auto opt_bool = [&](size_t i, const char* n, bool dflt) {
    const Value* x = arg(a, kw, i, n);
    return x ? x->truthy() : dflt;
  };
  if (name == "safe" || name == "string" || name == "e" || name == "escape") {
    F(0, {});
    if (name == "e" || name == "escape") {
      if (v.is_markup()) return v;
      return Value::markup(html_escape(py_str(v)));
    }
    if (name == "safe") return Value::markup(py_str(v));
    if (v.is_markup()) return v;  // soft_str keeps Markup
    return make_string(py_str(v));
  }
  if (name == "trim") {
    F(1, {"chars"});
    const Value* chars = arg(a, kw, 0, "chars");
    const std::string cs = chars && !chars->is_none() ? py_str(*chars) : std::string();
    return Value::string(py_strip(py_str(v), chars && !chars->is_none() ? &cs : nullptr, true, true));
  }
  if (name == "upper") return F(0, {}), Value::string(case_map(py_str(v), true));
  if (name == "lower") return F(0, {}), Value::string(case_map(py_str(v), false));
  if (name == "capitalize") return F(0, {}), method(Value::string(py_str(v)), name, {}, {});
  if (name == "title") {
    // Jinja's do_title: words start after runs of [-\s({[<]; each word gets
    // item[0].upper() + item[1:].lower().
    F(0, {});
    const std::string text = py_str(v);
    std::string out, word;
    const auto flush = [&] {
      if (word.empty()) return;
      size_t i = 0;
      const uint32_t first = utf8_decode_escaped(word, i);
      std::string head;
      utf8_append(head, first);
      out += case_map(head, true) + case_map(word.substr(i), false);
      word.clear();
    };
    for (size_t i = 0; i < text.size();) {
      const uint32_t cp = utf8_decode_escaped(text, i);
      if (cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || py_isspace(cp)) {
        flush();
        utf8_append(out, cp);
      } else {
        utf8_append(word, cp);
      }
    }
    flush();
    return Value::string(std::move(out));
  }
  if (name == "length" || name == "count") {
    F(0, {});
    switch (v.kind()) {
      case Value::Kind::Undefined: return Value::integer(0);
      case Value::Kind::String: return Value::integer(static_cast<int64_t>(utf8_length(v.as_string())));
      case Value::Kind::List:
        if (v.is_generator()) error("object of type 'generator' has no len()");
        return Value::integer(static_cast<int64_t>(v.as_list().size()));
      case Value::Kind::Dict:
      case Value::Kind::Namespace: return Value::integer(static_cast<int64_t>(v.as_dict().size()));
      default: error("object of type '{}' has no len()", v.type_name());
    }
  }
  if (name == "default" || name == "d") {
    F(2, {"default_value", "boolean"});
    const Value* dflt = arg(a, kw, 0, "default_value");
    const bool boolean = opt_bool(1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return dflt ? *dflt : Value::string("");
    return v;
  }
  if (name == "tojson") {
    F(4, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonDumpOptions opt;
    opt.ensure_ascii = opt_bool(0, "ensure_ascii", false);
    const Value* indent = arg(a, kw, 1, "indent");
    if (indent && !indent->is_none()) {
      if (indent->is_string()) opt.indent = indent->as_string();
      else if (indent->is_int()) opt.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 1024)), ' ');
      else error("tojson: indent must be an int or a string, not '{}'", indent->type_name());
      opt.item_separator = ",";
    }
    const Value* seps = arg(a, kw, 2, "separators");
    if (seps && !seps->is_none()) {
      if (!seps->is_list() || seps->as_list().size() != 2 || !seps->as_list()[0].is_string() ||
          !seps->as_list()[1].is_string())
        error("tojson: separators must be a pair of strings");
      opt.item_separator = seps->as_list()[0].as_string();
      opt.key_separator = seps->as_list()[1].as_string();
    }
    opt.sort_keys = opt_bool(3, "sort_keys", false);
    std::string bad;
    auto s = py_json_dumps(v, opt, &bad);
    if (!s) error("tojson: Object of type {} is not JSON serializable", bad);
    return make_string(std::move(*s));
  }
  if (name == "items") {
    F(0, {});
    if (v.is_undefined()) return Value::generator({});
    if (!v.is_dict()) error("can only get item pairs from a mapping, not '{}'", v.type_name());
    List out;
    for (const auto& [k, e] : v.as_dict().items()) out.push_back(Value::list({k, e}, true));
    return Value::generator(std::move(out));
  }
  if (name == "list") return F(0, {}), Value::list(iterate(v));
  if (name == "first" || name == "last") {
    F(0, {});
    if (name == "last" && v.is_generator()) error("'generator' object is not reversible");
    List items = iterate(v);
    if (items.empty()) return Value::undefined(fmt::format("No {} item, sequence was empty.", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    F(0, {});
    if (v.is_string()) return slice(v, Value::none(), Value::none(), Value::integer(-1));
    if (v.is_generator()) error("'generator' object is not reversible");
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::generator(std::move(items));  // reversed(...) is an iterator
  }
  if (name == "join") {
    F(2, {"d", "attribute"});
    const Value* sep = arg(a, kw, 0, "d");
    const Value* attribute = arg(a, kw, 1, "attribute");
    const std::string d = sep ? py_str(*sep) : std::string();
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      if (!first) out += d;
      first = false;
      out += py_str(attribute && !attribute->is_none() ? attr_path(*this, item, *attribute) : item);
      check_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "replace") {
    F(3, {"old", "new", "count"});
    const Value* old_v = arg(a, kw, 0, "old");
    const Value* new_v = arg(a, kw, 1, "new");
    if (!old_v || !new_v) error("filter 'replace' needs 'old' and 'new'");
    const Value* count = arg(a, kw, 2, "count");
    return method(Value::string(py_str(v)), "replace",
                  count && !count->is_none() ? List{Value::string(py_str(*old_v)), Value::string(py_str(*new_v)), *count}
                                             : List{Value::string(py_str(*old_v)), Value::string(py_str(*new_v))},
                  {});
  }
  if (name == "int") {
    F(2, {"default", "base"});
    const Value* dflt = arg(a, kw, 0, "default");
    const Value fallback = dflt ? *dflt : Value::integer(0);
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    if (v.is_float()) {
      if (!std::isfinite(v.as_double()) || std::fabs(v.as_double()) >= 9.2e18) return fallback;
      return Value::integer(static_cast<int64_t>(v.as_double()));
    }
    if (v.is_string()) {
      const std::string s = py_strip(v.as_string(), nullptr, true, true);
      char* end = nullptr;
      errno = 0;
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value::integer(i);
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18)
        return Value::integer(static_cast<int64_t>(d));
    }
    return fallback;
  }
  if (name == "float") {
    F(1, {"default"});
    const Value* dflt = arg(a, kw, 0, "default");
    if (v.is_number()) return Value::floating(v.as_double());
    if (v.is_string()) {
      const std::string s = py_strip(v.as_string(), nullptr, true, true);
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size()) return Value::floating(d);
    }
    return dflt ? *dflt : Value::floating(0.0);
  }
  if (name == "abs") {
    F(0, {});
    if (v.is_float()) return Value::floating(std::fabs(v.as_double()));
    if (v.is_int() || v.is_bool()) {
      if (v.as_int() == INT64_MIN) error("integer overflow");
      return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    error("bad operand type for abs(): '{}'", v.type_name());
  }
  if (name == "round") {
    F(2, {"precision", "method"});
    const Value* p = arg(a, kw, 0, "precision");
    const Value* m = arg(a, kw, 1, "method");
    const int64_t prec = p ? p->as_int() : 0;
    const std::string meth = m ? py_str(*m) : "common";
    if (!v.is_number()) error("filter 'round' needs a number, not '{}'", v.type_name());
    const double scale = std::pow(10.0, static_cast<double>(prec));
    double x = v.as_double() * scale;
    if (meth == "common") x = std::nearbyint(x);
    else if (meth == "ceil") x = std::ceil(x);
    else if (meth == "floor") x = std::floor(x);
    else error("filter 'round': method must be 'common', 'ceil' or 'floor'");
    return Value::floating(x / scale);
  }
  if (name == "dictsort") {
    F(3, {"case_sensitive", "by", "reverse"});
    if (!v.is_dict()) error("filter 'dictsort' needs a mapping, not '{}'", v.type_name());
    const bool cs = opt_bool(0, "case_sensitive", false);
    const Value* by = arg(a, kw, 1, "by");
    const bool by_value = by && py_str(*by) == "value";
    if (by && !by_value && py_str(*by) != "key") error("filter 'dictsort': by must be 'key' or 'value'");
    const bool rev = opt_bool(2, "reverse", false);
    List items;
    for (const auto& [k, e] : v.as_dict().items()) items.push_back(Value::list({k, e}, true));
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      const Value kx = sort_key(x.as_list()[by_value ? 1 : 0], cs), ky = sort_key(y.as_list()[by_value ? 1 : 0], cs);
      return rev ? cmp(kx, ky) > 0 : cmp(kx, ky) < 0;
    });
    return Value::list(std::move(items));
  }
  if (name == "sort" || name == "unique" || name == "max" || name == "min") {
    const bool is_sort = name == "sort";
    if (is_sort) F(3, {"reverse", "case_sensitive", "attribute"});
    else F(2, {"case_sensitive", "attribute"});
    const bool rev = is_sort && opt_bool(0, "reverse", false);
    const bool cs = opt_bool(is_sort ? 1 : 0, "case_sensitive", false);
    const Value* attribute = arg(a, kw, is_sort ? 2 : 1, "attribute");
    List items = iterate(v);
    const auto key = [&](const Value& x) {
      return sort_key(attribute && !attribute->is_none() ? attr_path(*this, x, *attribute) : x, cs);
    };
    if (name == "unique") {
      List out, seen;
      for (const auto& x : items) {
        const Value k = key(x);
        bool dup = false;
        for (const auto& s : seen) dup = dup || s.equals(k);
        if (!dup) {
          seen.push_back(k);
          out.push_back(x);
        }
      }
      return Value::generator(std::move(out));
    }
    if (name == "max" || name == "min") {
      if (items.empty()) return Value::undefined(fmt::format("No {} item, sequence was empty.", name == "max" ? "largest" : "smallest"));
      size_t best = 0;
      for (size_t i = 1; i < items.size(); ++i) {
        const int c = cmp(key(items[i]), key(items[best]));
        if (name == "max" ? c > 0 : c < 0) best = i;
      }
      return items[best];
    }
    std::stable_sort(items.begin(), items.end(),
                     [&](const Value& x, const Value& y) { return rev ? cmp(key(x), key(y)) > 0 : cmp(key(x), key(y)) < 0; });
    return Value::list(std::move(items));
  }
  if (name == "sum") {
    F(2, {"attribute", "start"});
    const Value* attribute = arg(a, kw, 0, "attribute");
    const Value* start = arg(a, kw, 1, "start");
    Value total = start ? *start : Value::integer(0);
    for (const auto& x : iterate(v))
      total = binary("+", total, attribute && !attribute->is_none() ? attr_path(*this, x, *attribute) : x);
    return total;
  }
  if (name == "map") {
    // Jinja's map / select family are generators guarded by `if value:`:
    // none, undefined or an empty value give an empty sequence, unchecked.
    if (!v.truthy()) return Value::generator({});
    List out;
    const Value* attribute = kwarg(kw, "attribute");
    if (attribute) {
      const Value* dflt = kwarg(kw, "default");
      for (const auto& [k, e] : kw)
        if (k != "attribute" && k != "default") error("filter 'map' got an unexpected keyword argument '{}'", k);
      for (const auto& x : iterate(v)) {
        Value r = attr_path(*this, x, *attribute);
        if (r.is_undefined() && dflt) r = *dflt;
        out.push_back(std::move(r));
      }
      return Value::generator(std::move(out));
    }
    if (a.empty() || !a[0].is_string()) error("filter 'map' needs a filter name or attribute=");
    const std::string fname = a[0].as_string();
    if (!is_known_filter(fname)) error("unsupported Jinja feature: filter '{}'", fname);
    List rest(a.begin() + 1, a.end());
    for (const auto& x : iterate(v)) out.push_back(filter(fname, x, rest, kw));
    return Value::generator(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    if (!v.truthy()) return Value::generator({});
    if (!kw.empty()) error("filter '{}' takes no keyword arguments", name);
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep_if = name == "select" || name == "selectattr";
    size_t i = 0;
    Value attribute;
    if (by_attr) {
      if (a.empty()) error("filter '{}' needs an attribute", name);
      attribute = a[i++];
    }
    std::string tname;
    if (i < a.size()) {
      if (!a[i].is_string()) error("filter '{}': test name must be a string", name);
      tname = a[i++].as_string();
      if (!is_known_test(tname)) error("unsupported Jinja feature: test '{}'", tname);
    }
    const List targs(a.begin() + static_cast<std::ptrdiff_t>(i), a.end());
    List out;
    for (const auto& x : iterate(v)) {
      const Value subject = by_attr ? attr_path(*this, x, attribute) : x;
      const bool r = tname.empty() ? subject.truthy() : test(tname, subject, targs);
      if (r == keep_if) out.push_back(x);
    }
    return Value::generator(std::move(out));
  }
  if (name == "attr") {
    F(1, {"name"});
    const Value* n = arg(a, kw, 0, "name");
    if (!n || !n->is_string()) error("filter 'attr' needs an attribute name");
    return get_attr(v, n->as_string());
  }
  if (name == "indent") {
    F(3, {"width", "first", "blank"});
    const Value* width = arg(a, kw, 0, "width");
    std::string ind;
    if (!width) ind = "    ";
    else if (width->is_string()) ind = width->as_string();
    else ind = std::string(static_cast<size_t>(std::clamp<int64_t>(width->as_int(), 0, 1024)), ' ');
    const bool first = opt_bool(1, "first", false), blank = opt_bool(2, "blank", false);
    if (!v.is_string()) error("filter 'indent' needs a string, not '{}'", v.type_name());
    const std::vector<std::string> lines = py_splitlines(py_str(v) + "\n");
    std::string rv;
    if (blank) {
      for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
    } else {
      rv = lines.empty() ? "" : lines[0];
      for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind) + lines[i];
    }
    if (first) rv = ind + rv;
    return make_string(std::move(rv));
  }
  if (name == "wordcount") {
    F(0, {});
    int64_t n = 0;
    bool in_word = false;
    for (char c : py_str(v)) {
      const bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::integer(n);
  }
  if (name == "center") {
    F(1, {"width"});
    const Value* width = arg(a, kw, 0, "width");
    return method(Value::string(py_str(v)), "center", {width ? *width : Value::integer(80)}, {});
  }
  if (name == "batch") {
    F(2, {"linecount", "fill_with"});
    const Value* n = arg(a, kw, 0, "linecount");
    if (!n || !(n->is_int()) || n->as_int() <= 0) error("filter 'batch' needs a positive line count");
    const Value* fill = arg(a, kw, 1, "fill_with");
    List out, cur;
    for (const auto& x : iterate(v)) {
      cur.push_back(x);
      if (static_cast<int64_t>(cur.size()) == n->as_int()) {
        out.push_back(Value::list(std::move(cur)));
        cur.clear();
      }
    }
    if (!cur.empty()) {
      if (fill && !fill->is_none())
        while (static_cast<int64_t>(cur.size()) < n->as_int()) cur.push_back(*fill);
      out.push_back(Value::list(std::move(cur)));
    }
    return Value::generator(std::move(out));
  }
  unknown_filter_or_test("filter", name);
}

// ---------------------------------------------------------------- methods

Value Interpreter::method(const Value& self, const std::string& name, List a, KwArgs kw) {
  const auto M = [&](size_t max_pos, std::initializer_list<const char*> names) {
    check_args(*this, fmt::format("{}.{}()", self.type_name(), name).c_str(), a, kw, max_pos, names);
  };
  if (self.is_dict()) {
    const Dict& d = self.as_dict();
    if (name == "get") {
      M(2, {});
      if (a.empty()) error("dict.get() takes at least 1 argument");
      const Value* v = d.find(a[0]);
      return v ? *v : (a.size() > 1 ? a[1] : Value::none());
    }
    M(0, {});
    List out;
    for (const auto& [k, v] : d.items()) {
      if (name == "items") out.push_back(Value::list({k, v}, true));
      else out.push_back(name == "keys" ? k : v);
    }
    return Value::dict_view(std::move(out), name == "items" ? "dict_items" : name == "keys" ? "dict_keys" : "dict_values");
  }
  // str methods
  const std::string& s = self.as_string();
  const auto str_arg = [&](size_t i, const char* what) -> const std::string& {
    if (i >= a.size() || !a[i].is_string())
      error("str.{}() argument {} must be str, not '{}'", name, what, i < a.size() ? a[i].type_name() : "missing");
    return a[i].as_string();
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    M(1, {});
    const bool has = !a.empty() && !a[0].is_none();
    const std::string chars = has ? str_arg(0, "1") : std::string();
    return Value::string(py_strip(s, has ? &chars : nullptr, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    M(1, {});
    if (a.empty()) error("str.{}() takes at least 1 argument", name);
    const auto one = [&](const Value& p) {
      if (!p.is_string()) error("str.{}() argument must be str or a tuple of str, not '{}'", name, p.type_name());
      return name == "startswith" ? starts_with(s, p.as_string()) : ends_with(s, p.as_string());
    };
    if (a[0].is_tuple()) {
      for (const auto& p : a[0].as_list())
        if (one(p)) return Value::boolean(true);
      return Value::boolean(false);
    }
    return Value::boolean(one(a[0]));
  }
  if (name == "split" || name == "rsplit") {
    M(2, {"sep", "maxsplit"});
    const Value* sepv = arg(a, kw, 0, "sep");
    const Value* maxv = arg(a, kw, 1, "maxsplit");
    int64_t maxsplit = maxv ? maxv->as_int() : -1;
    List out;
    if (!sepv || sepv->is_none()) {
      // Whitespace runs, no empty strings.
      const std::vector<uint32_t> cps = utf8_code_points(s);
      std::vector<std::string> words;
      if (name == "split") {
        size_t i = 0;
        while (i < cps.size()) {
          while (i < cps.size() && py_isspace(cps[i])) ++i;
          if (i >= cps.size()) break;
          if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
            size_t e = cps.size();
            while (e > i && py_isspace(cps[e - 1])) --e;
            std::string w;
            for (size_t k = i; k < e; ++k) utf8_append(w, cps[k]);
            words.push_back(std::move(w));
            break;
          }
          std::string w;
          while (i < cps.size() && !py_isspace(cps[i])) utf8_append(w, cps[i++]);
          words.push_back(std::move(w));
        }
      } else {
        int64_t i = static_cast<int64_t>(cps.size());
        while (i > 0) {
          while (i > 0 && py_isspace(cps[static_cast<size_t>(i - 1)])) --i;
          if (i == 0) break;
          if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
            size_t b = 0;
            while (b < static_cast<size_t>(i) && py_isspace(cps[b])) ++b;
            std::string w;
            for (size_t k = b; k < static_cast<size_t>(i); ++k) utf8_append(w, cps[k]);
            words.push_back(std::move(w));
            break;
          }
          int64_t e = i;
          while (i > 0 && !py_isspace(cps[static_cast<size_t>(i - 1)])) --i;
          std::string w;
          for (int64_t k = i; k < e; ++k) utf8_append(w, cps[static_cast<size_t>(k)]);
          words.push_back(std::move(w));
        }
        std::reverse(words.begin(), words.end());
      }
      for (auto& w : words) out.push_back(Value::string(std::move(w)));
      return Value::list(std::move(out));
    }
    if (!sepv->is_string()) error("str.{}() separator must be str, not '{}'", name, sepv->type_name());
    const std::string& sep = sepv->as_string();
    if (sep.empty()) error("empty separator");
    std::vector<std::string> parts;
    if (name == "split") {
      size_t start = 0;
      while (true) {
        const size_t p = maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit ? std::string::npos : s.find(sep, start);
        if (p == std::string::npos) {
          parts.push_back(s.substr(start));
          break;
        }
        parts.push_back(s.substr(start, p - start));
        start = p + sep.size();
      }
    } else {
      size_t end = s.size();
      while (true) {
        size_t p = std::string::npos;
        if (!(maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) && end >= sep.size())
          p = s.rfind(sep, end - sep.size());
        if (p == std::string::npos) {
          parts.push_back(s.substr(0, end));
          break;
        }
        parts.push_back(s.substr(p + sep.size(), end - p - sep.size()));
        end = p;
      }
      std::reverse(parts.begin(), parts.end());
    }
    check_items(parts.size());
    for (auto& p : parts) out.push_back(Value::string(std::move(p)));
    return Value::list(std::move(out));
  }
  if (name == "upper") return M(0, {}), Value::string(case_map(s, true));
  if (name == "lower") return M(0, {}), Value::string(case_map(s, false));
  if (name == "capitalize") {
    M(0, {});
    if (s.empty()) return self;
    size_t i = 0;
    const uint32_t first = utf8_decode_escaped(s, i);
    if ((first >= 0x1c4 && first <= 0x1cc) || (first >= 0x1f1 && first <= 0x1f3))
      error("unsupported Jinja feature: capitalize() of a titlecase digraph");
    std::string head;
    utf8_append(head, first);
    return Value::string(case_map(head, true) + case_map(s.substr(i), false));
  }
  if (name == "title") {
    // Jinja's title filter and str.title agree for ASCII words separated by spaces.
    M(0, {});
    std::string out;
    bool prev_cased = false;
    for (char c : s) {
      const bool alpha = std::isalpha(static_cast<unsigned char>(c));
      if (alpha) out += prev_cased ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
                                   : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      else out += c;
      prev_cased = alpha;
    }
    return Value::string(std::move(out));
  }
  if (name == "replace") {
    M(3, {});
    const std::string& from = str_arg(0, "1");
    const std::string& to = str_arg(1, "2");
    int64_t count = a.size() > 2 ? a[2].as_int() : -1;
    std::string out;
    if (from.empty()) {
      const std::vector<uint32_t> cps = utf8_code_points(s);
      for (size_t i = 0; i <= cps.size(); ++i) {
        if (count != 0) {
          out += to;
          if (count > 0) --count;
        }
        if (i < cps.size()) utf8_append(out, cps[i]);
        check_size(out.size());
      }
      return Value::string(std::move(out));
    }
    size_t start = 0;
    while (count != 0) {
      const size_t p = s.find(from, start);
      if (p == std::string::npos) break;
      out.append(s, start, p - start);
      out += to;
      check_size(out.size());
      start = p + from.size();
      if (count > 0) --count;
    }
    out.append(s, start, std::string::npos);
    return make_string(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    M(1, {});
    const std::string& sub = str_arg(0, "1");
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    const size_t p = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") error("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(utf8_length(s.substr(0, p))));
  }
  if (name == "join") {
    M(1, {});
    if (a.empty()) error("str.join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(a[0])) {
      if (!item.is_string()) error("sequence item: expected str instance, {} found", item.type_name());
      if (!first) out += s;
      first = false;
      out += item.as_string();
      check_size(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "splitlines") {
    M(0, {});
    List out;
    for (auto& l : py_splitlines(s)) out.push_back(Value::string(std::move(l)));
    return Value::list(std::move(out));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    M(1, {});
    const std::string& p = str_arg(0, "1");
    if (name == "removeprefix") return Value::string(starts_with(s, p) ? s.substr(p.size()) : s);
    return Value::string(ends_with(s, p) ? s.substr(0, s.size() - p.size()) : s);
  }
  if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum" || name == "isnumeric" ||
      name == "isdecimal") {
    M(0, {});
    if (s.empty()) return Value::boolean(false);
    for (size_t i = 0; i < s.size();) {
      const uint32_t cp = utf8_decode_escaped(s, i);
      bool ok;
      if (name == "isspace") ok = py_isspace(cp);
      else if (name == "isalpha") ok = cp < 0x80 && std::isalpha(static_cast<int>(cp));
      else if (name == "isalnum") ok = cp < 0x80 && std::isalnum(static_cast<int>(cp));
      else ok = cp >= '0' && cp <= '9';
      if (!ok) return Value::boolean(false);
    }
    return Value::boolean(true);
  }
  if (name == "islower" || name == "isupper") {
    M(0, {});
    return Value::boolean(test(name == "islower" ? "lower" : "upper", self, {}));
  }
  if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
    M(2, {});
    if (a.empty() || !a[0].is_int()) error("str.{}() needs an integer width", name);
    const int64_t width = std::min<int64_t>(a[0].as_int(), static_cast<int64_t>(lim_.max_output_bytes));
    std::string fill = name == "zfill" ? "0" : a.size() > 1 ? str_arg(1, "2") : " ";
    if (utf8_length(fill) != 1) error("the fill character must be exactly one character long");
    const int64_t len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return self;
    const int64_t pad = width - len;
    int64_t left = 0;
    if (name == "center") left = pad / 2 + (pad & width & 1);
    else if (name == "rjust" || name == "zfill") left = pad;
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = 0; i < pad - left; ++i) out += fill;
    return make_string(std::move(out));
  }
  if (name == "format") {
    // Python's str.format: "{}" (automatic numbering), "{0}", "{name}", with
    // !s / !r / !a; "{{" and "}}" escapes. Format specs and field attribute
    // or index lookups are refused by name rather than guessed.
    std::string out;
    size_t next_auto = 0;
    bool used_auto = false, used_manual = false;
    for (size_t i = 0; i < s.size();) {
      const char c = s[i];
      if (c == '}') {
        if (i + 1 < s.size() && s[i + 1] == '}') {
          out += '}';
          i += 2;
          continue;
        }
        error("Single '}}' encountered in format string");
      }
      if (c != '{') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 < s.size() && s[i + 1] == '{') {
        out += '{';
        i += 2;
        continue;
      }
      const size_t close = s.find('}', i + 1);
      if (close == std::string::npos) error("Single '{{' encountered in format string");
      std::string field = s.substr(i + 1, close - i - 1);
      i = close + 1;
      char conv = 0;
      if (const size_t colon = field.find(':'); colon != std::string::npos) {
        if (colon + 1 < field.size()) error("unsupported Jinja feature: str.format() with a format spec");
        field.resize(colon);
      }
      if (const size_t bang = field.find('!'); bang != std::string::npos) {
        if (bang + 2 != field.size() || (field[bang + 1] != 's' && field[bang + 1] != 'r'))
          error("Unknown conversion specifier {}", field.substr(bang + 1));
        conv = field[bang + 1];
        field.resize(bang);
      }
      if (field.find_first_of(".[") != std::string::npos)
        error("unsupported Jinja feature: str.format() with attribute or index lookups");
      const Value* v = nullptr;
      if (field.empty() || std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        size_t idx;
        if (field.empty()) {
          if (used_manual) error("cannot switch from manual field specification to automatic field numbering");
          used_auto = true;
          idx = next_auto++;
        } else {
          if (used_auto) error("cannot switch from automatic field numbering to manual field specification");
          used_manual = true;
          if (field.size() > 9) error("Replacement index {} out of range for positional args tuple", field);
          idx = std::stoul(field);
        }
        if (idx >= a.size()) error("Replacement index {} out of range for positional args tuple", idx);
        v = &a[idx];
      } else {
        v = kwarg(kw, field.c_str());
        if (!v) error("'{}'", field);
      }
      if (v->is_undefined()) undefined_error(*v);
      out += conv == 'r' ? py_repr(*v) : py_str(*v);
      check_size(out.size());
    }
    return make_string(std::move(out));
  }
  error("unsupported Jinja feature: str.{}()", name);
}

// ---------------------------------------------------------------- entry points

bool is_known_filter(const std::string& name) { return filter_names().count(name) != 0; }
bool is_known_test(const std::string& name) { return test_names().count(name) != 0; }

namespace {

// Jinja2's compiler refuses a filter or test it does not know, except inside
// an `if` statement (its tests and bodies, nested ifs too) or a conditional
// expression ("soft frames"): there the error is raised only if that code
// runs ("No filter named 'x' found."), so a template may name a filter in a
// branch no conversation takes. Loops, macros and set blocks open fresh
// frames, soft no longer.
void validate_expr(const Template& t, const Expr* e, bool soft) {
  if (!e) return;
  if (!soft && e->kind == Expr::Kind::Filter && !is_known_filter(e->name))
    fail(t.origin, location(e->line, e->col), "unsupported Jinja feature: filter '{}'", e->name);
  if (!soft && e->kind == Expr::Kind::Test && !is_known_test(e->name))
    fail(t.origin, location(e->line, e->col), "unsupported Jinja feature: test '{}'", e->name);
  const bool inner_soft = soft || e->kind == Expr::Kind::Cond;
  for (const auto& a : e->args) validate_expr(t, a.get(), inner_soft);
  for (const auto& [k, a] : e->kwargs) validate_expr(t, a.get(), inner_soft);
}

void validate_body(const Template& t, const Body& body, bool soft) {
  for (const auto& s : body) {
    const bool is_if = s->kind == Stmt::Kind::If;
    validate_expr(t, s->expr.get(), soft);
    validate_expr(t, s->cond.get(), false);  // a for loop's filter: the loop's own frame
    for (const auto& c : s->conds) validate_expr(t, c.get(), soft || is_if);
    for (const auto& [k, d] : s->params) validate_expr(t, d.get(), false);
    for (const auto& f : s->filters) validate_expr(t, f.get(), false);
    for (const auto& b : s->bodies) validate_body(t, b, is_if ? true : false);
  }
}

}  // namespace

void validate(const Template& tpl) { validate_body(tpl, tpl.body, false); }

std::string render(const Template& tpl, const Dict& context, const RenderLimits& limits) {
  Interpreter interp(tpl, limits);
  return interp.run(context);
}

}  // namespace tessera::jinja
