// Python bindings of the runtime, enough to drive a model token by token and
// compare it with transformers:
//
//   m = _tessera.Model(path, threads=1, chunks=0, prefill_sizes=[], verify=False, isa="", ..., reference=False)
//       path: a bundle, or a GGUF / HF directory / pulled name, run through its cached default bundle
//       (converted on first use, convert/bundle_cache.h) unless reference=True (dequantized to f32)
//       isa: "scalar" (reference kernels), "avx2", "avx512", "amx"; "" = TESSERA_ISA or the best the CPU has
//       (chunks 0 / prefill_sizes []: the bundle's own, else 1 chunk and 8/32/512)
//   m.vocab_size, m.stop_token_ids, m.programs_json(), m.path (the bundle loaded, or the source), m.from_bundle
//   s = _tessera.Session(m, context_length=0)
//   s.forward(ids, all_logits=True, max_tokens_per_call=0, as_decode=False, media=[]) -> float32 ndarray [rows, vocab]
//       (as_decode: Session::forward_as_decode, every row with a decode step's bits; media: a list of
//       (begin, float32 ndarray [rows, hidden], bidirectional) spans of ids whose embeddings are given,
//       runtime/session.h EmbeddedSpan; also a keyword of generate())
//   s.argmax_as_decode(ids, max_tokens_per_call=0) -> [int]: each row's argmax, forward_as_decode without
//       copying the logits out (a greedy verify call)
//   s.generate(ids, max_tokens, **settings)  settings: any generation settings by name (the others at
//              their defaults; include/tessera/generation_settings.hpp, settings_bindings.cc)
//       -> dict {"ids", "text", "finish_reason", "prompt_tokens", "decode_tokens", "decode_seconds",
//                "speculative": {"drafted", "accepted", "verify_calls", "refeeds"}}
//       (settings checked by make_generate_options, as the CLI's; speculative: "off" | "lookup" | "auto",
//       generation/speculative.h)
//   s.length, s.reset(), s.truncate(n) -> bool, s.can_truncate(n), s.rollback(k) -> bool,
//   s.snapshot() -> SessionSnapshot, s.restore(snapshot), s.state_bytes, s.rollback_margin,
//   s.save(path), s.load(path) (state/session_file.h)
//   (state/sequence_state.h: false = the state could not go back there; the session was reset)
//   _tessera.decode_batch([s0, s1, ...], [id0, id1, ...]) -> float32 ndarray [sessions, vocab]
//       one decode step of several sessions of one model in one call (Session::decode_batch)
//   _tessera.calibrate(source, text="", max_tokens=512, threads=1)
//       -> {"ids": [...], "random_ids": bool, "input_moments": {weight name: float32 ndarray [cols]}}
//       (convert/calibration.h; text "" = the built-in calibration text)
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert/calibration.h"
#include "core/error.h"
#include "graph/program.h"
#include "load/draft_models.h"
#include "load/model_loader.h"
#include "generation/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace py = pybind11;

namespace {

// Python's media spans, (begin, ndarray [rows, hidden], bidirectional) each,
// as EmbeddedSpans over copies kept in `values`.
std::vector<tessera::EmbeddedSpan> media_spans(const py::list& media, int64_t hidden,
                                               std::vector<std::vector<float>>& values) {
  std::vector<tessera::EmbeddedSpan> spans;
  values.clear();
  values.reserve(media.size());
  for (const py::handle& item : media) {
    const auto t = item.cast<py::tuple>();
    if (t.size() != 3) tessera::fail("media", "span", "expected (begin, embeddings [rows, hidden], bidirectional)");
    const auto a = t[1].cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
    if (a.ndim() != 2 || a.shape(1) != hidden)
      tessera::fail("media", "span", "embeddings must be [rows, {}] (the model's hidden size)", hidden);
    values.emplace_back(a.data(), a.data() + a.size());
    spans.push_back({t[0].cast<int64_t>(), a.shape(0), values.back().data(), t[2].cast<bool>()});
  }
  return spans;
}

}  // namespace

void bind_model(py::module_& m) {
  using namespace tessera;
  register_tessera_error(m);

  m.def(
      "calibrate",
      [](const std::string& source, const std::string& text, int64_t max_tokens, int threads) {
        Calibration cal;
        {
          py::gil_scoped_release release;
          CalibrationOptions o;
          o.text = text;
          o.max_tokens = max_tokens;
          o.threads = threads;
          cal = calibrate(source, o);
        }
        py::dict moments;
        for (const auto& [name, v] : cal.input_moments)
          moments[py::str(name)] = py::array_t<float>(static_cast<py::ssize_t>(v.size()), v.data());
        py::dict out;
        out["ids"] = cal.ids;
        out["random_ids"] = cal.random_ids;
        out["input_moments"] = moments;
        return out;
      },
      py::arg("source"), py::arg("text") = "", py::arg("max_tokens") = 512, py::arg("threads") = 1);

  py::class_<Model>(m, "Model")
      .def(py::init([](const std::string& path, int threads, int64_t chunks, std::vector<int64_t> prefill_sizes, bool verify,
                       const std::string& isa, int64_t row_block, const std::string& arithmetic, const std::string& kv_type,
                       const std::string& weights_memory, bool reference) {
             py::gil_scoped_release release;
             LoadOptions o;
             if (!isa.empty()) {
               o.isa = isa_from_name(isa);
               if (!o.isa) fail("options", "isa", "unknown level '{}' (expected scalar, avx2, avx512, amx or neon)", isa);
             }
             o.threads = threads;
             o.chunks = chunks;
             o.prefill_sizes = std::move(prefill_sizes);
             o.verify = verify;
             if (row_block >= 0) o.row_block = row_block;
             o.arithmetic = parse_arithmetic(arithmetic);
             o.kv_type = parse_kv_type(kv_type);
             o.weights_memory = parse_file_memory(weights_memory);
             return load_model_for_running(path, o, reference);
           }),
           py::arg("path"), py::arg("threads") = 0, py::arg("chunks") = 0,
           py::arg("prefill_sizes") = std::vector<int64_t>{}, py::arg("verify") = false, py::arg("isa") = "",
           py::arg("row_block") = -1, py::arg("arithmetic") = "fast", py::arg("kv_type") = "f32",
           py::arg("weights_memory") = "auto", py::arg("reference") = false)
      .def_property_readonly("path", &Model::path)
      .def_property_readonly("from_bundle", &Model::from_bundle)
      .def_property_readonly("isa", [](const Model& x) { return x.backend().info().level; })
      .def_property_readonly("arithmetic", [](const Model& x) { return std::string(arithmetic_name(x.arithmetic())); })
      .def_property_readonly("threads", [](const Model& x) { return x.pool().threads(); })
      .def_property_readonly("kv_type", [](const Model& x) { return std::string(kv_type_name(x.kv_type())); })
      .def_property_readonly("weights_memory",
                             [](const Model& x) -> std::optional<std::string> {
                               if (!x.weights_memory()) return std::nullopt;
                               return std::string(file_memory_name(*x.weights_memory()));
                             })
      .def_property_readonly("vocab_size", [](const Model& x) { return x.spec().vocab_size; })
      .def_property_readonly("stop_token_ids", [](const Model& x) { return x.stop_token_ids(); })
      .def(
          "workspace_bytes",
          [](const Model& x, const std::string& program, int64_t rows) {
            const auto& ps = x.programs().programs;
            for (size_t i = 0; i < ps.size(); ++i)
              if (ps[i].name == program) return x.executable(i).buffer_bytes(rows);
            fail("model", "program", "no program named '{}'", program);
          },
          py::arg("program"), py::arg("rows"))
      .def("programs_json", [](const Model& x) {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        for (const Program& p : x.programs().programs) j.push_back(program_to_json(p));
        return j.dump();
      });

  static const std::string generate_doc =
      "Generates up to max_tokens after `ids`; the other generation settings are keyword arguments\n"
      "(those not given at their defaults):\n" +
      settings_doc();
  py::class_<Session>(m, "Session")
      .def(py::init<const Model&, int64_t>(), py::arg("model"), py::arg("context_length") = 0,
           py::keep_alive<1, 2>())
      .def(
          "forward",
          [](Session& s, const std::vector<int32_t>& ids, bool all_logits, int64_t per_call, bool as_decode,
             const py::list& media) {
            std::vector<std::vector<float>> values;
            const std::vector<EmbeddedSpan> spans = media_spans(media, s.model().spec().hidden_size, values);
            std::vector<float> logits;
            {
              py::gil_scoped_release release;
              if (as_decode) {
                if (!all_logits) fail("session", "as_decode", "computes every row's logits: needs all_logits=True");
                if (!spans.empty()) fail("session", "as_decode", "takes no media");
                logits = s.forward_as_decode(ids, per_call);
              } else {
                logits = s.forward(ids, all_logits ? LogitsWanted::All : LogitsWanted::Last, per_call, spans);
              }
            }
            const int64_t vocab = s.model().spec().vocab_size;
            const int64_t rows = static_cast<int64_t>(logits.size()) / vocab;
            py::array_t<float> out({rows, vocab});
            std::copy(logits.begin(), logits.end(), out.mutable_data());
            return out;
          },
          py::arg("ids"), py::arg("all_logits") = true, py::arg("max_tokens_per_call") = 0,
          py::arg("as_decode") = false, py::arg("media") = py::list())
      .def(
          "argmax_as_decode",
          [](Session& s, const std::vector<int32_t>& ids, int64_t per_call) {
            py::gil_scoped_release release;
            s.forward_as_decode(ids, per_call, false);
            return s.greedy_ids();
          },
          py::arg("ids"), py::arg("max_tokens_per_call") = 0)
      .def(
          "generate",
          [](Session& s, const std::vector<int32_t>& ids, int64_t max_tokens, py::kwargs kwargs) {
            std::vector<std::vector<float>> values;
            py::list media;
            if (kwargs.contains("media")) media = kwargs.attr("pop")("media").cast<py::list>();
            GenerationSettings settings = settings_from_python(kwargs, "generate");
            settings.max_tokens = max_tokens;
            GenerateOptions o = make_generate_options(settings);
            o.media = media_spans(media, s.model().spec().hidden_size, values);
            GenerateResult r;
            {
              py::gil_scoped_release release;
              load_draft_model(o, s.model());
              r = generate(s, ids, o);
            }
            py::dict d;
            d["ids"] = r.ids;
            d["text"] = r.text;
            d["finish_reason"] = r.finish_reason;
            d["prompt_tokens"] = r.prompt_tokens;
            d["decode_tokens"] = r.decode_steps;
            d["decode_seconds"] = r.decode_seconds;
            py::dict spec;
            spec["drafted"] = r.speculative.drafted;
            spec["accepted"] = r.speculative.accepted;
            spec["verify_calls"] = r.speculative.verify_calls;
            spec["refeeds"] = r.speculative.refeeds;
            d["speculative"] = spec;
            return d;
          },
          py::arg("ids"), py::arg("max_tokens"), generate_doc.c_str())
      .def_property_readonly("length", &Session::length)
      .def_property_readonly("kv_bytes", [](const Session& x) { return x.kv().bytes_allocated(); })
      .def_property_readonly("state_bytes", [](const Session& x) { return x.state().bytes_allocated(); })
      .def_property_readonly("rollback_margin", [](const Session& x) { return x.state().rollback_margin(); })
      .def("reset", &Session::reset)
      .def("truncate", &Session::truncate)
      .def("can_truncate", &Session::can_truncate)
      .def("rollback", &Session::rollback)
      .def("snapshot", &Session::snapshot)
      .def("save", &Session::save, py::arg("path"))
      .def("load", &Session::load, py::arg("path"))
      .def("restore", &Session::restore);
  m.def(
      "decode_batch",
      [](const std::vector<Session*>& sessions, const std::vector<int32_t>& ids) {
        {
          py::gil_scoped_release release;
          Session::decode_batch(sessions, ids);
        }
        const int64_t vocab = sessions.empty() ? 0 : sessions[0]->model().spec().vocab_size;
        py::array_t<float> out({static_cast<int64_t>(sessions.size()), vocab});
        for (size_t r = 0; r < sessions.size(); ++r)
          std::copy(sessions[r]->logits().begin(), sessions[r]->logits().end(), out.mutable_data() + r * vocab);
        return out;
      },
      py::arg("sessions"), py::arg("ids"));
  py::class_<Session::Snapshot>(m, "SessionSnapshot")
      .def_property_readonly("length", [](const Session::Snapshot& x) { return x.state.length(); });
}
