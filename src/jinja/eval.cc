#include "jinja/eval.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "jinja/interpreter.h"

namespace tessera::jinja {

namespace {

// ---------------------------------------------------------------- callables

// `s.strip` before the call: the method with its receiver; calling it runs
// Interpreter::method (methods.cc).
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

// A {% macro %}. Each call runs the body in a fresh scope whose parent is the
// scope the macro was defined in; parameters take the positional arguments,
// then the keyword ones, then their defaults (evaluated at call time), and
// are undefined otherwise. The call returns what the body printed.
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

// loop.cycle(a, b, ...): the argument at the current iteration's index,
// modulo their count.
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

}  // namespace

// ---------------------------------------------------------------- arguments

const Value* kwarg(const KwArgs& kw, const char* name) {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

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

// ---------------------------------------------------------------- statements

std::string Interpreter::run(const Dict& context) {
  root_ = std::make_shared<Scope>();
  add_globals(*root_);
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
          List args = eval_args(*f, scope);
          KwArgs kw = eval_kwargs(*f, scope);
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
    if (s.attr.starts_with("_"))
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
    case Expr::Kind::Call:
    case Expr::Kind::Filter: {
      const Value callee_or_subject = eval(*e.args[0], scope);
      List args = eval_args(e, scope);
      KwArgs kw = eval_kwargs(e, scope);
      at(e.line, e.col);
      if (e.kind == Expr::Kind::Call) return call(callee_or_subject, std::move(args), std::move(kw));
      return filter(e.name, callee_or_subject, std::move(args), std::move(kw));
    }
    case Expr::Kind::Test: {
      const Value subject = eval(*e.args[0], scope);
      const List args = eval_args(e, scope);
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

List Interpreter::eval_args(const Expr& e, const ScopePtr& scope) {
  List args;
  for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i], scope));
  return args;
}

KwArgs Interpreter::eval_kwargs(const Expr& e, const ScopePtr& scope) {
  KwArgs kw;
  for (const auto& [k, a] : e.kwargs) kw.emplace_back(k, eval(*a, scope));
  return kw;
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined: undefined_error(obj);
    case Value::Kind::Dict: {
      if (is_dict_method(name)) return Value::callable(std::make_shared<BoundMethod>(obj, name));
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
      if (is_str_method(name)) return Value::callable(std::make_shared<BoundMethod>(obj, name));
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

// ---------------------------------------------------------------- entry point

std::string render(const Template& tpl, const Dict& context, const RenderLimits& limits) {
  Interpreter interp(tpl, limits);
  return interp.run(context);
}

}  // namespace tessera::jinja
