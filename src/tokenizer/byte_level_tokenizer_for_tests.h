// A tiny byte-level BPE tokenizer.json for tests: the 256-character
// alphabet, a few merges, and Qwen-style added tokens (263 <|im_start|>,
// 264 <|im_end|>, both special).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"

namespace tessera::tok {

inline nlohmann::json byte_level_json() {
  using nlohmann::json;
  const auto& t = byte_level_table();
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[t.byte_to_utf8[b]] = b;
  const std::vector<std::string> extra = {"he", "ll", "hell", "hello", "\xC4\xA0w", "\xC4\xA0wo"};
  for (size_t i = 0; i < extra.size(); ++i) vocab[extra[i]] = 256 + static_cast<int>(i);
  vocab["<|im_start|>"] = 263;
  vocab["<|im_end|>"] = 264;
  return {
      {"model", {{"type", "BPE"}, {"vocab", vocab},
                 {"merges", {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "\xC4\xA0w o"}}}},
      {"added_tokens",
       {{{"id", 263}, {"content", "<|im_start|>"}, {"special", true}, {"normalized", false}},
        {{"id", 264}, {"content", "<|im_end|>"}, {"special", true}, {"normalized", false}}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"post_processor", nullptr},
  };
}

}  // namespace tessera::tok
