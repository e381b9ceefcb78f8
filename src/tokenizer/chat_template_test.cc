#include "tokenizer/chat_template.h"

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.h"

namespace tessera {
namespace {

// SmolLM2-135M-Instruct's template (GGUF tokenizer.chat_template).
const char* kSmolLM2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
    "' + message['content'] + '<|im_end|>' + '\n"
    "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
    "' }}{% endif %}";

TEST(ChatTemplate, RendersSmolLM2LikeTransformers) {
  const ChatTemplate t = ChatTemplate::parse(kSmolLM2, "smollm2");
  ChatTemplateOptions opt;
  opt.add_generation_prompt = true;
  const std::string out = t.render_json(R"([{"role": "user", "content": "Hi"}])", opt);
  EXPECT_EQ(out,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  opt.add_generation_prompt = false;
  EXPECT_EQ(t.render_json(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])", opt),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n");
}

TEST(ChatTemplate, ContextMatchesRenderJinjaTemplate) {
  const ChatTemplate t = ChatTemplate::parse(
      "{{ bos_token }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ enable_thinking }}|"
      "{% for m in messages %}{{ m | tojson }}{% endfor %}|{{ eos_token is defined }}",
      "ctx");
  ChatTemplateOptions opt;
  opt.bos_token = "<s>";
  opt.extra = nlohmann::ordered_json::parse(R"({"enable_thinking": false})");
  // Reasoning is aliased as transformers does: "thinking" first, "reasoning_content" last.
  EXPECT_EQ(t.render_json(R"([{"role": "assistant", "content": "x", "reasoning": "r"}])", opt),
            "<s>|None|None|False|False|"
            R"({"thinking": "r", "role": "assistant", "content": "x", "reasoning": "r", "reasoning_content": "r"})"
            "|False");
}

TEST(ChatTemplate, ErrorsNameTheTemplate) {
  try {
    ChatTemplate::parse("ok\n{% call upper() %}x{% endcall %}", "model.gguf:tokenizer.chat_template");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "model.gguf:tokenizer.chat_template");
    EXPECT_EQ(e.subject(), "line 2, column 4");
    EXPECT_NE(e.problem().find("unsupported Jinja feature"), std::string::npos);
  }
  const ChatTemplate t = ChatTemplate::parse("{{ messages }}", "t");
  EXPECT_THROW(t.render_json("{", {}), Error);
  EXPECT_THROW(t.render_json("[1]", {}), Error);
  EXPECT_THROW(t.render_json("{}", {}), Error);
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() / ("tessera_chat_" + std::to_string(::getpid()) + "_" +
                                                      std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path_ / name) << text; }

 private:
  std::filesystem::path path_;
  static inline int counter_ = 0;
};

TEST(ChatTemplate, FindsTheTemplateInHfDirectories) {
  TempDir dir;
  EXPECT_EQ(find_chat_template(dir.path().string()), std::nullopt);
  dir.write("tokenizer_config.json", R"({"chat_template": "from config"})");
  EXPECT_EQ(find_chat_template(dir.path().string()), "from config");
  dir.write("chat_template.json", R"({"chat_template": "from json"})");
  EXPECT_EQ(find_chat_template(dir.path().string()), "from json");
  dir.write("chat_template.jinja", "from jinja");
  EXPECT_EQ(find_chat_template(dir.path().string()), "from jinja");
  EXPECT_EQ(find_chat_template((dir.path() / "tokenizer_config.json").string()), "from config");

  TempDir named;
  named.write("tokenizer_config.json",
              R"({"chat_template": [{"name": "tool_use", "template": "t"}, {"name": "default", "template": "d"}]})");
  EXPECT_EQ(find_chat_template(named.path().string()), "d");
  named.write("tokenizer_config.json", R"({"chat_template": 3})");
  EXPECT_THROW(find_chat_template(named.path().string()), Error);
  EXPECT_THROW(find_chat_template((named.path() / "missing").string()), Error);
}

}  // namespace
}  // namespace tessera
