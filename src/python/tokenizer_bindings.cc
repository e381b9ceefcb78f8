// Python bindings of the tokenizer: what the parity tests compare with
// Hugging Face tokenizers / transformers.
//
//   _tessera.Tokenizer.from_file(path)   GGUF, tokenizer.json, or a directory
//       .encode(text, add_special_tokens=True) -> list[int]
//       .decode(ids) -> str
//       .token_to_piece(id) -> str;  .vocab_size;  .kind;  .bos_id;  .eos_id
//       .stream_decode(ids) -> list[str]   the chunks the streaming
//                                          detokenizer emits, one call per id
//   Errors raise _tessera.TesseraError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/error.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace py = pybind11;

namespace {

py::str utf8_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

}  // namespace

void bind_tokenizer(py::module_& m) {
  if (!py::hasattr(m, "TesseraError"))
    py::register_exception<tessera::Error>(m, "TesseraError", PyExc_ValueError);
  using tessera::tok::Tokenizer;
  py::class_<Tokenizer>(m, "Tokenizer")
      .def_static("from_file", &Tokenizer::from_file, py::arg("path"))
      .def(
          "encode",
          [](const Tokenizer& t, const std::string& text, bool add_special) {
            py::gil_scoped_release release;
            return t.encode(text, add_special);
          },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def("decode", [](const Tokenizer& t, const std::vector<int32_t>& ids) { return utf8_str(t.decode(ids)); },
           py::arg("ids"))
      .def("token_to_piece", [](const Tokenizer& t, int32_t id) { return utf8_str(std::string(t.token_to_piece(id))); })
      .def("stream_decode",
           [](const Tokenizer& t, const std::vector<int32_t>& ids) {
             tessera::tok::StreamingDetokenizer d(t);
             std::vector<py::str> chunks;
             for (int32_t id : ids) chunks.push_back(utf8_str(d.push(id)));
             chunks.push_back(utf8_str(d.finish()));
             return chunks;
           })
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def_property_readonly("kind", &Tokenizer::kind)
      .def_property_readonly("bos_id", &Tokenizer::bos_id)
      .def_property_readonly("eos_id", &Tokenizer::eos_id);
}
