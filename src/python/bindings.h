// Shared by the src/python/*.cc files that together make the _tessera module:
// the bind_* function each file defines (module.cc calls them all) and the
// Python exception every tessera::Error becomes.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include <tessera/generation_settings.hpp>

#include "core/error.h"

// _tessera.TesseraError (a ValueError subclass), with a translator for every
// tessera::Error thrown inside the module. Idempotent: each bind_* that raises
// tessera::Error may call it, in any order.
inline void register_tessera_error(pybind11::module_& m) {
  if (!pybind11::hasattr(m, "TesseraError"))
    pybind11::register_exception<tessera::Error>(m, "TesseraError", PyExc_ValueError);
}

void bind_gguf(pybind11::module_& m);           // gguf_bindings.cc
void bind_spec(pybind11::module_& m);           // spec_bindings.cc
void bind_chat_template(pybind11::module_& m);  // chat_template_bindings.cc
void bind_tokenizer(pybind11::module_& m);      // tokenizer_bindings.cc
void bind_model(pybind11::module_& m);          // model_bindings.cc
void bind_engine(pybind11::module_& m);         // engine_bindings.cc
void bind_settings(pybind11::module_& m);       // settings_bindings.cc
void bind_media(pybind11::module_& m);          // media_bindings.cc

// The generation settings named in `kwargs`, each cast to its type, the
// others at their defaults: how every binding that takes settings reads them.
// A name that is not a setting or a value of another type raises TypeError
// naming `caller` and the setting.
tessera::GenerationSettings settings_from_python(const pybind11::dict& kwargs, const char* caller);
// One line per setting (name, type, default, doc), for docstrings.
std::string settings_doc();
