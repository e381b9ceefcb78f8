// Jinja's builtin filters (`x | upper`) and tests (`x is defined`) as Jinja
// 3.1 defines them, and validate(): Jinja refuses an unknown filter or test
// when it compiles a template, except where the code may never run.
#include "jinja/interpreter.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/error.h"

namespace tessera::jinja {

namespace {

// The filters and tests Tessera has.
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

// Jinja 3.1's own filters and tests are listed here: a name among them is a
// feature Tessera lacks; any other name Jinja itself would not know.
void Interpreter::unknown_filter_or_test(const char* what, const std::string& name) const {
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

// ---------------------------------------------------------------- parse-time check

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

}  // namespace tessera::jinja
