#include "tokenizer/tokenizer_summary.h"

#include <filesystem>

#include "core/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

TokenizerSummary summarize_tokenizer(const std::string& gguf_or_directory) {
  namespace fs = std::filesystem;
  TokenizerSummary t;
  std::error_code ec;
  if (fs::is_directory(gguf_or_directory, ec) && !fs::is_regular_file(fs::path(gguf_or_directory) / "tokenizer.json", ec)) {
    t.kind = "none";
  } else {
    try {
      const tok::Tokenizer tokenizer = tok::Tokenizer::from_file(gguf_or_directory);
      t.model = tokenizer.model();
      t.kind = tokenizer.kind();
      t.vocab_size = static_cast<int64_t>(tokenizer.vocab_size());
    } catch (const Error& e) {
      t.kind = "unsupported: " + e.problem();
    }
  }
  t.has_chat_template = find_chat_template(gguf_or_directory).has_value();
  return t;
}

}  // namespace tessera
