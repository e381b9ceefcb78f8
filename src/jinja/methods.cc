// Python's methods on the values templates hold: dict.get / items / keys /
// values and the str methods, with CPython's results (indices and lengths in
// code points, Python's whitespace and line breaks); the str algorithms the
// filters share with them; Python's case mapping.
#include "jinja/interpreter.h"

#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tessera::jinja {

namespace {

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

// Python's str.splitlines() boundaries.
bool is_line_break(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c || cp == 0x1d || cp == 0x1e ||
         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

}  // namespace

bool is_dict_method(const std::string& n) {
  return n == "get" || n == "items" || n == "keys" || n == "values";
}

bool is_str_method(const std::string& n) {
  static const std::set<std::string> names = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "title",
      "capitalize", "replace", "find", "rfind", "count", "join", "splitlines", "isdigit", "isspace", "isalpha",
      "isalnum", "islower", "isupper", "removeprefix", "removesuffix", "index", "rindex", "zfill", "center",
      "ljust", "rjust", "format", "swapcase", "casefold", "partition", "rpartition", "isnumeric", "isdecimal",
      "istitle", "encode", "expandtabs", "ljust", "translate", "maketrans", "isidentifier", "isprintable", "isascii"};
  return names.count(n) != 0;
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

std::string Interpreter::case_map(const std::string& s, bool upper) const {
  std::string out;
  if (const uint32_t bad = py_case(s, upper, out)) {
    std::string ch;
    utf8_append(ch, bad);
    error("unsupported Jinja feature: {}() of '{}' (U+{:04X}: Python's mapping is not one-to-one)",
          upper ? "upper" : "lower", ch, bad);
  }
  return out;
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
      return name == "startswith" ? s.starts_with(p.as_string()) : s.ends_with(p.as_string());
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
    if (name == "removeprefix") return Value::string(s.starts_with(p) ? s.substr(p.size()) : s);
    return Value::string(s.ends_with(p) ? s.substr(0, s.size() - p.size()) : s);
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

}  // namespace tessera::jinja
