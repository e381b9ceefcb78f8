// The model-loading and sampling flags `tessera run` and `tessera chat` share,
// and the kernel flags of every command that loads a model to run it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "generation/generate.h"
#include "core/cpu_cores.h"
#include "runtime/model.h"

namespace tessera::cli {

// The load settings every command that runs a model shares: -t / --threads
// (LoadOptions::threads; default the machine's physical cores),
// --arithmetic (LoadOptions::arithmetic), --kv-type and --weights-memory.
struct KernelFlags {
  int threads = physical_core_count();
  std::string arithmetic = "fast";
  std::string kv_type = "f32";
  std::string weights_memory = "auto";

  void add_to(CLI::App& cmd);
  // Sets those fields of `o` (throws Error for a bad value).
  void apply(LoadOptions& o) const;
};

// How each generation setting (include/tessera/generation_settings.hpp)
// reaches `tessera run` and `tessera chat`: its flag names, as CLI11 takes
// them. Every setting of the list has one (generation_flags_test.cc sets
// each flag and checks that it arrives); the help text is the list's.
struct SettingFlag {
  const char* setting;
  const char* flags;
};
std::span<const SettingFlag> setting_flags();

struct GenerationFlags {
  std::string model;
  int64_t ctx = 0;         // 0: the model's context length
  int64_t chunks = 0;       // 0: the bundle's own, else 1
  // setting_flags() bind straight to the settings that make_generate_options checks.
  GenerationSettings settings;
  bool verify = false;
  bool reference = false;  // --reference: the source dequantized to f32, not its cached bundle
  KernelFlags kernels;
  std::string system;

  void add_to(CLI::App& cmd);
  // The model to run: a bundle as given; a GGUF / HF directory / pulled name
  // through its cached default bundle (converted on first use), or with
  // --reference dequantized to f32 (convert/bundle_cache.h). Says which on stderr.
  std::unique_ptr<Model> load_model() const;
  GenerateOptions options() const;
};

// Writes generated text to stdout as it arrives (a generate() on_text callback).
bool print_text(std::string_view text);

// "speed: prefill 12 tok (340.1 tok/s) | decode 64 tok (55.2 tok/s) | ttft 35.3 ms | length" on stderr,
// then, when speculative decoding made verify calls, "speculative: 9 verify
// calls | drafted 52 | accepted 47 (90.4%) | refeeds 0".
void print_speed(const GenerateResult& r);

// The --reference flag's help text (run, chat, bench).
inline constexpr const char* kReferenceHelp =
    "GGUF / HF sources: run the source dequantized to f32 (the exact reference computation, slow) instead of "
    "its cached fast bundle";

}  // namespace tessera::cli
