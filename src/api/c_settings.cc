#include "api/c_settings.h"

#include <cstddef>
#include <deque>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace tessera::api {

namespace {

// The C type that holds a setting of C++ type T.
template <class T>
struct CType {
  using type = T;  // int64_t, uint64_t, float
};
template <>
struct CType<bool> {
  using type = int;
};
template <>
struct CType<std::string> {
  using type = const char*;
};
template <>
struct CType<std::vector<std::string>> {
  using type = tessera_strings;
};
template <class T>
using c_type_t = typename CType<T>::type;

// The C struct the list implies: tessera_generation_settings must be exactly
// this, field for field (type, order, nothing else).
struct ListedCSettings {
#define TESSERA_C_FIELD_(type, name, default_value, doc) c_type_t<type> name;
  TESSERA_GENERATION_SETTINGS(TESSERA_C_FIELD_)
#undef TESSERA_C_FIELD_
};
#define TESSERA_C_CHECK_(type, name, default_value, doc)                                               \
  static_assert(std::is_same_v<decltype(tessera_generation_settings::name), c_type_t<type>>,        \
                "tessera_generation_settings." #name " has another type than the list's");          \
  static_assert(offsetof(tessera_generation_settings, name) == offsetof(ListedCSettings, name),      \
                "tessera_generation_settings." #name " is not where the list puts it");
TESSERA_GENERATION_SETTINGS(TESSERA_C_CHECK_)
#undef TESSERA_C_CHECK_
static_assert(sizeof(tessera_generation_settings) == sizeof(ListedCSettings),
              "tessera_generation_settings has fields the list does not");

template <class T>
void from_c(T& out, const c_type_t<T>& in, const char* name) {
  if constexpr (std::is_same_v<T, bool>) {
    out = in != 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (in) out = in;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    if (in.count && !in.items) fail("settings", name, "items is NULL with count {}", in.count);
    out.clear();
    for (size_t i = 0; i < in.count; ++i) {
      if (!in.items[i]) fail("settings", name, "item {} is NULL", i);
      out.emplace_back(in.items[i]);
    }
  } else {
    out = in;
  }
}

// `arrays` keeps the pointer arrays of string lists.
template <class T>
c_type_t<T> to_c(const T& value, std::deque<std::vector<const char*>>& arrays) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? 1 : 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value.c_str();
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    std::vector<const char*>& items = arrays.emplace_back();
    for (const std::string& s : value) items.push_back(s.c_str());
    return tessera_strings{items.empty() ? nullptr : items.data(), items.size()};
  } else {
    return value;
  }
}

struct CDefaults {
  GenerationSettings settings;  // the strings the C struct points at
  std::deque<std::vector<const char*>> arrays;
  tessera_generation_settings c{};

  CDefaults() {
#define TESSERA_C_DEFAULT_(type, name, default_value, doc) c.name = to_c<type>(settings.name, arrays);
    TESSERA_GENERATION_SETTINGS(TESSERA_C_DEFAULT_)
#undef TESSERA_C_DEFAULT_
  }
};

}  // namespace

GenerationSettings settings_from_c(const tessera_generation_settings& c) {
  GenerationSettings s;
#define TESSERA_FROM_C_(type, name, default_value, doc) from_c<type>(s.name, c.name, #name);
  TESSERA_GENERATION_SETTINGS(TESSERA_FROM_C_)
#undef TESSERA_FROM_C_
  return s;
}

const tessera_generation_settings& default_c_settings() {
  static const CDefaults defaults;
  return defaults.c;
}

}  // namespace tessera::api
