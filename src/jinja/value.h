// Runtime values of the Jinja subset used by chat templates (jinja/eval.h),
// with Python semantics: what str(), repr(), ==, truthiness, `in` and
// json.dumps give for the same value in CPython, byte for byte, because the
// reference renderer is Jinja2 running inside Python (transformers).
//
// Kinds: undefined (Jinja's Undefined: prints as "", falsy, iterates as
// empty, anything else is an error), none, bool, int (int64; overflow is an
// error where Python would grow), float (double), string (UTF-8), list (and
// tuple: same storage, printed with parentheses), dict (insertion-ordered,
// like Python's), namespace (a mutable attribute bag shared by reference)
// and callable (macros, globals, bound methods).
//
// Lists and dicts are shared immutable storage (the sandbox transformers uses
// forbids mutating them), so copying a Value is cheap.
//
// A string is UTF-8 bytes read as a Python str through core/utf8.h's
// surrogateescape view (utf8_decode_escaped, utf8_code_points, utf8_length):
// indices, lengths and slices count code points, and a byte that is not
// valid UTF-8 is one code point that writes back as itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/utf8.h"

namespace tessera::jinja {

class Value;
using List = std::vector<Value>;
using KwArgs = std::vector<std::pair<std::string, Value>>;

// Insertion-ordered mapping with Python equality on keys.
class Dict {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Replaces the value of an existing key (keeping its position) or appends.
  void set(Value key, Value value);
  // Appends without looking for an existing key (the caller knows it is new).
  void append(Value key, Value value);
  void reserve(size_t n);
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }
  size_t size() const;  // out of line: Value is incomplete here (clang)

 private:
  std::vector<std::pair<Value, Value>> items_;
};

class Interpreter;

// Something a template can call: a macro, a global function, a method bound
// to its receiver.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual Value call(Interpreter& interp, List args, KwArgs kwargs) const = 0;
  virtual std::string name() const = 0;
  // Python's str() of it when that is deterministic (macros: "<Macro 'f'>");
  // empty when Python would print a memory address.
  virtual std::string repr() const { return {}; }
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double f);
  static Value string(std::string s);
  // markupsafe's Markup: what the `safe` and `escape` filters return. It
  // prints as its text; `+` with a plain str HTML-escapes the plain side
  // (Markup.__add__ / __radd__), which templates meet as "..."|safe + x.
  static Value markup(std::string s);
  static Value list(List items, bool tuple = false);
  // What map/select/reject/selectattr/rejectattr return in Jinja: a one-shot
  // generator. Iterable like a list, but len(), indexing, slicing, reversed()
  // and printing fail or differ, so they are errors here.
  static Value generator(List items);
  // dict.items() / keys() / values(): iterable with a len(), printed as
  // dict_items([...]), not subscriptable, not JSON.
  static Value dict_view(List items, const char* kind);
  static Value dict(Dict d);
  static Value namespace_(Dict attrs);
  static Value callable(std::shared_ptr<const Callable> c);
  // JSON as Python's json.loads gives it (objects keep their key order).
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_markup() const { return kind_ == Kind::String && markup_; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::List && tuple_; }
  bool is_generator() const { return kind_ == Kind::List && generator_; }
  const char* dict_view_kind() const { return kind_ == Kind::List ? view_ : nullptr; }  // "dict_items", ...
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::Bool ? (b_ ? 1 : 0) : i_; }  // Int or Bool
  double as_double() const;                                                  // any number
  const std::string& as_string() const { return *s_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }  // Dict or Namespace
  Dict& namespace_attrs() const { return *dict_; }
  const Callable& as_callable() const { return *callable_; }
  const std::string& undefined_hint() const { return *s_; }

  // Python truthiness (undefined is falsy).
  bool truthy() const;
  // Python ==.
  bool equals(const Value& other) const;
  // Python type name, as in Jinja's messages ("str", "dict", "NoneType", "Undefined").
  std::string type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  bool tuple_ = false;
  bool generator_ = false;
  bool markup_ = false;
  const char* view_ = nullptr;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_ = empty_string();
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> callable_;
  static std::shared_ptr<const std::string> empty_string();
};

// Python str(v) (what {{ v }} prints; "" for undefined).
std::string py_str(const Value& v);
// Python repr(v).
std::string py_repr(const Value& v);
// Python float.__repr__ (shortest round-trip digits, "1.0", "1e+16", "inf", "nan").
std::string py_float_repr(double d);
// Python repr of a str ('...' or "..." with Python's escapes).
std::string py_string_repr(std::string_view s);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // json.dumps indent (an int n means n spaces)
  std::string item_separator = ", ";  // separators=(item, key)
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // transformers' tojson default
};
// json.dumps(v, ...) with Python's formatting. Returns nullopt naming nothing
// when v holds something JSON cannot encode; `bad` then gets its type name.
std::optional<std::string> py_json_dumps(const Value& v, const JsonDumpOptions& opt, std::string* bad);

// Python str.isspace() for one code point.
bool py_isspace(uint32_t cp);

}  // namespace tessera::jinja
