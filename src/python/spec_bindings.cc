// Python bindings of the HF config.json reader:
//
//   _tessera.spec_from_hf_config(json_text, file="config.json") -> str
//       ModelSpec of the config as JSON text (model_spec_to_json field names);
//       `file` names the source in error messages. Invalid JSON and every
//       problem spec_from_hf_config reports raise TesseraError.
#include <string>

#include <nlohmann/json.hpp>

#include "bindings.h"
#include "core/error.h"
#include "core/model_spec_json.h"
#include "model/architectures.h"

namespace py = pybind11;

void bind_spec(py::module_& m) {
  using namespace tessera;
  register_tessera_error(m);

  m.def(
      "spec_from_hf_config",
      [](const std::string& json_text, const std::string& file) {
        py::gil_scoped_release release;
        nlohmann::json config;
        try {
          config = nlohmann::json::parse(json_text);
        } catch (const nlohmann::json::exception& e) {
          fail(file, "", "invalid JSON: {}", e.what());
        }
        return model_spec_to_json(spec_from_hf_config(config, file))
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      },
      py::arg("json_text"), py::arg("file") = "config.json",
      "ModelSpec (as JSON text) of a Hugging Face config.json given as text.");
}
