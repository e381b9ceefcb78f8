// Python bindings of the Tessera core (pybind11).
#include <pybind11/pybind11.h>

#include "bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera core bindings";
  m.attr("__version__") = TESSERA_VERSION;
  bind_gguf(m);
  bind_spec(m);
  bind_chat_template(m);
  bind_tokenizer(m);
  bind_model(m);
  bind_engine(m);
  bind_settings(m);
  bind_media(m);
}
