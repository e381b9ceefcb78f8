// The functions every template can call: Python's range and dict, Jinja's
// namespace, and transformers' raise_exception and strftime_now.
#include "jinja/interpreter.h"

#include <cmath>
#include <ctime>
#include <memory>
#include <string>

namespace tessera::jinja {
namespace {

// A global function: a C++ function under its Python name.
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
    if (k.is_string() && k.as_string().starts_with("_"))
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

}  // namespace

void add_globals(Scope& root) {
  const auto add = [&](const char* name, Builtin::Fn fn) {
    root.set(name, Value::callable(std::make_shared<Builtin>(name, fn)));
  };
  add("range", builtin_range);
  add("namespace", builtin_namespace);
  add("dict", builtin_dict);
  add("raise_exception", builtin_raise_exception);
  add("strftime_now", builtin_strftime_now);
}

}  // namespace tessera::jinja
