// _tessera.Engine: the engine (engine/engine.h) for Python; python/tessera/engine.py
// wraps it with keyword arguments, type hints and a result dataclass.
//
//   e = _tessera.Engine(model, threads, slots, queue_capacity, context_length, kv_type, reference, prefix_cache_mb,
//                        prefix_cache_disk_mb, prefix_cache_dir)
//   h = e.submit(prompt, messages_json, prompt_ids, settings, images=[bytes, ...])  -> GenerationHandle
//       settings: {name: value} of generation settings (settings_bindings.cc), the others at their defaults
//   h.result() -> dict   (waits, GIL released)
//   for piece in h: ...  (text pieces as they become final, GIL released while waiting)
//   h.cancel()           (also when the handle is garbage-collected before the end)
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "engine/chat_reply_format.h"
#include "engine/engine.h"
#include "engine/generation_channel.h"
#include "generation/tool_calls.h"

#include <atomic>

#include <fmt/format.h>

namespace py = pybind11;
using namespace tessera;

namespace {

struct GenerationHandle {
  std::shared_ptr<engine::GenerationChannel> channel;
  std::optional<engine::Result> result;  // once taken from the channel
  engine::ChatReplyFormat format;  // submit_chat: the reply is parsed (tools, reasoning)
  std::string reply_id;  // the calls' ids are call_<its tail>_<n>
  std::optional<ChatReplyStream> deltas;  // next_deltas(): the reply read as it streams
  bool deltas_done = false;

  ~GenerationHandle() {
    if (channel && !result) channel->cancel();
  }

  const engine::Result& wait() {
    if (!result) {
      py::gil_scoped_release release;
      while (channel->next_text()) {
      }
      result = channel->result();
    }
    return *result;
  }
};

py::str text_of(const std::string& s) { return py::bytes(s).attr("decode")("utf-8", "replace"); }

// A streamed reply's delta as {"reasoning", "content"} or a call's piece
// {"index", "id", "name", "arguments"} (id and name on its first piece only).
py::dict delta_dict(const ToolReplyDelta& d) {
  py::dict out;
  if (!d.reasoning.empty()) {
    out["reasoning"] = text_of(d.reasoning);
  } else if (d.index < 0) {
    out["content"] = text_of(d.content);
  } else {
    out["index"] = d.index;
    if (!d.id.empty()) {
      out["id"] = d.id;
      out["name"] = d.name;
    }
    out["arguments"] = text_of(d.arguments);
  }
  return out;
}

py::dict to_dict(const engine::Result& r, const engine::ChatReplyFormat* format = nullptr,
                 const std::string& reply_id = "") {
  py::dict d;
  d["ids"] = r.generation.ids;
  d["text"] = py::bytes(r.generation.text).attr("decode")("utf-8", "replace");
  d["finish_reason"] = r.generation.finish_reason;
  d["prompt_tokens"] = r.prompt_tokens;
  d["reused_tokens"] = r.reused_tokens;
  d["reuse_note"] = r.reuse_note;
  d["reused_from"] = r.reused_from;
  d["ttft_ms"] = r.generation.ttft_ms;
  d["prefill_tok_s"] = r.generation.prefill_tok_s();
  d["decode_tok_s"] = r.generation.decode_tok_s();
  py::list calls;
  d["reasoning"] = py::str("");
  if (format && format->parses()) {
    const ToolReply reply = format->parse(r.generation.text, reply_id);
    d["text"] = text_of(reply.content);
    d["reasoning"] = text_of(reply.reasoning);
    for (const ToolCall& c : reply.calls) {
      py::dict call;
      call["id"] = c.id;
      call["name"] = c.name;
      call["arguments"] = text_of(c.arguments);
      calls.append(call);
    }
  }
  d["tool_calls"] = calls;
  return d;
}

}  // namespace

void bind_engine(py::module_& m) {
  register_tessera_error(m);

  py::class_<GenerationHandle>(m, "GenerationHandle")
      .def("__iter__", [](GenerationHandle& h) -> GenerationHandle& { return h; })
      .def("__next__",
           [](GenerationHandle& h) -> py::object {
             if (h.result) throw py::stop_iteration();
             std::optional<std::string> text;
             {
               py::gil_scoped_release release;
               text = h.channel->next_text();
             }
             if (!text) {
               h.wait();  // rethrows the request's error
               throw py::stop_iteration();
             }
             return py::bytes(*text).attr("decode")("utf-8", "replace");
           })
      .def("next_deltas",
           [](GenerationHandle& h) -> py::list {
             // The next text read as deltas (possibly none yet); the
             // reply's last deltas once it has ended; StopIteration after.
             if (h.deltas_done) throw py::stop_iteration();
             if (!h.deltas) h.deltas.emplace(h.format.stream(h.reply_id));
             std::optional<std::string> text;
             {
               py::gil_scoped_release release;
               text = h.channel->next_text();
             }
             std::vector<ToolReplyDelta> deltas;
             if (text) {
               deltas = h.deltas->push(*text);
             } else {
               h.wait();  // rethrows the request's error
               deltas = h.deltas->finish();
               h.deltas_done = true;
             }
             py::list out;
             for (const ToolReplyDelta& d : deltas) out.append(delta_dict(d));
             return out;
           })
      .def("result", [](GenerationHandle& h) { return to_dict(h.wait(), &h.format, h.reply_id); })
      .def("cancel", [](GenerationHandle& h) { h.channel->cancel(); });

  py::class_<engine::Engine>(m, "Engine")
      .def(py::init([](const std::string& model, int threads, int slots, int queue_capacity, int64_t context_length,
                       const std::string& kv_type, bool reference, uint64_t prefix_cache_mb,
                       uint64_t prefix_cache_disk_mb, const std::string& prefix_cache_dir,
                       const std::string& arithmetic, const std::string& mmproj) {
             engine::EngineOptions o;
             o.mmproj = mmproj;
             o.load.threads = threads;
             o.load.kv_type = parse_kv_type(kv_type);
             o.load.arithmetic = parse_arithmetic(arithmetic);
             o.slots = slots;
             o.queue_capacity = queue_capacity;
             o.context_length = context_length;
             o.reference = reference;
             o.prefix_cache_bytes = prefix_cache_mb << 20;
             o.prefix_cache_disk_bytes = prefix_cache_disk_mb << 20;
             o.prefix_cache_dir = prefix_cache_dir;
             py::gil_scoped_release release;
             return engine::Engine::load(model, o);
           }),
           py::arg("model"), py::arg("threads") = 0, py::arg("slots") = 1, py::arg("queue_capacity") = 16,
           py::arg("context_length") = 0, py::arg("kv_type") = "f32", py::arg("reference") = false,
           py::arg("prefix_cache_mb") = 256, py::arg("prefix_cache_disk_mb") = 0, py::arg("prefix_cache_dir") = "",
           py::arg("arithmetic") = "fast", py::arg("mmproj") = "")
      .def(
          "submit",
          [](engine::Engine& e, std::optional<std::string> prompt, std::optional<std::string> messages_json,
             std::vector<int32_t> prompt_ids, const py::dict& settings, const std::vector<py::bytes>& images) {
            engine::Request r;
            r.prompt = std::move(prompt);
            r.prompt_ids = std::move(prompt_ids);
            for (const py::bytes& b : images) r.images.push_back(std::string(b));
            if (messages_json) {
              r.messages = nlohmann::ordered_json::parse(*messages_json, nullptr, false);
              if (r.messages->is_discarded()) fail("request", "messages", "not valid JSON");
            }
            r.settings = settings_from_python(settings, "submit");
            auto h = std::make_unique<GenerationHandle>();
            h->channel = std::make_shared<engine::GenerationChannel>();
            engine::GenerationChannel::attach(h->channel, r);
            h->channel->set_future(e.submit(std::move(r)));
            return h;
          },
          py::arg("prompt"), py::arg("messages_json"), py::arg("prompt_ids"), py::arg("settings"),
          py::arg("images") = std::vector<py::bytes>{}, py::keep_alive<0, 1>())
      .def(
          "submit_chat",
          [](engine::Engine& e, const std::string& messages_json, const std::string& tools_json,
             const std::string& tool_choice_json, bool parallel, const py::dict& settings,
             const std::string& template_kwargs_json, bool split_reasoning) {
            engine::Request r;
            auto parse = [](const std::string& text, const char* what) {
              nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
              if (j.is_discarded()) fail("request", what, "not valid JSON");
              return j;
            };
            const nlohmann::ordered_json choice = parse(tool_choice_json, "tool_choice"), parallel_json = parallel;
            const nlohmann::ordered_json tools = parse(tools_json, "tools");
            std::optional<ToolRequest> tool_request = ToolRequest::parse(tools, &choice, &parallel_json);
            if (tool_request->tools.empty()) tool_request.reset();
            r.messages = parse(messages_json, "messages");
            r.template_extra = parse(template_kwargs_json, "chat_template_kwargs");
            if (!r.template_extra.is_object()) fail("request", "chat_template_kwargs", "must be an object");
            r.settings = settings_from_python(settings, "chat");
            auto h = std::make_unique<GenerationHandle>();
            h->format = engine::prepare_chat_reply(e.model(), r, tool_request, split_reasoning);
            static std::atomic<uint64_t> replies{0};
            h->reply_id = fmt::format("chatcmpl-py{:x}", ++replies);
            h->channel = std::make_shared<engine::GenerationChannel>();
            engine::GenerationChannel::attach(h->channel, r);
            h->channel->set_future(e.submit(std::move(r)));
            return h;
          },
          py::arg("messages_json"), py::arg("tools_json"), py::arg("tool_choice_json"), py::arg("parallel"),
          py::arg("settings"), py::arg("template_kwargs_json") = "{}", py::arg("split_reasoning") = true,
          py::keep_alive<0, 1>())
      .def("reset",
           [](engine::Engine& e) {
             py::gil_scoped_release release;
             e.reset();
           })
      .def_property_readonly("model_path", [](const engine::Engine& e) { return e.model().path(); })
      .def_property_readonly("slots", [](const engine::Engine& e) { return e.options().slots; });
}
