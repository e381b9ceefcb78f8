#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace tessera::jinja {

// ---------------------------------------------------------------- str

bool py_isspace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

// ---------------------------------------------------------------- Dict

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items_)
    if (k.equals(key)) return &v;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items_)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : items_) {
    if (k.equals(key)) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

void Dict::append(Value key, Value value) { items_.emplace_back(std::move(key), std::move(value)); }
void Dict::reserve(size_t n) { items_.reserve(n); }
size_t Dict::size() const { return items_.size(); }

// ---------------------------------------------------------------- Value

std::shared_ptr<const std::string> Value::empty_string() {
  static const auto empty = std::make_shared<const std::string>();
  return empty;
}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.s_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}
Value Value::floating(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.f_ = f;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.s_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value Value::markup(std::string s) {
  Value v = string(std::move(s));
  v.markup_ = true;
  return v;
}
Value Value::list(List items, bool tuple) {
  Value v;
  v.kind_ = Kind::List;
  v.tuple_ = tuple;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}
Value Value::generator(List items) {
  Value v = list(std::move(items));
  v.generator_ = true;
  return v;
}
Value Value::dict_view(List items, const char* kind) {
  Value v = list(std::move(items));
  v.view_ = kind;
  return v;
}
Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::namespace_(Dict attrs) {
  Value v;
  v.kind_ = Kind::Namespace;
  v.dict_ = std::make_shared<Dict>(std::move(attrs));
  return v;
}
Value Value::callable(std::shared_ptr<const Callable> c) {
  Value v;
  v.kind_ = Kind::Callable;
  v.callable_ = std::move(c);
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null:
      return none();
    case T::boolean:
      return boolean(j.get<bool>());
    case T::number_integer:
      return integer(j.get<int64_t>());
    case T::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return floating(static_cast<double>(u));
      return integer(static_cast<int64_t>(u));
    }
    case T::number_float:
      return floating(j.get<double>());
    case T::string:
      return string(j.get<std::string>());
    case T::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return list(std::move(items));
    }
    case T::object: {
      Dict d;
      for (const auto& [k, e] : j.items()) d.set(string(k), from_json(e));
      return dict(std::move(d));
    }
    default:
      return none();
  }
}

double Value::as_double() const {
  switch (kind_) {
    case Kind::Float: return f_;
    case Kind::Int: return static_cast<double>(i_);
    case Kind::Bool: return b_ ? 1.0 : 0.0;
    default: return 0;
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return !s_->empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return dict_->size() != 0;
    default: return true;
  }
}

bool Value::equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::Float || o.kind_ == Kind::Float) return as_double() == o.as_double();
    return as_int() == o.as_int();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return *s_ == *o.s_;
    case Kind::List: {
      if (generator_ || o.generator_ || view_ || o.view_) return list_ == o.list_;
      if (tuple_ != o.tuple_ || list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i)
        if (!(*list_)[i].equals((*o.list_)[i])) return false;
      return true;
    }
    case Kind::Dict: {
      if (dict_->size() != o.dict_->size()) return false;
      for (const auto& [k, v] : dict_->items()) {
        const Value* ov = o.dict_->find(k);
        if (!ov || !v.equals(*ov)) return false;
      }
      return true;
    }
    case Kind::Namespace: return dict_ == o.dict_;
    case Kind::Callable: return callable_ == o.callable_;
    default: return false;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return view_ ? view_ : generator_ ? "generator" : tuple_ ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "?";
}

// ---------------------------------------------------------------- str / repr

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: [-]d[.ddd]e[+-]XX.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string out;
  if (sci[0] == '-') {
    out += '-';
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exp10 = std::stoi(sci.substr(e + 1));
  // Python's repr: value = 0.d1d2... * 10^decpt; fixed notation when -4 < decpt <= 16.
  const int decpt = exp10 + 1;
  const int nd = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= nd) {
      out += digits;
      out.append(static_cast<size_t>(decpt - nd), '0');
      out += ".0";
    } else {
      out += digits.substr(0, decpt);
      out += '.';
      out += digits.substr(decpt);
    }
  } else {
    out += digits[0];
    if (nd > 1) {
      out += '.';
      out += digits.substr(1);
    }
    const int x = decpt - 1;
    out += fmt::format("e{}{:02d}", x < 0 ? '-' : '+', x < 0 ? -x : x);
  }
  return out;
}

static bool py_isprintable(uint32_t cp) {
  // Approximation of str.isprintable(): control characters, separators other
  // than the ASCII space, and surrogate escapes are not printable.
  if (cp < 0x20 || cp == 0x7f) return false;
  if (cp >= 0x80 && cp < 0xa0) return false;
  if (cp == 0xa0 || cp == 0xad || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200f) ||
      (cp >= 0x2028 && cp <= 0x202f) || (cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 ||
      cp == 0xfeff)
    return false;
  if (cp >= 0xd800 && cp <= 0xdfff) return false;
  if (cp >= 0xe000 && cp <= 0xf8ff) return false;  // private use (Co)
  return true;
}

std::string py_string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = utf8_decode_escaped(s, i);
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!py_isprintable(cp)) {
      if (cp < 0x100) out += fmt::format("\\x{:02x}", cp);
      else if (cp < 0x10000) out += fmt::format("\\u{:04x}", cp);
      else out += fmt::format("\\U{:08x}", cp);
    } else {
      utf8_append(out, cp);
    }
  }
  out += quote;
  return out;
}

std::string py_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::String: return py_string_repr(v.as_string());
    case Value::Kind::List: {
      if (v.dict_view_kind()) {
        Value plain = Value::list(v.as_list());
        return std::string(v.dict_view_kind()) + "(" + py_repr(plain) + ")";
      }
      std::string out = v.is_tuple() ? "(" : "[";
      const List& items = v.as_list();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(items[i]);
      }
      if (v.is_tuple() && items.size() == 1) out += ",";
      out += v.is_tuple() ? ")" : "]";
      return out;
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.as_dict().items()) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(k);
        out += ": ";
        out += py_repr(e);
      }
      return out + "}";
    }
    case Value::Kind::Undefined: return "Undefined";
    default: return py_str(v);
  }
}

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return py_float_repr(v.as_double());
    case Value::Kind::String: return v.as_string();
    case Value::Kind::List:
    case Value::Kind::Dict: return py_repr(v);
    case Value::Kind::Namespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, e] : v.as_dict().items()) {
        if (!first) out += ", ";
        first = false;
        out += py_repr(k) + ": " + py_repr(e);
      }
      return out + "}>";
    }
    case Value::Kind::Callable: {
      std::string r = v.as_callable().repr();
      return r.empty() ? "<function " + v.as_callable().name() + ">" : r;
    }
  }
  return "";
}

// ---------------------------------------------------------------- json.dumps

static void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = utf8_decode_escaped(s, i);
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20) {
          out += fmt::format("\\u{:04x}", cp);
        } else if (ensure_ascii && cp >= 0x7f) {
          if (cp >= 0x10000) {
            const uint32_t v = cp - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
          } else {
            out += fmt::format("\\u{:04x}", cp);
          }
        } else {
          utf8_append(out, cp);
        }
    }
  }
  out += '"';
}

static bool json_dump(std::string& out, const Value& v, const JsonDumpOptions& opt, int depth,
                      std::string* bad) {
  if (depth > 512) {
    if (bad) *bad = "nesting deeper than 512";
    return false;
  }
  const auto newline = [&](int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *opt.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return true;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return true;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return true;
    case Value::Kind::Float: {
      const double d = v.as_double();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
      else out += py_float_repr(d);
      return true;
    }
    case Value::Kind::String: json_string(out, v.as_string(), opt.ensure_ascii); return true;
    case Value::Kind::List: {
      if (v.is_generator() || v.dict_view_kind()) {
        if (bad) *bad = v.type_name();
        return false;
      }
      const List& items = v.as_list();
      if (items.empty()) {
        out += "[]";
        return true;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += opt.item_separator;
        if (opt.indent) newline(depth + 1);
        if (!json_dump(out, items[i], opt, depth + 1, bad)) return false;
      }
      if (opt.indent) newline(depth);
      out += ']';
      return true;
    }
    case Value::Kind::Dict: {
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.as_dict().items()) items.push_back(&kv);
      if (items.empty()) {
        out += "{}";
        return true;
      }
      // Keys: str as is; int/float/bool/None converted as json.dumps does.
      std::vector<std::string> keys;
      for (const auto* kv : items) {
        const Value& k = kv->first;
        if (k.is_string()) keys.push_back(k.as_string());
        else if (k.is_bool()) keys.push_back(k.as_bool() ? "true" : "false");
        else if (k.is_none()) keys.push_back("null");
        else if (k.is_int()) keys.push_back(std::to_string(k.as_int()));
        else if (k.is_float()) keys.push_back(py_float_repr(k.as_double()));
        else {
          if (bad) *bad = "dict key of type " + k.type_name();
          return false;
        }
      }
      std::vector<size_t> order(items.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      if (opt.sort_keys)
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
      out += '{';
      for (size_t n = 0; n < order.size(); ++n) {
        if (n) out += opt.item_separator;
        if (opt.indent) newline(depth + 1);
        json_string(out, keys[order[n]], opt.ensure_ascii);
        out += opt.key_separator;
        if (!json_dump(out, items[order[n]]->second, opt, depth + 1, bad)) return false;
      }
      if (opt.indent) newline(depth);
      out += '}';
      return true;
    }
    default:
      if (bad) *bad = v.type_name();
      return false;
  }
}

std::optional<std::string> py_json_dumps(const Value& v, const JsonDumpOptions& opt, std::string* bad) {
  std::string out;
  if (!json_dump(out, v, opt, 0, bad)) return std::nullopt;
  return out;
}

}  // namespace tessera::jinja
