#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "kernels/reference/kernels.h"
#include "state/session_file.h"

namespace tessera {

int32_t media_history_key(uint64_t key, int64_t j) {
  // splitmix64's finalizer over key + j · 2^64/φ: every bit of both moves
  // about half of the result's.
  uint64_t z = key + static_cast<uint64_t>(j + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return -1 - static_cast<int32_t>(z & 0x7FFFFFFFull);
}

Session::Session(const Model& model, int64_t context_length)
    : model_(model),
      state_(model.spec(), context_length > 0 ? context_length : model.spec().context_length, model.kv_type()),
      buffers_(model.programs().programs.size()) {
  if (context_length > model.spec().context_length && model.spec().context_length > 0)
    fail(model.path(), "context length", "{} exceeds the model's maximum of {} positions", context_length,
         model.spec().context_length);
}

void Session::reset() {
  state_.clear();
  history_.clear();
}

bool Session::truncate(int64_t n) {
  if (n < 0 || n > length()) fail("session", "truncate", "position {} is outside 0..{}", n, length());
  if (state_.truncate(n)) {
    history_.resize(static_cast<size_t>(n));
    return true;
  }
  reset();
  return false;
}

bool Session::rollback(int64_t k) {
  if (k < 0 || k > length()) fail("session", "rollback", "{} tokens is outside 0..{}", k, length());
  return truncate(length() - k);
}

void Session::restore(const Snapshot& s) {
  if (static_cast<int64_t>(s.history.size()) != s.state.length())
    fail("session", "restore", "the snapshot holds {} tokens of history for {} positions", s.history.size(),
         s.state.length());
  state_.restore(s.state);
  history_ = s.history;
}

const std::vector<float>& Session::forward(std::span<const int32_t> ids, LogitsWanted wanted,
                                           int64_t max_tokens_per_call, std::span<const EmbeddedSpan> media) {
  const ModelSpec& s = model_.spec();
  if (ids.empty()) fail("session", "input", "no tokens to run");
  if (length() + static_cast<int64_t>(ids.size()) > context_length())
    fail("session", "context", "{} tokens after the {} already in context exceed the context length {}", ids.size(),
         length(), context_length());
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= s.vocab_size)
      fail("input", "token ids", "token id {} at index {} is outside the vocabulary [0, {})", ids[i], i, s.vocab_size);

  const ProgramSet& set = model_.programs();
  const int64_t largest = set.prefill_sizes.empty() ? 1 : set.prefill_sizes.back();
  const int64_t per_call = max_tokens_per_call > 0 ? std::min(max_tokens_per_call, largest) : largest;
  for (size_t i = 0; i < media.size(); ++i) {
    const EmbeddedSpan& m = media[i];
    if (m.rows < 1 || m.begin < 0 || m.begin + m.rows > static_cast<int64_t>(ids.size()) || !m.values)
      fail("input", "embedded span", "span {} (tokens {}..{}) is empty or outside the {} tokens", i, m.begin,
           m.begin + m.rows, ids.size());
    if (i > 0 && m.begin < media[i - 1].begin + media[i - 1].rows)
      fail("input", "embedded span", "span {} overlaps or precedes the one before", i);
    if (m.bidirectional && m.rows > largest)
      fail("input", "embedded span", "a bidirectional span of {} tokens exceeds the largest call of {}", m.rows,
           largest);
  }
  const bool all = wanted == LogitsWanted::All;
  const int64_t vocab = s.vocab_size;
  if (ids_only_) logits_.clear();
  else logits_.assign(static_cast<size_t>((all ? ids.size() : 1) * vocab), 0.0f);
  greedy_ids_.assign(all ? ids.size() : 1, 0);
  greedy_ready_ = true;  // until a call's program has no Argmax op
  size_t done = 0;
  std::vector<EmbeddedSpan> in_call;
  while (done < ids.size()) {
    int64_t n = std::min<int64_t>(per_call, static_cast<int64_t>(ids.size() - done));
    // A bidirectional span the call would cut: the call stops before it, or,
    // starting at it, takes it whole.
    const int64_t at = static_cast<int64_t>(done);
    for (const EmbeddedSpan& m : media)
      if (m.bidirectional && m.begin < at + n && m.begin + m.rows > at + n) {
        n = m.begin > at ? m.begin - at : m.begin + m.rows - at;
        break;
      }
    in_call.clear();
    for (const EmbeddedSpan& m : media) {
      const int64_t from = std::max(m.begin, at), to = std::min(m.begin + m.rows, at + n);
      if (from < to) in_call.push_back({from - at, to - from, m.values + (from - m.begin) * s.hidden_size, m.bidirectional});
    }
    const bool last_call = done + n == ids.size();
    float* out = ids_only_ ? nullptr : all ? logits_.data() + done * vocab : (last_call ? logits_.data() : nullptr);
    int32_t* greedy = all ? greedy_ids_.data() + done : (last_call ? greedy_ids_.data() : nullptr);
    run_call(ids.subspan(done, n), all, out, greedy, in_call);
    done += n;
  }
  const size_t base = history_.size();
  history_.insert(history_.end(), ids.begin(), ids.end());
  for (const EmbeddedSpan& m : media)
    if (m.key != 0)
      for (int64_t j = 0; j < m.rows; ++j) history_[base + m.begin + j] = media_history_key(m.key, j);
  return logits_;
}

const std::vector<float>& Session::forward_as_decode(std::span<const int32_t> ids, int64_t max_tokens_per_call,
                                                     bool with_logits) {
  struct Flag {
    bool& on;
    Flag(bool& f, bool value) : on(f) { on = value; }
    ~Flag() { on = false; }
  };
  const ProgramSet& set = model_.programs();
  const bool has_argmax = !set.programs.empty() && set.programs.back().find_value("next_ids") >= 0;
  Flag decode(decode_kernels_, true), ids_only(ids_only_, !with_logits && has_argmax);
  return forward(ids, LogitsWanted::All, max_tokens_per_call);
}

const std::vector<int32_t>& Session::greedy_ids() {
  if (!greedy_ready_) {
    const int64_t vocab = model_.spec().vocab_size;
    for (size_t r = 0; r < greedy_ids_.size(); ++r)
      greedy_ids_[r] = static_cast<int32_t>(ref::argmax(logits_.data() + r * vocab, vocab));
    greedy_ready_ = true;
  }
  return greedy_ids_;
}

namespace {

// The smallest variant that takes n tokens in one call (the largest if none does).
int64_t variant_for(const ProgramSet& set, int64_t n) {
  if (n <= 1) return 1;
  for (int64_t t : set.prefill_sizes)
    if (t >= n) return t;
  return set.prefill_sizes.back();
}

}  // namespace

bool Session::warm_for_as_decode(int64_t rows) const {
  const ProgramSet& set = model_.programs();
  const int64_t variant = variant_for(set, rows);
  for (size_t i = 0; i < set.programs.size(); ++i) {
    if (set.programs[i].max_tokens != variant) continue;
    const std::unique_ptr<CallBuffers>& buffers = buffers_[i];
    if (!buffers || !buffers->fitted_for(rows, rows)) return false;
  }
  return true;
}

void Session::prepare_as_decode(int64_t max_rows) {
  const ProgramSet& set = model_.programs();
  for (int64_t rows = max_rows; rows >= 2; --rows) {
    if (warm_for_as_decode(rows)) continue;
    const int64_t variant = variant_for(set, rows);
    CallContext ctx;
    ctx.rows = std::min(rows, variant);
    for (int32_t r = 0; r < ctx.rows; ++r) ctx.logit_rows.push_back(r);
    for (size_t i = 0; i < set.programs.size(); ++i) {
      if (set.programs[i].max_tokens != variant) continue;
      if (!buffers_[i]) buffers_[i] = model_.executable(i).make_buffers();
      model_.executable(i).fit(*buffers_[i], ctx);
    }
  }
}

CallBuffers* Session::run_programs(CallContext& ctx, std::span<const int32_t> ids,
                                       std::span<const int64_t> positions, int64_t variant) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const ProgramSet& set = model_.programs();
  bool consecutive = true;
  for (int64_t t = 1; t < n; ++t) consecutive &= positions[t] == positions[0] + t;
  CallBuffers* prev = nullptr;
  const Program* prev_program = nullptr;
  for (size_t i = 0; i < set.programs.size(); ++i) {
    const Program& p = set.programs[i];
    if (p.max_tokens != variant) continue;
    const Executable& exe = model_.executable(i);
    if (!buffers_[i]) buffers_[i] = exe.make_buffers();
    CallBuffers& ws = *buffers_[i];
    exe.fit(ws, ctx);
    const bool timed = static_cast<bool>(on_program_timed);
    std::chrono::steady_clock::time_point start;
    if (timed) start = std::chrono::steady_clock::now();
    for (int id : p.inputs) {
      const Value& v = p.values[id];
      if (v.name == "ids") {
        std::copy(ids.begin(), ids.end(), ws.i32_rows(id));
      } else if (v.name == "positions") {
        for (int64_t t = 0; t < n; ++t) ws.i32_rows(id)[t] = static_cast<int32_t>(positions[t]);
      } else if (v.name == "rope.cos" || v.name == "rope_local.cos") {
        const RopeTable& table = model_.rope(v.name == "rope_local.cos");
        float* cos = ws.f32_rows(id);
        float* sin = ws.f32_rows(p.find_value(v.name.substr(0, v.name.size() - 3) + "sin"));
        if (consecutive) {
          table.fill(positions[0], n, cos, sin);
        } else {  // a step of several sequences: each row at its own position
          for (int64_t t = 0; t < n; ++t) table.fill(positions[t], 1, cos + t * table.half(), sin + t * table.half());
        }
      } else if (v.name == "rope.sin" || v.name == "rope_local.sin") {
        // filled with its cos
      } else if (const int from = prev_program ? prev_program->find_value(v.name) : -1;
                 from >= 0 && v.type == ValueType::F32 &&
                 std::find(prev_program->outputs.begin(), prev_program->outputs.end(), from) !=
                     prev_program->outputs.end()) {
        // Carried from the chunk before (model/builders.cc connect_chunks):
        // the residual stream, per-layer embeddings, a shared layer's k / v.
        std::memcpy(ws.f32_rows(id), prev->f32_rows(from), sizeof(float) * n * v.cols);
      } else {
        fail(p.name, v.name, "the runtime does not know how to provide this input");
      }
    }
    if (op_profiles) {
      if (op_profiles->size() < set.programs.size()) op_profiles->resize(set.programs.size());
      ctx.profile = &(*op_profiles)[i];
    }
    exe.run(ws, ctx);
    if (timed)
      on_program_timed(p, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    prev = &ws;
    prev_program = &p;
    const int x = p.find_value("x");
    if (on_chunk_output && x >= 0 && std::find(p.outputs.begin(), p.outputs.end(), x) != p.outputs.end())
      on_chunk_output(p.chunk, ws.f32_rows(x), n, p.values[x].cols);
  }
  return prev;
}

void Session::run_call(std::span<const int32_t> ids, bool all_logits, float* logits_out, int32_t* ids_out,
                       std::span<const EmbeddedSpan> media) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const ProgramSet& set = model_.programs();
  const int64_t variant = variant_for(set, n);
  CallContext ctx;
  ctx.rows = n;
  for (const EmbeddedSpan& m : media) {
    ctx.embeddings.push_back({m.begin, m.rows, m.values});
    if (!m.bidirectional) continue;
    if (ctx.block_end.empty())
      for (int32_t t = 0; t < n; ++t) ctx.block_end.push_back(t + 1);
    for (int64_t t = m.begin; t < m.begin + m.rows; ++t) ctx.block_end[t] = static_cast<int32_t>(m.begin + m.rows);
  }
  ctx.state = &state_;
  ctx.decode_kernels = decode_kernels_;
  if (on_linear_input) ctx.on_linear_input = &on_linear_input;
  if (logits_out || ids_out) {
    if (all_logits) {
      for (int64_t r = 0; r < n; ++r) ctx.logit_rows.push_back(static_cast<int32_t>(r));
    } else {
      ctx.logit_rows.push_back(static_cast<int32_t>(n - 1));
    }
  } else {
    ctx.logit_rows.push_back(static_cast<int32_t>(n - 1));  // the head runs; its result is unused
  }
  std::vector<int64_t> positions(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) positions[t] = length() + t;
  CallBuffers* prev = run_programs(ctx, ids, positions, variant);
  if ((logits_out || ids_out) && prev) {
    const Program& last = *set.variant(variant).back();
    const int64_t rows = static_cast<int64_t>(ctx.logit_rows.size()), vocab = model_.spec().vocab_size;
    if (logits_out) std::memcpy(logits_out, prev->f32_rows(last.find_value("logits")), sizeof(float) * rows * vocab);
    if (const int next = last.find_value("next_ids"); next >= 0)
      std::memcpy(ids_out, prev->i32_rows(next), sizeof(int32_t) * rows);
    else
      greedy_ready_ = false;  // greedy_ids() scans the logits
  }
  state_.advance(n);
}

void Session::decode_batch(std::span<Session* const> sessions, std::span<const int32_t> ids) {
  if (sessions.size() != ids.size())
    fail("session", "decode batch", "{} sessions for {} tokens", sessions.size(), ids.size());
  if (sessions.empty()) return;
  Session& lead = *sessions[0];
  const Model& model = lead.model_;
  const ProgramSet& set = model.programs();
  const int64_t largest = set.prefill_sizes.empty() ? 1 : set.prefill_sizes.back();
  if (static_cast<int64_t>(sessions.size()) > largest) {  // steps of at most the largest variant
    for (size_t i = 0; i < sessions.size(); i += static_cast<size_t>(largest)) {
      const size_t m = std::min(sessions.size() - i, static_cast<size_t>(largest));
      decode_batch(sessions.subspan(i, m), ids.subspan(i, m));
    }
    return;
  }
  for (size_t r = 0; r < sessions.size(); ++r) {
    Session& s = *sessions[r];
    if (&s.model_ != &model) fail("session", "decode batch", "session {} runs another model", r);
    for (size_t q = 0; q < r; ++q)
      if (sessions[q] == &s) fail("session", "decode batch", "session {} appears twice", r);
    if (s.length() + 1 > s.context_length())
      fail("session", "context", "session {} is full ({} positions)", r, s.context_length());
    if (ids[r] < 0 || ids[r] >= model.spec().vocab_size)
      fail("input", "token ids", "token id {} of session {} is outside the vocabulary [0, {})", ids[r], r,
           model.spec().vocab_size);
  }
  if (sessions.size() == 1) {
    lead.forward(ids, LogitsWanted::Last);
    return;
  }
  const int64_t n = static_cast<int64_t>(sessions.size());
  const int64_t variant = variant_for(set, n);
  CallContext ctx;
  ctx.rows = n;
  // Every Linear on the one-token path, every stateful op on each row's own
  // state: each row gets its session's decode bits.
  ctx.decode_kernels = true;
  std::vector<int64_t> positions(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    ctx.row_states.push_back(&sessions[r]->state_);
    ctx.logit_rows.push_back(static_cast<int32_t>(r));
    positions[r] = sessions[r]->length();
  }
  CallBuffers* last_ws = lead.run_programs(ctx, ids, positions, variant);
  const Program& last = *set.variant(variant).back();
  const int64_t vocab = model.spec().vocab_size;
  const float* logits = last_ws->f32_rows(last.find_value("logits"));
  const int next = last.find_value("next_ids");
  for (int64_t r = 0; r < n; ++r) {
    Session& s = *sessions[r];
    s.logits_.assign(logits + r * vocab, logits + (r + 1) * vocab);
    s.greedy_ids_.assign(1, next >= 0 ? last_ws->i32_rows(next)[r] : 0);
    s.greedy_ready_ = next >= 0;
    s.state_.advance(1);
    s.history_.push_back(ids[r]);
  }
}

void Session::save(const std::string& path) const {
  write_session_file(path, model_.identity(), history_, state_);
}

void Session::load(const std::string& path) {
  history_ = read_session_file(path, model_.identity(), state_);  // state_ unchanged if it throws
}

}  // namespace tessera
