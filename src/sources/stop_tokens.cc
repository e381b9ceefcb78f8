#include "sources/stop_tokens.h"

#include <algorithm>

#include "sources/hf_config.h"

namespace tessera {

std::vector<int32_t> stop_token_ids(const ModelSource& src, std::optional<int32_t> tokenizer_eos) {
  std::vector<int64_t> ids = src.spec.eos_token_ids;
  if (src.format == SourceFormat::HfDirectory)
    if (auto gen = hf_generation_eos_token_ids(src.path)) ids = *gen;
  if (tokenizer_eos) ids.push_back(*tokenizer_eos);
  std::vector<int32_t> out;
  for (int64_t id : ids)
    if (id >= 0 && id < src.spec.vocab_size && std::find(out.begin(), out.end(), id) == out.end())
      out.push_back(static_cast<int32_t>(id));
  return out;
}

}  // namespace tessera
