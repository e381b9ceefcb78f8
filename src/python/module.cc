// Python bindings of the Tessera core (pybind11).
#include <pybind11/pybind11.h>

namespace py = pybind11;

// Defined in gguf_bindings.cc.
void bind_gguf(py::module_& m);
void bind_chat_template(py::module_& m);  // chat_template_bindings.cc
void bind_tokenizer(py::module_& m);  // tokenizer_bindings.cc

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera core bindings";
  m.attr("__version__") = TESSERA_VERSION;
  bind_gguf(m);
  bind_chat_template(m);
  bind_tokenizer(m);
}
