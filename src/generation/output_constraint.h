// Constrained decoding: the generated text must match a JSON Schema, a
// grammar (GBNF, llama.cpp's syntax) or a regular expression.
//
// Before each token is chosen, the logits of every token that cannot
// continue a match are set to -inf, so the sampler (greedy or not) only
// ever picks a token the constraint allows; once the match is complete the
// only tokens allowed are the model's stop tokens, and the generation ends
// with finish_reason "eos". The matching itself is XGrammar's
// (cmake/xgrammar.cmake): a pushdown automaton over bytes with a per-state
// cache of which vocabulary tokens are always / never / maybe accepted, so
// a mask costs a walk over the few "maybe" tokens, not the whole vocabulary.
//
// The vocabulary XGrammar matches against is each token's bytes as the
// detokenizer writes them mid-text (StreamingDetokenizer::bytes_of);
// special tokens (chat markers, BOS / EOS) are never allowed, except the
// model's stop tokens once the match is complete and the markers of tool
// calls and reasoning (<think>, <tool_call>, Gemma 4's <|tool_call>, <|"|>
// and <|channel>, ...), which a model writes as their own tokens and which
// count as their text.
//
// Determinism: a mask depends only on the constraint and the tokens chosen
// so far, never on threads, batching or timing, so constrained output keeps
// every invariant of plain decoding (same bits whatever the batch).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tessera {

class Model;
namespace tok {
class Tokenizer;
}

enum class ConstraintKind {
  None,
  JsonSchema,  // a JSON Schema document (draft 2020-12 subset: XGrammar's)
  Grammar,     // GBNF, root rule `root`
  Regex,       // ECMAScript-style regular expression over the whole output
  StructuralTag,  // XGrammar's structural tag JSON (free text, tagged regions, JSON inside)
};

// The constraint a request asks for, as the settings state it
// (GenerationSettings::json_schema / grammar / regex / structural_tag: at most one).
struct ConstraintSpec {
  ConstraintKind kind = ConstraintKind::None;
  std::string text;
  bool empty() const { return kind == ConstraintKind::None; }
  // The setting it came from ("json_schema", "grammar", "regex"): the
  // subject of errors about it.
  const char* setting() const;
};

// `schema_text` with every integer given the bounds -(2^53 - 1) and 2^53 - 1
// where it has none (output_constraint.cc says why); JSON Schema constraints
// are compiled from it. Text that is not JSON comes back unchanged.
std::string with_bounded_integers(const std::string& schema_text);

// A constraint compiled against one vocabulary (an XGrammar CompiledGrammar).
class CompiledConstraint;

// Compiles constraints for one model's vocabulary and keeps what it
// compiled (keyed by the constraint's text), so a schema that comes back
// costs nothing the second time. Thread-safe: the engine compiles on the
// submitting thread while its scheduler decodes.
class ConstraintCompiler {
 public:
  // `vocab_size`: the model's logits width (the tokenizer's ids beyond it
  // are never allowed; logits ids beyond the tokenizer's never either).
  // `stop_ids`: the tokens that end the generation once the match is complete.
  ConstraintCompiler(const tok::Tokenizer& tokenizer, std::span<const int32_t> stop_ids, int64_t vocab_size);
  // For `model`'s tokenizer, stop tokens and logits width; throws Error
  // naming `spec`'s setting when the model has no tokenizer.
  static std::unique_ptr<ConstraintCompiler> for_model(const Model& model, const ConstraintSpec& spec);
  ~ConstraintCompiler();
  ConstraintCompiler(const ConstraintCompiler&) = delete;
  ConstraintCompiler& operator=(const ConstraintCompiler&) = delete;

  // Throws Error("request", spec.setting(), problem) for a malformed
  // schema, grammar or regex (XGrammar's message), and for one that admits
  // no output at all (its first step allows no token).
  std::shared_ptr<const CompiledConstraint> compile(const ConstraintSpec& spec);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One generation's position in its constraint.
class ConstraintMatcher {
 public:
  explicit ConstraintMatcher(std::shared_ptr<const CompiledConstraint> compiled);
  ~ConstraintMatcher();
  ConstraintMatcher(const ConstraintMatcher&) = delete;
  ConstraintMatcher& operator=(const ConstraintMatcher&) = delete;

  // Sets logits[id] to -inf for every token the constraint does not allow
  // next (`logits`: the model's vocab_size values). Returns the number of
  // tokens left allowed.
  int64_t mask(float* logits);
  // Advances past `id`; false (and nothing changes) when the constraint
  // does not allow it.
  bool accept(int32_t id);
  // Undoes the last n accepted tokens (n at most the tokens accepted).
  void rollback(int64_t n);
  // The match is complete and a stop token was accepted.
  bool terminated() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
