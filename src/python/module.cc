// Python bindings of the Tessera core (pybind11).
#include <pybind11/pybind11.h>

namespace py = pybind11;

// Defined in gguf_bindings.cc.
void bind_gguf(py::module_& m);

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "Tessera core bindings";
  m.attr("__version__") = TESSERA_VERSION;
  bind_gguf(m);
}
