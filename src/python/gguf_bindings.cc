// Python bindings of the GGUF reader, the ggml dequantizer and spec_from_gguf:
// what the parity tests use to compare Tessera with gguf-py and transformers.
//
//   _tessera.dequantize(type_name, raw: bytes, n_elems) -> float32 ndarray
//   _tessera.GgufFile(path): .path .version .alignment .data_offset
//       .metadata   dict key -> value (arrays as lists, strings as str)
//       .tensors    list of (name, dtype name, shape tuple outermost first)
//       .tensor_info(name) -> dict(dtype, shape, offset (absolute), nbytes)
//       .dequantize(name) -> float32 ndarray shaped outermost first
//       .spec()     ModelSpec as a dict (model_spec_to_json field names)
//   _tessera.TesseraError (a ValueError): every tessera::Error.
#include <cstring>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/error.h"
#include "core/ggml_dequant.h"
#include "core/model_spec_json.h"
#include "model/architectures.h"
#include "sources/gguf.h"

namespace py = pybind11;

namespace tessera {
namespace {

// Strings in GGUF are meant to be UTF-8; invalid bytes survive as surrogates
// rather than failing the whole metadata dict.
py::str to_py_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// numpy dtype of an array element type (explicitly little-endian, as stored).
const char* numpy_dtype(GgufType t) {
  switch (t) {
    case GgufType::U8: return "<u1";
    case GgufType::I8: return "<i1";
    case GgufType::U16: return "<u2";
    case GgufType::I16: return "<i2";
    case GgufType::U32: return "<u4";
    case GgufType::I32: return "<i4";
    case GgufType::F32: return "<f4";
    case GgufType::BOOL: return "?";
    case GgufType::U64: return "<u8";
    case GgufType::I64: return "<i8";
    case GgufType::F64: return "<f8";
    default: return nullptr;
  }
}

py::object to_py(const GgufValue& v) {
  switch (v.type()) {
    case GgufType::STRING: return to_py_str(*v.as_string());
    case GgufType::BOOL: return py::bool_(*v.as_bool());
    case GgufType::F32:
    case GgufType::F64: return py::float_(*v.as_float());
    case GgufType::ARRAY: break;
    default:  // integers
      if (auto u = v.as_uint()) return py::int_(*u);
      return py::int_(*v.as_int());
  }
  if (const auto* strings = v.as_string_array()) {
    py::list out(strings->size());
    for (size_t i = 0; i < strings->size(); ++i) out[i] = to_py_str((*strings)[i]);
    return out;
  }
  if (const auto* nested = v.as_nested_array()) {
    py::list out(nested->size());
    for (size_t i = 0; i < nested->size(); ++i) out[i] = to_py((*nested)[i]);
    return out;
  }
  // Numbers and bools: view the stored bytes as a numpy array, then list().
  const auto bytes = v.array_bytes();
  const std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(v.size())};
  py::array arr(py::dtype(numpy_dtype(v.element_type())), shape);
  if (!bytes.empty()) std::memcpy(arr.mutable_data(), bytes.data(), bytes.size());
  return arr.attr("tolist")();
}

const TensorView& tensor_or_throw(const GgufFile& f, const std::string& name) {
  const TensorView* t = f.find_tensor(name);
  if (t == nullptr) fail(f.path(), fmt::format("tensor '{}'", name), "no such tensor");
  return *t;
}

py::array_t<float> dequantize_to_numpy(const TensorView& t) {
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  py::array_t<float> out(shape);
  std::vector<float> values;
  {
    py::gil_scoped_release release;
    values = dequantize(t);
  }
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(float));
  return out;
}

}  // namespace
}  // namespace tessera

void bind_gguf(py::module_& m) {
  using namespace tessera;
  if (!py::hasattr(m, "TesseraError"))
    py::register_exception<Error>(m, "TesseraError", PyExc_ValueError);

  m.def(
      "dequantize",
      [](const std::string& type_name, const py::bytes& raw, uint64_t n_elems) {
        const std::optional<DType> t = dtype_from_name(type_name);
        if (!t) fail("", "dequantize", "unknown format '{}'", type_name);
        const std::string_view data = raw;
        const std::optional<uint64_t> need = dtype_bytes(*t, n_elems);
        if (!need) fail("", "dequantize", "{} elements are not a whole number of {} blocks", n_elems, type_name);
        if (*need != data.size())
          fail("", "dequantize", "{} {} elements need {} bytes, got {}", n_elems, type_name, *need, data.size());
        py::array_t<float> out(static_cast<py::ssize_t>(n_elems));
        {
          py::gil_scoped_release release;
          dequantize_row(*t, reinterpret_cast<const uint8_t*>(data.data()), out.mutable_data(), n_elems);
        }
        return out;
      },
      py::arg("type_name"), py::arg("raw"), py::arg("n_elems"),
      "Dequantizes raw ggml blocks of format type_name (e.g. 'Q4_K') to float32.");

  py::class_<GgufFile>(m, "GgufFile")
      .def(py::init([](const std::string& path) { return GgufFile::open(path); }), py::arg("path"))
      .def_property_readonly("path", &GgufFile::path)
      .def_property_readonly("version", &GgufFile::version)
      .def_property_readonly("alignment", &GgufFile::alignment)
      .def_property_readonly("data_offset", &GgufFile::data_offset)
      .def_property_readonly("metadata",
                             [](const GgufFile& f) {
                               py::dict d;
                               for (const auto& [key, value] : f.metadata()) d[to_py_str(key)] = to_py(value);
                               return d;
                             })
      .def_property_readonly("tensors",
                             [](const GgufFile& f) {
                               py::list out;
                               for (const TensorView& t : f.tensors()) {
                                 py::tuple shape(t.shape.size());
                                 for (size_t i = 0; i < t.shape.size(); ++i) shape[i] = py::int_(t.shape[i]);
                                 out.append(py::make_tuple(to_py_str(t.name), std::string(dtype_name(t.dtype)), shape));
                               }
                               return out;
                             })
      .def("tensor_info",
           [](const GgufFile& f, const std::string& name) {
             const TensorView& t = tensor_or_throw(f, name);
             py::dict d;
             d["dtype"] = std::string(dtype_name(t.dtype));
             d["shape"] = py::tuple(py::cast(t.shape));
             d["offset"] = static_cast<uint64_t>(t.data - f.file()->data());
             d["nbytes"] = t.nbytes;
             return d;
           })
      .def("dequantize",
           [](const GgufFile& f, const std::string& name) { return dequantize_to_numpy(tensor_or_throw(f, name)); },
           py::arg("name"))
      .def("spec", [](const GgufFile& f) {
        const std::string json = model_spec_to_json(spec_from_gguf(f)).dump();
        return py::module_::import("json").attr("loads")(json);
      });
}
