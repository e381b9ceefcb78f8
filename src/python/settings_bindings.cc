// The generation settings (include/tessera/generation_settings.hpp) for
// Python: the list itself, and the one conversion from keyword arguments
// that every binding taking settings uses (Engine.submit, Session.generate).
//
//   _tessera.generation_settings_fields() -> [(name, type, default, doc), ...]
//       type: "int", "float", "bool", "str" or "list[str]"; python/tessera/settings.py
//       builds tessera.GenerationSettings from it
//   _tessera.generation_settings(**settings) -> {name: value} for every setting,
//       as the runtime reads them (the others at their defaults)
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace py = pybind11;
using namespace tessera;

namespace {

template <class T>
const char* python_type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_integral_v<T>) return "int";
  else if constexpr (std::is_floating_point_v<T>) return "float";
  else if constexpr (std::is_same_v<T, std::string>) return "str";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "list[str]";
  else static_assert(sizeof(T) == 0, "a setting type Python has no name for");
}

py::dict settings_to_python(const GenerationSettings& s) {
  py::dict d;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) { d[info.name] = s.*member; });
  return d;
}

}  // namespace

GenerationSettings settings_from_python(const py::dict& kwargs, const char* caller) {
  GenerationSettings s;
  size_t read = 0;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) {
    if (!kwargs.contains(info.name)) return;
    ++read;
    using T = generation_setting_t<decltype(member)>;
    const py::object value = kwargs[info.name];
    try {
      s.*member = value.cast<T>();
    } catch (const py::cast_error&) {
      throw py::type_error(fmt::format("{}(): {} must be {}, got {}", caller, info.name, python_type_name<T>(),
                                       Py_TYPE(value.ptr())->tp_name));
    }
  });
  if (read != kwargs.size())
    for (const auto& [key, value] : kwargs) {
      const std::string name = py::str(key);
      bool listed = false;
      for_each_generation_setting([&](const GenerationSettingInfo& info, auto) { listed |= name == info.name; });
      if (!listed) throw py::type_error(fmt::format("{}() got an unexpected keyword argument '{}'", caller, name));
    }
  return s;
}

std::string settings_doc() {
  std::string doc;
  const GenerationSettings defaults;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) {
    using T = generation_setting_t<decltype(member)>;
    doc += fmt::format("  {} ({}, default {}): {}\n", info.name, python_type_name<T>(),
                       std::string(py::repr(py::cast(defaults.*member))), info.doc);
  });
  return doc;
}

void bind_settings(py::module_& m) {
  register_tessera_error(m);
  m.def(
      "generation_settings_fields",
      [] {
        py::list out;
        const GenerationSettings defaults;
        for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) {
          using T = generation_setting_t<decltype(member)>;
          out.append(py::make_tuple(info.name, python_type_name<T>(), defaults.*member, info.doc));
        });
        return out;
      },
      "Every generation setting: (name, type, default, doc), in the list's order.");
  m.def(
      "generation_settings",
      [](const py::kwargs& kwargs) { return settings_to_python(settings_from_python(kwargs, "generation_settings")); },
      "Every generation setting as the runtime reads the given ones (the others at their defaults).");
}
