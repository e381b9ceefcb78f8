#include "generation/output_constraint.h"

#include <algorithm>
#include <bit>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>
#include <xgrammar/xgrammar.h>

#include "core/error.h"
#include "runtime/model.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

const char* ConstraintSpec::setting() const {
  switch (kind) {
    case ConstraintKind::JsonSchema: return "json_schema";
    case ConstraintKind::Grammar: return "grammar";
    case ConstraintKind::Regex: return "regex";
    case ConstraintKind::StructuralTag: return "structural_tag";
    case ConstraintKind::None: break;
  }
  return "constraint";
}

// UTF-16 surrogates (U+D800-DFFF, bytes ED A0-BF xx) are no characters,
// but XGrammar 0.2.9's character classes take them as code points, so a
// constrained string could hold one; the detokenizer then writes three
// U+FFFD for it (one per ill-formed byte, as every UTF-8 decoder does), and
// a string of maxLength characters comes out longer. The guard keeps them
// out: a token that holds ED A0-BF is never allowed, and after a token
// that ends in ED (the lead byte of a three-byte character) no token that
// starts with A0-BF is.
struct SurrogateGuard {
  static constexpr uint8_t kNever = 1, kContinuation = 2, kEndsWithEd = 4;
  std::vector<uint8_t> kind;           // by id
  std::vector<int32_t> never;          // ids holding ED A0-BF
  std::vector<int32_t> continuations;  // ids starting with A0-BF

  explicit SurrogateGuard(const std::vector<std::string>& vocab) : kind(vocab.size(), 0) {
    auto high = [](char c) { return static_cast<unsigned char>(c) >= 0xA0 && static_cast<unsigned char>(c) <= 0xBF; };
    for (size_t id = 0; id < vocab.size(); ++id) {
      const std::string& b = vocab[id];
      if (b.empty()) continue;
      for (size_t i = 0; i + 1 < b.size(); ++i)
        if (static_cast<unsigned char>(b[i]) == 0xED && high(b[i + 1])) kind[id] |= kNever;
      if (high(b.front())) kind[id] |= kContinuation;
      if (static_cast<unsigned char>(b.back()) == 0xED) kind[id] |= kEndsWithEd;
      if (kind[id] & kNever) never.push_back(static_cast<int32_t>(id));
      if (kind[id] & kContinuation) continuations.push_back(static_cast<int32_t>(id));
    }
  }
  uint8_t of(int32_t id) const { return static_cast<size_t>(id) < kind.size() ? kind[static_cast<size_t>(id)] : 0; }
  // Whether `id` may follow a token that ended (or did not end) in ED.
  bool allows(int32_t id, bool after_ed) const {
    const uint8_t k = of(id);
    return !(k & kNever) && !(after_ed && (k & kContinuation));
  }
};

class CompiledConstraint {
 public:
  CompiledConstraint(xgrammar::CompiledGrammar grammar, int64_t vocab_size, std::shared_ptr<const SurrogateGuard> guard)
      : grammar(std::move(grammar)), vocab_size(vocab_size), guard(std::move(guard)) {}
  xgrammar::CompiledGrammar grammar;
  int64_t vocab_size;
  std::shared_ptr<const SurrogateGuard> guard;
};

namespace {

constexpr size_t kCompiledKept = 64;

// The bitmask XGrammar fills: one bit per vocabulary id, 32 to an int32
// word, bit (id % 32) of word id / 32 set when the id is allowed.
class TokenBitmask {
 public:
  explicit TokenBitmask(int64_t vocab_size)
      : words_(static_cast<size_t>(xgrammar::GetBitmaskSize(static_cast<int>(vocab_size)))),
        shape_(static_cast<int64_t>(words_.size())) {
    tensor_.data = words_.data();
    tensor_.device = DLDevice{kDLCPU, 0};
    tensor_.ndim = 1;
    tensor_.dtype = xgrammar::GetBitmaskDLType();
    tensor_.shape = &shape_;
    tensor_.strides = nullptr;
    tensor_.byte_offset = 0;
  }
  DLTensor* tensor() { return &tensor_; }
  std::vector<int32_t>& words() { return words_; }

 private:
  std::vector<int32_t> words_;
  int64_t shape_;
  DLTensor tensor_{};
};

int64_t allowed_count(const std::vector<int32_t>& words, int64_t vocab_size) {
  int64_t n = 0;
  for (int64_t w = 0; w < static_cast<int64_t>(words.size()); ++w) {
    uint32_t bits = static_cast<uint32_t>(words[w]);
    const int64_t first = w * 32;
    if (vocab_size - first < 32) bits &= (1u << (vocab_size - first)) - 1u;
    n += std::popcount(bits);
  }
  return n;
}

// Special tokens that are the markers of a tool call or of reasoning
// (generation/tool_calls.h, generation/reasoning.h): a model writes them as
// their own tokens (Gemma 4's <|tool_call> and <|"|>, Qwen's <think>), so a
// constraint that spells them must be able to choose them.
bool is_reply_marker(std::string_view text) {
  static constexpr std::string_view kMarkers[] = {
      "<think>",     "</think>",     "<tool_call>", "</tool_call>",        "<|tool_call>",
      "<tool_call|>", "<|\"|>",       "<|channel>",  "<channel|>",          "<|tool_call_start|>",
      "<|tool_call_end|>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]",
      // DeepSeek
      "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>",
      // Kimi K2
      "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
      "<|tool_call_argument_begin|>",
      // MiniMax
      "<minimax:tool_call>", "</minimax:tool_call>",
      // JSON lists (Nemotron Nano v2, Apriel, Granite 3.3, Command R7B / A, Apertus)
      "<TOOLCALL>", "</TOOLCALL>", "<tool_calls>", "</tool_calls>", "<|tool_call|>", "<|START_ACTION|>",
      "<|END_ACTION|>", "<|START_THINKING|>", "<|END_THINKING|>", "<|tools_prefix|>", "<|tools_suffix|>",
      // Seed-OSS
      "<seed:tool_call>", "</seed:tool_call>", "<seed:think>", "</seed:think>"};
  return std::find(std::begin(kMarkers), std::end(kMarkers), text) != std::end(kMarkers);
}

// Each id's bytes as XGrammar's RAW vocabulary type wants them; "" marks a
// special token (never matched as text) other than a reply marker.
std::vector<std::string> grammar_vocabulary(const tok::Tokenizer& tokenizer, int64_t vocab_size,
                                            std::span<const int32_t> stop_ids) {
  const tok::StreamingDetokenizer detok(tokenizer);
  const int64_t n = std::min<int64_t>(vocab_size, static_cast<int64_t>(tokenizer.vocab_size()));
  std::vector<std::string> vocab(static_cast<size_t>(n));
  for (int64_t id = 0; id < n; ++id) {
    const auto i = static_cast<int32_t>(id);
    const bool stop = std::find(stop_ids.begin(), stop_ids.end(), i) != stop_ids.end();
    if (!tokenizer.is_special(i) || (!stop && is_reply_marker(detok.bytes_of(i))))
      vocab[static_cast<size_t>(id)] = detok.bytes_of(i);
  }
  return vocab;
}

// The schema with every integer bounded: an integer schema without a lower
// (upper) bound gets minimum -(2^53 - 1) (maximum 2^53 - 1), the range RFC
// 8259 section 6 names as the one JSON implementations agree on. Unbounded,
// a small model can write digits until max_tokens (llama.cpp's own schema
// converter caps integers at 16 digits for the same reason). Text that is
// not JSON is returned as it is, for XGrammar to report.
}  // namespace

std::string with_bounded_integers(const std::string& schema_text) {
  // Ordered: properties are generated in the schema's order.
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return schema_text;
  constexpr int64_t kSafe = 9007199254740991;  // 2^53 - 1
  auto visit = [&](auto& self, nlohmann::ordered_json& node) -> void {
    if (node.is_array()) {
      for (nlohmann::ordered_json& item : node) self(self, item);
      return;
    }
    if (!node.is_object()) return;
    const auto type = node.find("type");
    const bool integer =
        type != node.end() && ((type->is_string() && *type == "integer") ||
                               (type->is_array() && std::find(type->begin(), type->end(), "integer") != type->end()));
    if (integer) {
      if (!node.contains("minimum") && !node.contains("exclusiveMinimum")) node["minimum"] = -kSafe;
      if (!node.contains("maximum") && !node.contains("exclusiveMaximum")) node["maximum"] = kSafe;
    }
    for (auto it = node.begin(); it != node.end(); ++it)
      if (it.key() != "enum" && it.key() != "const" && it.key() != "default" && it.key() != "examples")
        self(self, it.value());
  };
  visit(visit, schema);
  return schema.dump();
}

namespace {

// XGrammar's message without its "[hh:mm:ss] file.cc:line: " prefix.
std::string xgrammar_message(std::string_view what) {
  if (const size_t at = what.find(".cc:"); at != std::string_view::npos && !what.empty() && what[0] == '[')
    if (const size_t colon = what.find(": ", at); colon != std::string_view::npos) what.remove_prefix(colon + 2);
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.remove_suffix(1);
  return std::string(what);
}

}  // namespace

struct ConstraintCompiler::Impl {
  int64_t vocab_size;
  xgrammar::TokenizerInfo info;
  xgrammar::GrammarCompiler compiler;
  std::mutex mutex;
  using Key = std::pair<ConstraintKind, std::string>;
  std::map<Key, std::shared_ptr<const CompiledConstraint>> compiled;
  std::deque<Key> order;  // compiled's keys, oldest first

  std::shared_ptr<const SurrogateGuard> guard;

  Impl(const tok::Tokenizer& tokenizer, std::span<const int32_t> stop_ids, int64_t vocab_size)
      : Impl(grammar_vocabulary(tokenizer, vocab_size, stop_ids), stop_ids, vocab_size) {}
  Impl(const std::vector<std::string>& vocab, std::span<const int32_t> stop_ids, int64_t vocab_size)
      : vocab_size(vocab_size),
        info(vocab, xgrammar::VocabType::RAW, static_cast<int>(vocab_size),
             std::vector<int32_t>(stop_ids.begin(), stop_ids.end())),
        // One thread: compiling runs beside the engine's decode steps, which
        // have the cores.
        compiler(info, /*max_threads=*/1, /*cache_enabled=*/false),
        guard(std::make_shared<const SurrogateGuard>(vocab)) {}

  xgrammar::CompiledGrammar compile(const ConstraintSpec& spec) {
    switch (spec.kind) {
      case ConstraintKind::JsonSchema:
        // Compact JSON (", " and ": ", no newlines): small models given
        // free whitespace tend to spend their tokens on it. strict: no
        // properties or items beyond those the schema lists, unless it says
        // otherwise (additionalProperties), as OpenAI's strict mode.
        return compiler.CompileJSONSchema(with_bounded_integers(spec.text), /*any_whitespace=*/false, std::nullopt,
                                          std::nullopt, /*strict_mode=*/true);
      case ConstraintKind::Grammar: return compiler.CompileGrammar(spec.text, "root");
      case ConstraintKind::Regex: return compiler.CompileRegex(spec.text);
      case ConstraintKind::StructuralTag: return compiler.CompileStructuralTag(spec.text);
      case ConstraintKind::None: break;
    }
    fail("request", "constraint", "no constraint to compile");
  }
};

ConstraintCompiler::ConstraintCompiler(const tok::Tokenizer& tokenizer, std::span<const int32_t> stop_ids,
                                       int64_t vocab_size)
    : impl_(std::make_unique<Impl>(tokenizer, stop_ids, vocab_size)) {}

ConstraintCompiler::~ConstraintCompiler() = default;

std::unique_ptr<ConstraintCompiler> ConstraintCompiler::for_model(const Model& model, const ConstraintSpec& spec) {
  const tok::Tokenizer* tok = model.tokenizer();
  if (!tok) fail(model.path(), spec.setting(), "a constraint needs a tokenizer and the model has none");
  return std::make_unique<ConstraintCompiler>(*tok, model.stop_token_ids(), model.spec().vocab_size);
}

std::shared_ptr<const CompiledConstraint> ConstraintCompiler::compile(const ConstraintSpec& spec) {
  // One compile at a time: they are rare (a schema's first use) and each
  // already has a thread.
  std::lock_guard lock(impl_->mutex);
  auto key = std::make_pair(spec.kind, spec.text);
  if (auto it = impl_->compiled.find(key); it != impl_->compiled.end()) return it->second;
  std::optional<xgrammar::CompiledGrammar> grammar;
  try {
    grammar.emplace(impl_->compile(spec));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("request", spec.setting(), "{}", xgrammar_message(e.what()));
  }
  auto compiled = std::make_shared<const CompiledConstraint>(std::move(*grammar), impl_->vocab_size, impl_->guard);
  // A constraint whose first step allows nothing (an unsatisfiable schema:
  // an empty enum, minimum above maximum, ...) would fail every request.
  if (ConstraintMatcher(compiled).mask(nullptr) == 0)
    fail("request", spec.setting(), "the {} admits no output (no token can start it)",
         spec.kind == ConstraintKind::JsonSchema ? "schema" : spec.setting());
  // Kept: the last kCompiledKept constraints, oldest dropped first.
  if (impl_->order.size() >= kCompiledKept) {
    impl_->compiled.erase(impl_->order.front());
    impl_->order.pop_front();
  }
  impl_->order.push_back(key);
  return impl_->compiled.emplace(std::move(key), std::move(compiled)).first->second;
}

struct ConstraintMatcher::Impl {
  std::shared_ptr<const CompiledConstraint> compiled;
  xgrammar::GrammarMatcher matcher;
  TokenBitmask bitmask;
  std::vector<bool> ended_with_ed;  // by accepted token (SurrogateGuard)

  explicit Impl(std::shared_ptr<const CompiledConstraint> c)
      : compiled(std::move(c)), matcher(compiled->grammar), bitmask(compiled->vocab_size) {}
};

ConstraintMatcher::ConstraintMatcher(std::shared_ptr<const CompiledConstraint> compiled)
    : impl_(std::make_unique<Impl>(std::move(compiled))) {}

ConstraintMatcher::~ConstraintMatcher() = default;

int64_t ConstraintMatcher::mask(float* logits) {
  impl_->matcher.FillNextTokenBitmask(impl_->bitmask.tensor());
  std::vector<int32_t>& words = impl_->bitmask.words();
  const int64_t vocab = impl_->compiled->vocab_size;
  auto refuse = [&](const std::vector<int32_t>& ids) {
    for (int32_t id : ids) words[static_cast<size_t>(id / 32)] &= ~static_cast<int32_t>(1u << (id % 32));
  };
  const SurrogateGuard& guard = *impl_->compiled->guard;
  refuse(guard.never);
  if (!impl_->ended_with_ed.empty() && impl_->ended_with_ed.back()) refuse(guard.continuations);
  if (logits) {
    constexpr float kNever = -std::numeric_limits<float>::infinity();
    for (int64_t w = 0; w < static_cast<int64_t>(words.size()); ++w) {
      const auto bits = static_cast<uint32_t>(words[w]);
      if (bits == 0xFFFFFFFFu) continue;
      const int64_t first = w * 32, end = std::min<int64_t>(first + 32, vocab);
      for (int64_t id = first; id < end; ++id)
        if (!((bits >> (id - first)) & 1u)) logits[id] = kNever;
    }
  }
  return allowed_count(words, vocab);
}

bool ConstraintMatcher::accept(int32_t id) {
  if (id < 0 || id >= impl_->compiled->vocab_size) return false;
  const SurrogateGuard& guard = *impl_->compiled->guard;
  const bool after_ed = !impl_->ended_with_ed.empty() && impl_->ended_with_ed.back();
  if (!guard.allows(id, after_ed) || !impl_->matcher.AcceptToken(id)) return false;
  impl_->ended_with_ed.push_back((guard.of(id) & SurrogateGuard::kEndsWithEd) != 0);
  return true;
}

void ConstraintMatcher::rollback(int64_t n) {
  if (n <= 0) return;
  impl_->matcher.Rollback(static_cast<int>(n));
  impl_->ended_with_ed.resize(impl_->ended_with_ed.size() - std::min<size_t>(static_cast<size_t>(n), impl_->ended_with_ed.size()));
}

bool ConstraintMatcher::terminated() const { return impl_->matcher.IsTerminated(); }

}  // namespace tessera
