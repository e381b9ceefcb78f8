// The C API's engine options reach the engine: the prefix cache's disk tier
// set from C serves a second engine (a restart) from the first one's files.
#include "tessera/tessera.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/temp_dir_for_tests.h"
#include "sources/tiny_chat_model_for_tests.h"

namespace tessera {
namespace {

// One request on a fresh engine: `setup` fills it, `read` sees its result
// (not called when a call failed, which the test reports).
template <class Setup, class Read>
void run_one_request(const std::string& model, const tessera_engine_options& options, Setup setup, Read read) {
  tessera_engine* e = tessera_engine_create(model.c_str(), &options);
  EXPECT_NE(e, nullptr) << tessera_last_error();
  if (!e) return;
  tessera_request* q = tessera_request_create();
  setup(q);
  tessera_result* r = tessera_engine_generate(e, q, nullptr, nullptr);
  EXPECT_NE(r, nullptr) << tessera_last_error();
  if (r) read(r);
  tessera_result_free(r);
  tessera_request_free(q);
  tessera_engine_free(e);
}

int64_t reused_by_a_new_engine(const std::string& model, const tessera_engine_options& options) {
  int64_t reused = -1;
  run_one_request(
      model, options,
      [](tessera_request* q) {
        tessera_request_add_message(q, "system",
                                    "You are a careful assistant. Answer briefly and check every number twice.");
        tessera_request_add_message(q, "user", "hello");
        tessera_request_set_max_tokens(q, 2);
      },
      [&](const tessera_result* r) { reused = tessera_result_reused_tokens(r); });
  return reused;
}

TEST(CApi, DiskPrefixCacheOptionsReachTheEngine) {
  TempDir dir{"c_api_test"};
  testing::write_tiny_chat_model(dir.path() / "model");
  const std::string model = (dir.path() / "model").string(), store = (dir.path() / "store").string();
  setenv("TESSERA_HOME", (dir.path() / "home").c_str(), 1);  // the model's bundle is cached there
  tessera_engine_options options;
  tessera_engine_options_init(&options);
  EXPECT_EQ(options.prefix_cache_disk_bytes, 0u);
  EXPECT_EQ(options.prefix_cache_dir, nullptr);
  options.prefix_cache_disk_bytes = 16u << 20;
  options.prefix_cache_dir = store.c_str();
  EXPECT_EQ(reused_by_a_new_engine(model, options), 0);
  EXPECT_GE(reused_by_a_new_engine(model, options), 32);  // the system prompt, from the first engine's file
  EXPECT_FALSE(std::filesystem::is_empty(store));
  options.prefix_cache_bytes = 0;  // the disk tier needs the memory tier: a clear error, no engine
  EXPECT_EQ(tessera_engine_create(model.c_str(), &options), nullptr);
  EXPECT_NE(std::string(tessera_last_error()).find("prefix_cache"), std::string::npos) << tessera_last_error();
  unsetenv("TESSERA_HOME");
}

// The load settings set from C: arithmetic and KV type are accepted, the
// fast level's tokens do not depend on the thread count, threads default to
// the physical cores (0), and a bad value is a clear error.
std::vector<int32_t> greedy_tokens(const std::string& model, const tessera_engine_options& options) {
  std::vector<int32_t> out;
  run_one_request(
      model, options,
      [](tessera_request* q) {
        const int32_t prompt[] = {1, 5, 9, 13, 17, 21, 25, 29};
        tessera_request_set_prompt_ids(q, prompt, 8);
        tessera_request_set_max_tokens(q, 12);
      },
      [&](const tessera_result* r) {
        out.assign(tessera_result_tokens(r), tessera_result_tokens(r) + tessera_result_token_count(r));
      });
  return out;
}

TEST(CApi, LoadSettingsReachTheModel) {
  TempDir dir{"c_api_settings_test"};
  testing::write_tiny_chat_model(dir.path() / "model");
  const std::string model = (dir.path() / "model").string();
  setenv("TESSERA_HOME", (dir.path() / "home").c_str(), 1);
  tessera_engine_options options;
  tessera_engine_options_init(&options);
  EXPECT_EQ(options.threads, 0);
  EXPECT_EQ(options.arithmetic, nullptr);
  EXPECT_EQ(options.kv_type, nullptr);
  const std::vector<int32_t> fast = greedy_tokens(model, options);  // the default level
  options.arithmetic = "exact";
  EXPECT_FALSE(greedy_tokens(model, options).empty());
  options.arithmetic = "fast";
  options.threads = 1;
  options.kv_type = "f16";
  EXPECT_FALSE(greedy_tokens(model, options).empty());
  options.kv_type = nullptr;
  EXPECT_FALSE(fast.empty());
  EXPECT_EQ(greedy_tokens(model, options), fast);  // any thread count: the same tokens
  options.arithmetic = "approximate";
  EXPECT_EQ(tessera_engine_create(model.c_str(), &options), nullptr);
  EXPECT_NE(std::string(tessera_last_error()).find("arithmetic"), std::string::npos) << tessera_last_error();
  options.arithmetic = nullptr;
  options.kv_type = "q8";
  EXPECT_EQ(tessera_engine_create(model.c_str(), &options), nullptr);
  EXPECT_NE(std::string(tessera_last_error()).find("kv"), std::string::npos) << tessera_last_error();
  unsetenv("TESSERA_HOME");
}

// The settings struct reaches the engine: every setting at once from C
// (speculation too: lookup drafts keep greedy output), and a bad one is
// refused when the request runs, by name.
TEST(CApi, GenerationSettingsReachTheEngine) {
  struct TinyModelHome {  // the model's bundle is cached in its own TESSERA_HOME
    TempDir dir{"c_api_generation_settings_test"};
    std::string model = (dir.path() / "model").string();
    TinyModelHome() {
      testing::write_tiny_chat_model(model);
      setenv("TESSERA_HOME", (dir.path() / "home").c_str(), 1);
    }
    ~TinyModelHome() { unsetenv("TESSERA_HOME"); }
  } tiny;
  const std::string& model = tiny.model;
  tessera_engine_options options;
  tessera_engine_options_init(&options);
  const int32_t prompt[] = {1, 5, 9, 13, 17, 21, 25, 29, 1, 5, 9, 13};
  auto generate = [&](const tessera_generation_settings& s, std::string* finish) {
    std::vector<int32_t> ids;
    run_one_request(
        model, options,
        [&](tessera_request* q) {
          tessera_request_set_prompt_ids(q, prompt, 12);
          EXPECT_EQ(tessera_request_set_settings(q, &s), 0) << tessera_last_error();
        },
        [&](const tessera_result* r) {
          ids.assign(tessera_result_tokens(r), tessera_result_tokens(r) + tessera_result_token_count(r));
          *finish = tessera_result_finish_reason(r);
        });
    return ids;
  };
  tessera_generation_settings s;
  tessera_generation_settings_init(&s);
  s.max_tokens = 10;
  s.ignore_eos = 1;
  std::string finish;
  const std::vector<int32_t> plain = generate(s, &finish);
  EXPECT_EQ(plain.size(), 10u);
  EXPECT_EQ(finish, "length");
  s.speculative = "lookup";
  s.draft_max = 3;
  s.repeat_last_n = 8;
  s.max_tokens_per_call = 5;
  EXPECT_EQ(generate(s, &finish), plain);

  s.speculative = "eagle";
  tessera_engine* e = tessera_engine_create(model.c_str(), &options);
  ASSERT_NE(e, nullptr) << tessera_last_error();
  tessera_request* q = tessera_request_create();
  tessera_request_set_prompt_ids(q, prompt, 12);
  EXPECT_EQ(tessera_request_set_settings(q, &s), 0);
  EXPECT_EQ(tessera_engine_generate(e, q, nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(tessera_last_error()).find("speculative"), std::string::npos) << tessera_last_error();
  tessera_request_free(q);
  tessera_engine_free(e);
}

// Images from C: tessera_request_add_image attaches to the last message; a
// model without an image encoder, or a MIME type that is no image Tessera
// reads, is an error naming the problem when the request runs.
TEST(CApi, ImagesAreRefusedByName) {
  TempDir dir("c_api_images_test");
  const std::string model = (dir.path() / "model").string();
  testing::write_tiny_chat_model(model);
  setenv("TESSERA_HOME", (dir.path() / "home").c_str(), 1);
  tessera_engine_options options;
  tessera_engine_options_init(&options);
  tessera_engine* e = tessera_engine_create(model.c_str(), &options);
  ASSERT_NE(e, nullptr) << tessera_last_error();
  const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  for (const char* mime : {"image/png", "audio/wav"}) {
    tessera_request* q = tessera_request_create();
    tessera_request_add_message(q, "user", "What is this?");
    EXPECT_EQ(tessera_request_add_image(q, mime, png, sizeof(png)), 0) << tessera_last_error();
    EXPECT_EQ(tessera_engine_generate(e, q, nullptr, nullptr), nullptr);
    const std::string error = tessera_last_error();
    EXPECT_NE(error.find(std::string(mime) == "audio/wav" ? "audio/wav" : "takes no images"), std::string::npos)
        << error;
    tessera_request_free(q);
  }
  EXPECT_EQ(tessera_request_add_image(nullptr, nullptr, png, 1), -1);
  tessera_engine_free(e);
  unsetenv("TESSERA_HOME");
}

}  // namespace
}  // namespace tessera
