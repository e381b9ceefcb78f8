// A conversation's state on a Model: its per-layer state (sequence_state.h:
// KV rows, rings, conv tails, recurrent matrices) and the token history.
// forward() runs new tokens through the programs of the model — the whole
// batch in calls of up to T tokens (prefill variants), or T=1 (decode) — and
// returns logits. The result never depends on the thread count, nor on how
// the tokens were split into calls as long as the calls take the same kernel
// path: every kernel computes each value in a fixed order
// (kernels/reference/dot.h). The one path change is in the linears on lut /
// int8 weights: at avx2 / avx512 calls of 4+ tokens run the int16 GEMM and
// at amx calls of 32+ the bf16 tiles, whose bits differ from the one-token
// kernels'; forward_as_decode() and decode_batch() keep every row on the
// one-token kernels, so their rows have decode's bits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "state/sequence_state.h"

namespace tessera {

enum class LogitsWanted { Last, All };

// Embeddings that stand in for the token embeddings of a run of a
// forward() call's ids (an image's soft tokens): ids [begin, begin + rows)
// enter the first layer as `values` ([rows][hidden], row-major, taken as
// they are: no embedding scale) instead of their table rows. Bidirectional:
// the rows also attend to each other both ways in every attention layer
// (Gemma's image spans), and forward() never splits them between calls.
// Key: what identifies the media (a hash of its decoded pixels or samples);
// 0, none. A keyed span's rows enter history() as media_history_key(key, j)
// instead of their ids, so that two histories agree on those positions only
// for the same media: prefix reuse (the engine's slots and prefix cache)
// compares histories.
struct EmbeddedSpan {
  int64_t begin = 0, rows = 0;
  const float* values = nullptr;
  bool bidirectional = false;
  uint64_t key = 0;
};

// The history entry of row j of a span keyed `key`: a negative number (token
// ids are >= 0) mixing every bit of the key with j.
int32_t media_history_key(uint64_t key, int64_t j);

class Session {
 public:
  // context_length 0: the model's max_position_embeddings.
  explicit Session(const Model& model, int64_t context_length = 0);

  // Appends `ids` at positions length() ... and returns logits [rows][vocab]
  // for the last token (Last) or every token (All). max_tokens_per_call 0:
  // the largest prefill variant. Throws Error (and changes nothing) when the
  // ids do not fit in the context or are outside the vocabulary.
  // `media`: spans of the ids whose embeddings are given (EmbeddedSpan), in
  // order, not overlapping; a bidirectional span runs in one call of its own
  // length or more whatever max_tokens_per_call, so it may hold at most the
  // largest prefill variant's tokens.
  const std::vector<float>& forward(std::span<const int32_t> ids, LogitsWanted wanted = LogitsWanted::Last,
                                    int64_t max_tokens_per_call = 0, std::span<const EmbeddedSpan> media = {});
  // forward(ids, All, max_tokens_per_call) with every row computed as a
  // one-token decode step computes it (CallContext::decode_kernels): each
  // row's logits and argmax have the bits that running the tokens one at a
  // time through forward() gives, whatever the kernel paths of longer calls.
  // Speculative verification (generation/speculative.h) relies on it.
  // with_logits false: only greedy_ids() is wanted, and the logits rows
  // (rows × vocab floats: 9.4 MB for 9 rows of Gemma 3's 262,144) are not
  // copied out when the programs compute the argmax (the result is then
  // empty); bundles without the Argmax op copy them regardless.
  const std::vector<float>& forward_as_decode(std::span<const int32_t> ids, int64_t max_tokens_per_call = 0,
                                              bool with_logits = true);
  // One decode step of several sessions of the same model at once
  // (continuous batching): session r takes ids[r] as its next token. The
  // programs run once over all rows, so each weight is read once for all of
  // them, and each session's logits, greedy_ids() and state are bit for bit
  // what its own forward({ids[r]}) would give (CallContext::row_states,
  // decode_kernels). Throws Error (nothing run) for mixed models, a session
  // listed twice, a full context or an id outside the vocabulary.
  static void decode_batch(std::span<Session* const> sessions, std::span<const int32_t> ids);
  // Whether a forward_as_decode() of `rows` tokens would find the
  // workspaces of its programs already grown to it. The first call of a
  // size (or past it) is cold: it allocates and first touches its buffers,
  // which speculation's cost model leaves out of its fit.
  bool warm_for_as_decode(int64_t rows) const;
  // Grows the workspaces of every call size up to max_rows to what a
  // forward_as_decode() of that size needs, so that no such call is cold
  // (speculation does this once, before its first decode step).
  void prepare_as_decode(int64_t max_rows);
  // The logits of the last forward() or decode_batch() step.
  const std::vector<float>& logits() const { return logits_; }
  // The argmax of each logits row of the last forward() (lowest id on
  // ties, ref::argmax): the programs' Argmax op computed it, or, for a
  // bundle recorded without that op, a scan of the logits made here on the
  // first call after that forward().
  const std::vector<int32_t>& greedy_ids();

  int64_t length() const { return state_.length(); }
  int64_t context_length() const { return state_.context_length(); }
  // The ids run so far, a keyed media span's rows as media_history_key()s.
  const std::vector<int32_t>& history() const { return history_; }
  // Keeps the first n tokens. False when the state cannot be cut there (a
  // sliding layer's ring or a conv tail no longer holds what position n
  // needs: n is more than the rollback margin back, after a wrap); then the
  // session is reset and the caller re-feeds the tokens.
  bool truncate(int64_t n);
  // Whether truncate(n) would keep the state (n <= length()).
  bool can_truncate(int64_t n) const { return n >= 0 && state_.can_truncate(n); }
  // Forgets the last k tokens; always kept for k <= state().rollback_margin().
  bool rollback(int64_t k);
  void reset();

  // The state and the history together: what a prefix cache stores and a
  // later session resumes from (restore checks it fits this model).
  struct Snapshot {
    SequenceState state;
    std::vector<int32_t> history;
  };
  Snapshot snapshot() const { return {state_.snapshot(), history_}; }
  void restore(const Snapshot& s);

  // The state and history to a file and back (state/session_file.h);
  // load() throws Error (session unchanged) for a file of another model,
  // version or shape, or a corrupted one.
  void save(const std::string& path) const;
  void load(const std::string& path);

  const SequenceState& state() const { return state_; }
  const KvCache& kv() const { return state_.kv(); }
  const Model& model() const { return model_; }

  // Optional observer: called after each non-last chunk program of a call
  // with the residual stream "x" it outputs ([rows][cols] row-major, rows =
  // the call's token count), i.e. the residual after that chunk's last layer.
  // The pointer is valid only during the call. Unset: no cost.
  std::function<void(int64_t chunk, const float* x, int64_t rows, int64_t cols)> on_chunk_output;

  // Optional: per-op wall time of every program call, summed into
  // (*op_profiles)[program index] (tessera audit). Null: no cost.
  std::vector<OpProfile>* op_profiles = nullptr;

  // Optional observer: called after each program of a call has run, with the
  // program (its name says the variant and chunk, e.g. "decode.c1") and its
  // wall time in seconds (including the copy of its inputs). Unset: the clock
  // is never read.
  std::function<void(const Program& program, double seconds)> on_program_timed;

  // Optional observer: called before every Linear of every program call with
  // its weight's name and input [rows][cols] (valid only during the call).
  // Unset: no cost.
  std::function<void(const std::string& weight, const float* x, int64_t rows, int64_t cols)> on_linear_input;

 private:
  // logits_out / ids_out: where the call's logits rows and their argmax go
  // (both null: the call's logits are not wanted).
  // media: the spans of the call, their begin counted from its first id.
  void run_call(std::span<const int32_t> ids, bool all_logits, float* logits_out, int32_t* ids_out,
                std::span<const EmbeddedSpan> media = {});
  // Runs the programs of `variant` over one call's rows (row t at
  // positions[t]) on this session's workspaces; returns the last program's.
  CallBuffers* run_programs(CallContext& ctx, std::span<const int32_t> ids, std::span<const int64_t> positions,
                          int64_t variant);

  const Model& model_;
  SequenceState state_;
  std::vector<int32_t> history_;
  std::vector<std::unique_ptr<CallBuffers>> buffers_;  // by program index, made on first use
  std::vector<float> logits_;
  std::vector<int32_t> greedy_ids_;  // valid when greedy_ready_
  bool greedy_ready_ = false;
  bool decode_kernels_ = false;  // forward_as_decode() in progress
  bool ids_only_ = false;        // forward_as_decode(with_logits = false) in progress
};

}  // namespace tessera
