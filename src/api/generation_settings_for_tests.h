// For the door tests of the generation settings
// (include/tessera/generation_settings.hpp): a value off its default for
// every setting, which each door must deliver, and the settings in which two
// GenerationSettings differ.
#pragma once

#include <string>
#include <vector>

#include <tessera/generation_settings.hpp>

namespace tessera::testing {

// Every setting off its default (generation_settings_test.cc checks that no
// setting was left out), at values every door accepts and carries exactly:
// within the server's ranges, floats with short exact decimal forms, a
// speculative mode that names no file.
inline GenerationSettings off_default_settings() {
  GenerationSettings s;
  s.max_tokens = 7;
  s.temperature = 0.5f;
  s.top_p = 0.875f;
  s.min_p = 0.0625f;
  s.repeat_penalty = 1.25f;
  s.top_k = 40;
  s.repeat_last_n = 32;
  s.seed = 12345;
  s.stop = {"END", "\n\n"};
  s.ignore_eos = true;
  s.max_tokens_per_call = 16;
  s.speculative = "lookup";
  s.draft_max = 4;
  // A request takes at most one constraint: a door that runs these
  // settings keeps json_schema alone.
  s.json_schema = R"({"type": "integer"})";
  s.grammar = R"(root ::= "yes" | "no")";
  s.regex = "[a-z]+";
  s.structural_tag = R"({"type": "structural_tag", "format": {"type": "const_string", "value": "ok"}})";
  return s;
}

// The names of the settings in which a and b differ, in the list's order.
inline std::vector<std::string> differing_settings(const GenerationSettings& a, const GenerationSettings& b) {
  std::vector<std::string> out;
  for_each_generation_setting([&](const GenerationSettingInfo& info, auto member) {
    if (!(a.*member == b.*member)) out.push_back(info.name);
  });
  return out;
}

}  // namespace tessera::testing
