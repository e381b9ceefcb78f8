// Python bindings of the chat template renderer (what the parity tests compare
// with transformers):
//
//   _tessera.render_chat_template(template, messages_json, add_generation_prompt=False,
//                                 extra_json="{}", origin="chat_template", max_iterations=0) -> str
//       Renders `template` with the messages (a JSON array) and the extra
//       template variables (a JSON object: bos_token, eos_token, tools,
//       enable_thinking, ...); max_iterations > 0 lowers the loop/macro-call
//       bound (RenderLimits) for tests. Unsupported template features, raise_exception
//       and bad input raise TesseraError.
//   _tessera.tool_call_style(template) -> "hermes" | "generic"
//   _tessera.tool_calling_messages(template, messages_json, tools_json, tool_choice_json) -> (messages_json, extra_json)
//   _tessera.parse_tool_reply(template, text, tools_json, tool_choice_json) -> (content, [(id, name, arguments)])
//       Tool calling (generation/tool_calls.h) in the style of `template`:
//       the conversation as the template sees it, and a reply parsed.
//   _tessera.find_chat_template(path) -> str | None
//   _tessera.builtin_chat_template(architecture) -> str | None
//       The fallback template for models whose files carry none ("gemma3").
#include <optional>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/error.h"
#include "model/architectures.h"
#include "generation/tool_calls.h"
#include "tokenizer/chat_template.h"

namespace py = pybind11;

void bind_chat_template(py::module_& m) {
  using namespace tessera;
  if (!py::hasattr(m, "TesseraError")) py::register_exception<Error>(m, "TesseraError", PyExc_ValueError);

  auto calling = [](const std::string& source, const std::string& tools_json, const std::string& tool_choice_json) {
    const ChatTemplate tpl = ChatTemplate::parse(source, "chat_template");
    const nlohmann::ordered_json choice = nlohmann::ordered_json::parse(tool_choice_json);
    return ToolCalling(tool_call_style_of(&tpl), ToolRequest::parse(nlohmann::ordered_json::parse(tools_json), &choice, nullptr));
  };
  m.def("tool_call_style", [](const std::string& source) {
    const ChatTemplate tpl = ChatTemplate::parse(source, "chat_template");
    return std::string(tool_call_style_name(tool_call_style_of(&tpl)));
  });
  m.def("tool_calling_messages", [calling](const std::string& source, const std::string& messages_json,
                                            const std::string& tools_json, const std::string& tool_choice_json) {
    const ToolCalling tc = calling(source, tools_json, tool_choice_json);
    const ChatTemplate tpl = ChatTemplate::parse(source, "chat_template");
    return std::make_pair(tc.messages(nlohmann::ordered_json::parse(messages_json), call_message_form_of(&tpl)).dump(),
                          tc.template_extra().dump());
  });
  m.def("parse_tool_reply", [calling](const std::string& source, const std::string& text, const std::string& tools_json,
                                      const std::string& tool_choice_json) {
    const ToolReply r = calling(source, tools_json, tool_choice_json).parse(text, "chatcmpl-test");
    std::vector<std::tuple<std::string, std::string, std::string>> calls;
    for (const ToolCall& c : r.calls) calls.emplace_back(c.id, c.name, c.arguments);
    return std::make_pair(r.content, calls);
  });

  m.def(
      "render_chat_template",
      [](const std::string& source, const std::string& messages_json, bool add_generation_prompt,
         const std::string& extra_json, const std::string& origin, uint64_t max_iterations) {
        py::gil_scoped_release release;
        const ChatTemplate tpl = ChatTemplate::parse(source, origin);
        ChatTemplateOptions opt;
        opt.add_generation_prompt = add_generation_prompt;
        if (max_iterations) opt.limits.max_iterations = max_iterations;
        try {
          opt.extra = nlohmann::ordered_json::parse(extra_json);
        } catch (const nlohmann::json::exception& e) {
          fail(origin, "extra", "invalid JSON: {}", e.what());
        }
        return tpl.render_json(messages_json, opt);
      },
      py::arg("template"), py::arg("messages_json"), py::arg("add_generation_prompt") = false,
      py::arg("extra_json") = "{}", py::arg("origin") = "chat_template", py::arg("max_iterations") = 0);

  m.def(
      "find_chat_template",
      [](const std::string& path) {
        py::gil_scoped_release release;
        return find_chat_template(path);
      },
      py::arg("path"));
  m.def(
      "builtin_chat_template",
      [](const std::string& arch) -> std::optional<std::string> {
        const model::ArchitectureUnit* unit = model::find_architecture(arch);
        if (unit == nullptr) fail("builtin_chat_template", arch, "unknown architecture");
        if (unit->builtin_chat_template == nullptr) return std::nullopt;
        return std::string(unit->builtin_chat_template);
      },
      py::arg("architecture"));
}
