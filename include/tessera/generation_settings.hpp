// The generation settings: the one list of what a request can set about how
// its text is generated, declared here once and read by every front door.
//
//   tessera::GenerationSettings s;      // every field at its default
//   s.temperature = 0.8f;
//   s.stop = {"\n\n"};
//
// Each X(type, name, default, doc) line below declares one setting: its C++
// type, its name (the same at every door unless the door says otherwise),
// its default and the line of documentation every door shows. From the list
// come this struct (the C++ API's Request derives from it), the C API's
// tessera_generation_settings (checked field by field against it when the
// library is built), Python's tessera.GenerationSettings and the keyword
// arguments of Engine.generate / stream and Session.generate, the flags of
// `tessera run` / `tessera chat`, and the fields `tessera serve` reads (each
// door names a setting it leaves out and why). The door tests
// (src/api/generation_settings_test.cc, src/server/completion_request_test.cc,
// src/cli/generation_flags_test.cc, tests/python/test_generation_settings.py)
// set every setting to a value off its default at each door and check that
// it arrives. Adding a setting: add its line here, its field to
// tessera_generation_settings (include/tessera/tessera.h), its flag
// (src/cli/generation_flags.cc), its JSON field or the reason it has none
// (src/server/completion_request.cc) and its value off the default in
// src/api/generation_settings_for_tests.h; the build and the door tests
// name whatever is missing.
//
// The ranges in the doc lines are checked by make_generate_options
// (src/generation/generate.h) whichever door a request comes through (the
// server first applies OpenAI's narrower ones, e.g. temperature <= 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// X(type, name, default, doc), in the order every door lists the settings.
#define TESSERA_GENERATION_SETTINGS(X)                                                                             \
  X(int64_t, max_tokens, 128, "Tokens to generate at most (>= 1)")                                                 \
  X(float, temperature, 0.0f, "Sampling temperature (>= 0; 0 = greedy)")                                           \
  X(float, top_p, 1.0f, "Nucleus sampling mass, in (0, 1] (1 = off)")                                              \
  X(float, min_p, 0.0f, "Drop tokens below min_p x the top probability, in [0, 1] (0 = off)")                      \
  X(float, repeat_penalty, 1.0f, "Repetition penalty (> 0; 1 = off)")                                              \
  X(int64_t, top_k, 0, "Keep the k most likely tokens (>= 0; 0 = off)")                                            \
  X(int64_t, repeat_last_n, 64, "Tokens the repetition penalty looks back over (>= -1; -1 = the whole context)")   \
  X(uint64_t, seed, 0, "Sampling seed (same seed and settings, same output)")                                      \
  X(std::vector<std::string>, stop, {}, "Stop before the first occurrence of any of these strings (none empty)")   \
  X(bool, ignore_eos, false, "Do not stop at end-of-sequence tokens")                                              \
  X(int64_t, max_tokens_per_call, 0, "Prompt tokens per prefill call (>= 0; 0 = the largest program variant)")     \
  X(std::string, speculative, "off",                                                                               \
    "Speculative decoding: off, lookup (verify every prompt-lookup draft), auto (prompt lookup, draft length and " \
    "on/off adapted to the measured acceptance and verify cost) or draft:PATH (a draft model sharing the "         \
    "tokenizer, adapted as auto; draft-all:PATH verifies its every proposal, to measure a drafter; "               \
    "lookup+draft:PATH: prompt lookup's proposal where it has one, else the draft model's, adapted as auto); "     \
    "greedy output is identical to plain decoding")                                                                \
  X(int64_t, draft_max, 8, "Speculative decoding: drafted tokens per verify call at most (1-32)")                 \
  X(std::string, json_schema, "",                                                                                  \
    "Constrain the output to JSON valid against this JSON Schema (its text; compact JSON, no properties beyond "  \
    "those listed unless additionalProperties says so; at most one of the four constraints)")           \
  X(std::string, grammar, "",                                                                                      \
    "Constrain the output to this grammar in llama.cpp's GBNF (root rule `root`; at most one of json_schema, "    \
    "grammar, regex and structural_tag)")                                                                                         \
  X(std::string, regex, "",                                                                                        \
    "Constrain the output to match this regular expression (at most one of json_schema, grammar, regex and "      \
    "structural_tag)")                                                                                            \
  X(std::string, structural_tag, "",                                                                               \
    "Constrain the output with an XGrammar structural tag (its JSON: free text with tagged JSON regions, as tool " \
    "calls use; at most one of json_schema, grammar, regex and structural_tag)")

namespace tessera {

struct GenerationSettings {
#define TESSERA_SETTING_FIELD_(type, name, default_value, doc) type name = default_value;
  TESSERA_GENERATION_SETTINGS(TESSERA_SETTING_FIELD_)
#undef TESSERA_SETTING_FIELD_
};

// What the list says about a setting besides its type and default.
struct GenerationSettingInfo {
  const char* name;
  const char* doc;
};

// Calls f(info, &GenerationSettings::member) for every setting, in the
// list's order: what a door that maps settings by name (a binding, a flag
// parser, a test) iterates over.
template <class F>
constexpr void for_each_generation_setting(F&& f) {
#define TESSERA_SETTING_VISIT_(type, name, default_value, doc) \
  f(GenerationSettingInfo{#name, doc}, &GenerationSettings::name);
  TESSERA_GENERATION_SETTINGS(TESSERA_SETTING_VISIT_)
#undef TESSERA_SETTING_VISIT_
}

// The type of the setting a member pointer of for_each_generation_setting
// points at: generation_setting_t<decltype(member)>.
template <class Member>
struct GenerationSettingType;
template <class T>
struct GenerationSettingType<T GenerationSettings::*> {
  using type = T;
};
template <class Member>
using generation_setting_t = typename GenerationSettingType<Member>::type;

// The number of settings in the list.
inline constexpr int kGenerationSettingCount = [] {
  int n = 0;
  for_each_generation_setting([&](const GenerationSettingInfo&, auto) { ++n; });
  return n;
}();

}  // namespace tessera
