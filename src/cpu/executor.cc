#include "cpu/executor.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "kernels/float_linear.h"
#include "kernels/qlinear_i16gemm.h"
#include "kernels/reference/kernels.h"
#include "cpu/executor_ops.h"

namespace tessera {

namespace {

static_assert(kDefaultRowBlock / 4 >= kernels::kAmxMinTokens, "row blocks would leave the AMX kernels");

void expect_shape(const Program& p, const WeightView& t, const std::string& name, std::vector<int64_t> shape) {
  if (t.shape != shape)
    fail(p.name, name, "weight has shape [{}], the model needs [{}]", fmt::join(t.shape, ", "), fmt::join(shape, ", "));
}

// `level` names the vector kernels (and the float Linear kernels);
// `linear_level` the integer Linear kernels of this program (amx for
// prefill programs at Isa::Amx).
OpPlacement place(const Op& op, const WeightView* w, bool integer_linear, bool float_linear,
                      const std::string& level, const std::string& linear_level) {
  const bool scalar = level == isa_name(Isa::Scalar);
  switch (op.kind) {
    case OpKind::Linear:
      if (integer_linear) return {fmt::format("linear.{}.{}", weight_format_name(w->format), linear_level), false};
      if (float_linear) return {fmt::format("linear.{}.{}", weight_format_name(w->format), level), false};
      return {fmt::format("linear.{}.reference", weight_format_name(w->format)), true};
    case OpKind::Embed:
      return {fmt::format("embed.{}.gather", weight_format_name(w->format)), false};
    case OpKind::KvStore:
      return {"kv_store.copy", false};
    case OpKind::SelectRows:
      return {"select_rows.copy", false};
    default:
      break;
  }
  const std::string name = op_kind_name(op.kind);
  if (scalar) return {name + ".reference", true};
  return {name + "." + level, false};
}

// Ops whose row r reads only row r of their values (and writes only row r),
// so a call's rows can run in blocks.
bool row_local(const Program& p, const Op& op) {
  switch (op.kind) {
    case OpKind::Embed:
    case OpKind::RmsNorm:
    case OpKind::Linear:
    case OpKind::Rope:
    case OpKind::GatedActivation:
    case OpKind::Add:
    case OpKind::SplitHeads:
    case OpKind::Scale:
    case OpKind::SliceCols:
      break;
    default:
      return false;  // attention, convolutions and the state updates see every row; the head selects rows
  }
  for (const std::vector<int>* ids : {&op.inputs, &op.outputs})
    for (int id : *ids)
      if (p.values[id].rows != RowsKind::Tokens) return false;
  return true;
}

}  // namespace

BoundProgram::BoundProgram(const Program& program, const WeightStore& weights, Isa isa, QLinearCache& cache,
                           ThreadPool& pool, int64_t row_block, Arithmetic arithmetic)
    : program_(&program),
      isa_(isa),
      arithmetic_(arithmetic),
      vops_(&kernels::vector_ops(isa)),
      pool_(&pool),
      row_block_(row_block) {
  const Program& p = program;
  for (const Op& op : p.ops)
    if (op.kind == OpKind::Embed) embed_cols_ = p.values[op.outputs[0]].cols;
  const std::string level(isa_name(vector_isa(isa)));
  const int act_passes = layer_act_passes(arithmetic);
  // At the exact level a program whose calls can reach kAmxMinTokens rows
  // runs its Linears on AMX tiles at Isa::Amx, and one whose calls reach
  // kI16GemmMinTokens on the int16 GEMM at Isa::Avx2 and Isa::Avx512
  // (shorter calls of them still take the integer-dot kernels of the vector
  // level); at the fast level every call takes the integer-dot kernels.
  // The avx2 level's integer kernels name their AVX-VNNI variants.
  const char* vnni = runs_avx_vnni(isa) ? "_vnni" : "";
  const bool gemms = arithmetic == Arithmetic::Exact;
  std::string linear_level = fmt::format(
      "{}{}", isa_name(isa == Isa::Amx && (!gemms || p.max_tokens < kernels::kAmxMinTokens) ? Isa::Avx512 : isa),
      vnni);
  if (gemms && uses_i16gemm(isa) && p.max_tokens >= kernels::kI16GemmMinTokens)
    linear_level = fmt::format("{}{}_i16gemm", isa_name(isa), vnni);
  for (const Op& op : p.ops) {
    BoundOp b;
    b.op = &op;
    auto weight = [&](size_t i) -> const WeightView& { return weights.get(op.weights.at(i)); };
    // Vectors (norm weights, biases) are read as plain f32 arrays.
    auto f32_vector = [&](size_t i) -> const float* {
      const WeightView& v = weight(i);
      if (v.format != WeightFormat::F32 || v.shape.size() != 1)
        fail(p.name, op.weights[i], "expected an f32 vector, found {} of rank {}", weight_format_name(v.format),
             v.shape.size());
      return static_cast<const float*>(v.data);
    };
    const auto cols = [&](int id) { return p.values[id].cols; };
    switch (op.kind) {
      case OpKind::Embed: {
        const WeightView& t = weight(0);
        if (t.shape.size() != 2 || t.shape[1] != cols(op.outputs[0]))
          fail(p.name, op.weights[0], "embedding has shape [{}], expected [vocab, {}]", fmt::join(t.shape, ", "),
               cols(op.outputs[0]));
        b.w0 = &t;
        b.table = &cache.entries[op.weights[0]];  // interleaved, if a tied head is (then read from there)
        break;
      }
      case OpKind::RmsNorm:
        if (!op.weights.empty()) {
          expect_shape(p, weight(0), op.weights[0], {op.group > 0 ? op.group : cols(op.inputs[0])});
          f32_vector(0);
          b.w0 = &weight(0);
        }
        break;
      case OpKind::Linear: {
        const WeightView& t = weight(0);
        expect_shape(p, t, op.weights[0], {cols(op.outputs[0]), cols(op.inputs[0])});
        b.w0 = &t;
        if (op.weights.size() > 1) {
          expect_shape(p, weight(1), op.weights[1], {cols(op.outputs[0])});
          b.w1 = f32_vector(1);
        }
        if (isa != Isa::Scalar && kernels::QLinearWeights::supported(t)) {
          QLinearEntry& entry = cache.entries[op.weights[0]];
          const bool head = p.values[op.inputs[0]].rows == RowsKind::LogitRows;
          // The fast level runs its blocked linears on their interleaved
          // form, one copy per weight for every program: the layers', and
          // the head's where the interleaved sums' f32 rounding fits its
          // refinement's bound (the refinement, and the embedding lookup of
          // a tied head, then read rows back from the copy). Such a weight's
          // QLinearWeights is never expanded (its shape, and the head's
          // precomputed norms, are all that is read from it).
          const bool interleave = arithmetic == Arithmetic::Fast && kernels::InterleavedWeights::supported(t) &&
                                  (!head || kernels::InterleavedWeights::fits_refine_bound(t));
          if (!entry.weights)
            entry.weights = std::make_shared<const kernels::QLinearWeights>(
                t, interleave ? kernels::QLinearWeights::Expand::No : kernels::QLinearWeights::Expand::Yes);
          b.qw = entry.weights;
          // Layers' linears read their input in two int8 passes (x and its
          // residual; one if the model was loaded so, act_passes). The
          // output head (logit rows) runs one pass and then recomputes
          // with two every logit that could be the top one
          // (kernels/qlinear_refine.h): its argmax is the two-pass one, at
          // about one pass's cost on a third of a small model's bytes
          // (docs/BENCHMARKING.md, "Two activation passes"). At avx2 the
          // layers' two passes take the narrow range (kernels::layer_act_qmax);
          // the head keeps the full one, which the refinement's bound and its
          // one pass rely on.
          // The head's row norms, read from the stored bytes before they may be given back.
          if (head && !entry.refine)
            entry.refine = std::make_shared<const kernels::RefineHead>(kernels::make_refine_head(*entry.weights));
          if (interleave) {
            if (!entry.interleaved)
              entry.interleaved = std::make_shared<const kernels::InterleavedWeights>(t, cache.arena, /*give_back=*/true);
            b.iw = entry.interleaved;
          }
          b.act_layout = b.iw ? kernels::ActLayout::Natural : entry.weights->layout();
          b.act_passes = head ? 1 : act_passes;
          b.act_qmax = head ? kernels::kActQmax : kernels::layer_act_qmax(isa, b.act_passes);
          // The fast level's interleaved layers take one activation scale
          // per 32 columns (kernels/interleaved_linear.h); the head keeps 8,
          // which its refinement's residual bound is computed for.
          b.act_block = b.iw && !head ? kernels::kActBlockCoarse : kernels::kActBlock;
          b.refine_top = head;
          if (head) b.refine = entry.refine;
        } else if (kernels::float_linear_vectorized(isa) && kernels::float_linear_supported(t)) {
          b.float_linear = true;
        }
        break;
      }
      case OpKind::ShortConv:
      case OpKind::CausalConv: {
        // The weight loader gives depthwise convolutions as [channels][kernel]
        // (HF's [channels][1][kernel] squeezed; GGUF's as stored).
        const WeightView& t = weight(0);
        const bool gated = op.kind == OpKind::ShortConv;
        const int64_t channels = cols(op.outputs.back()), kernel = op.kernel;
        if (cols(op.inputs.at(0)) != (gated ? 3 : 1) * channels || cols(op.outputs.at(0)) != channels)
          fail(p.name, op.weights[0], "convolution input has {} columns for {} channels", cols(op.inputs.at(0)),
               channels);
        if (t.shape != std::vector<int64_t>{channels, kernel})
          fail(p.name, op.weights[0], "conv weight has shape [{}], the model needs [{}, {}]", fmt::join(t.shape, ", "),
               channels, kernel);
        if (t.format != WeightFormat::F32)
          fail(p.name, op.weights[0], "conv weight must be f32, found {}", weight_format_name(t.format));
        const float* w = static_cast<const float*>(t.data);
        b.prepared.resize(static_cast<size_t>(kernel * channels));
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t j = 0; j < kernel; ++j) b.prepared[j * channels + c] = w[c * kernel + j];
        b.w0 = &t;
        break;
      }
      case OpKind::SliceCols:
        if (op.col_offset < 0 || op.col_offset + cols(op.outputs.at(0)) > cols(op.inputs.at(0)))
          fail(p.name, p.values[op.outputs[0]].name, "columns {}..{} are outside the {} of {}", op.col_offset,
               op.col_offset + cols(op.outputs[0]), cols(op.inputs[0]), p.values[op.inputs[0]].name);
        break;
      case OpKind::Scale:
        if (!op.weights.empty()) {
          expect_shape(p, weight(0), op.weights[0], {1});
          b.w1 = f32_vector(0);
        }
        break;
      case OpKind::DeltaRule: {
        const int64_t heads = op.heads;
        if (cols(op.inputs.at(0)) != 2 * op.kv_heads * op.head_dim + heads * op.value_dim ||
            cols(op.inputs.at(1)) != heads || cols(op.inputs.at(2)) != heads ||
            cols(op.outputs.at(0)) != heads * op.value_dim || op.kv_heads < 1 || heads % op.kv_heads != 0)
          fail(p.name, "delta rule", "values do not fit {} value heads of {} x {} over {} key heads", heads,
               op.head_dim, op.value_dim, op.kv_heads);
        for (size_t i = 0; i < 2; ++i) expect_shape(p, weight(i), op.weights[i], {heads});
        const float* a_log = f32_vector(0);
        const float* dt_bias = f32_vector(1);
        b.prepared.resize(static_cast<size_t>(2 * heads));
        for (int64_t h = 0; h < heads; ++h) {
          b.prepared[h] = -std::exp(a_log[h]);
          b.prepared[heads + h] = dt_bias[h];
        }
        break;
      }
      case OpKind::Argmax: {
        const Value &in = p.values[op.inputs.at(0)], &out = p.values[op.outputs.at(0)];
        if (in.type != ValueType::F32 || out.type != ValueType::I32 || out.cols != 1 || in.rows != out.rows)
          fail(p.name, out.name, "argmax needs f32 rows in and one i32 per row out");
        break;
      }
      default:
        break;
    }
    ops_.push_back(b);
    placement_.push_back(place(op, b.w0, b.qw != nullptr, b.float_linear, level,
                               b.iw ? fmt::format("interleaved.{}", linear_level) : linear_level));
  }
  // A Linear whose input was quantized by the previous integer Linear, with
  // no op writing that value in between (q/k/v, gate/up), reuses it.
  int quantized = -1, passes = 0, qmax = 0;
  int64_t act_block = 0;
  kernels::ActLayout layout = kernels::ActLayout::Natural;
  for (BoundOp& b : ops_) {
    const Op& op = *b.op;
    if (b.qw) {
      b.reuse_acts = quantized == op.inputs[0] && layout == b.act_layout && passes == b.act_passes &&
                     qmax == b.act_qmax && act_block == b.act_block;
      quantized = op.inputs[0];
      act_block = b.act_block;
      layout = b.act_layout;
      passes = b.act_passes;
      qmax = b.act_qmax;
    }
    for (int out : op.outputs)
      if (out == quantized) quantized = -1;
  }
  find_row_blocks();
  // Groups: a Linear that reuses the quantized input of the Linear right
  // before it joins that Linear's group (the head, which refines its
  // outputs afterwards, stays alone).
  for (size_t i = 1; i < ops_.size(); ++i) {
    BoundOp& b = ops_[i];
    if (!b.reuse_acts || b.refine_top || !ops_[i - 1].qw || ops_[i - 1].refine_top ||
        p.values[b.op->inputs[0]].rows != RowsKind::Tokens)
      continue;
    size_t leader = i - 1;
    while (ops_[leader].linear_group == 0) --leader;
    if (ops_[leader].linear_group == kMaxLinearGroup) continue;  // b leads the next group
    ++ops_[leader].linear_group;
    b.linear_group = 0;
  }
}


size_t BoundProgram::step_length(size_t i, int64_t rows) const {
  const BoundOp& b = ops_[i];
  // A group's members share the input, so they share the row count and path.
  return b.linear_group > 1 && linear_path(b, rows) == LinearPath::IntegerDot ? static_cast<size_t>(b.linear_group)
                                                                                : 1;
}

void BoundProgram::find_row_blocks() {
  const Program& p = *program_;
  const size_t n_ops = ops_.size();
  segment_end_.assign(n_ops, 0);
  block_local_.assign(p.values.size(), 0);
  // Maximal runs of row-local ops; only those with a Linear are worth blocking.
  std::vector<int> segment(n_ops, -1);
  int segments = 0;
  for (size_t i = 0; i < n_ops;) {
    size_t e = i;
    bool linear = false;
    while (e < n_ops && row_local(p, *ops_[e].op)) linear |= ops_[e++].op->kind == OpKind::Linear;
    if (e > i && linear) {
      segment_end_[i] = e;
      for (size_t j = i; j < e; ++j) segment[j] = segments;
      ++segments;
    }
    i = std::max(e, i + 1);
  }
  // A value is block-local when every read of it comes after a write of it
  // in the same run (rows of a block are written before they are read, and
  // nothing outside the run sees them), and the caller neither writes nor
  // reads it.
  std::vector<int> written_in(p.values.size(), -1);
  std::vector<char> local(p.values.size(), 1);
  for (const std::vector<int>* ids : {&p.inputs, &p.outputs})
    for (int id : *ids) local[id] = 0;
  for (size_t i = 0; i < n_ops; ++i) {
    const Op& op = *ops_[i].op;
    const int s = segment[i];
    std::vector<int> reads = op.inputs;
    if (op.kind == OpKind::Add) reads.insert(reads.end(), op.outputs.begin(), op.outputs.end());  // y += x
    for (int id : reads)
      if (s < 0 || written_in[id] != s) local[id] = 0;
    for (int id : op.outputs) {
      if (s < 0) local[id] = 0;
      written_in[id] = s;
    }
  }
  if (segments > 0) block_local_ = std::move(local);
  // A Linear reuses the previous one's quantized input only within a run:
  // a blocked run leaves just its last block quantized.
  int prev = -1;
  for (size_t i = 0; i < n_ops; ++i) {
    if (!ops_[i].qw) continue;
    if (ops_[i].reuse_acts && prev >= 0 && segment[prev] != segment[i]) ops_[i].reuse_acts = false;
    prev = static_cast<int>(i);
  }
}

Workspace BoundProgram::make_workspace() const {
  Workspace ws;
  const size_t n = program_->values.size();
  ws.f32.resize(n);
  ws.i32.resize(n);
  ws.offset.assign(n, 0);
  return ws;
}

int64_t BoundProgram::block_rows(const CallContext& ctx) const {
  const int64_t T = ctx.rows;
  if (row_block_ <= 0 || T <= row_block_ || ctx.on_linear_input) return T;
  // Blocks of equal size (more than half a row block each), the size rounded
  // up to whole tiles of the level's prefill kernel — the AMX kernels'
  // 16-row tiles, the int16 GEMMs' token tiles (kI16GemmTokenMultiple) —
  // where that leaves the last block at least half the others (so more than
  // a quarter of a row block): 512 tokens run as 4 × 128 at amx and as
  // 3 × 132 + 116 at avx512 / avx2; 300 as 112 + 112 + 76 and 108 + 108 + 84.
  // even <= row_block_, so the rounding takes a block past row_block_ by
  // less than one tile. With the default block that is kAmxMinTokens rows or
  // more: a block takes the kernel path the whole call would.
  const int64_t tile = uses_i16gemm(isa_) && arithmetic_ == Arithmetic::Exact ? kernels::kI16GemmTokenMultiple : 16;
  const int64_t blocks = (T + row_block_ - 1) / row_block_;
  const int64_t even = (T + blocks - 1) / blocks;
  const int64_t tiles = (even + tile - 1) / tile * tile;
  if (2 * (T - (blocks - 1) * tiles) >= tiles) return tiles;
  return even;
}

void BoundProgram::fit(Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  if (ws.offset.size() != p.values.size()) ws = make_workspace();
  const int64_t block = block_rows(ctx);
  const int64_t L = static_cast<int64_t>(ctx.logit_rows.size());
  for (size_t i = 0; i < p.values.size(); ++i) {
    const Value& v = p.values[i];
    const int64_t rows = v.rows == RowsKind::LogitRows ? L : (block_local_[i] ? block : ctx.rows);
    const size_t need = static_cast<size_t>(rows * v.cols);
    if (v.type == ValueType::F32) {
      if (ws.f32[i].size() < need) ws.f32[i].resize(need);
    } else if (ws.i32[i].size() < need) {
      ws.i32[i].resize(need);
    }
  }
  ws.rows_fitted = std::max(ws.rows_fitted, ctx.rows);
  ws.logit_rows_fitted = std::max(ws.logit_rows_fitted, L);
}

std::unique_ptr<CallBuffers> BoundProgram::make_buffers() const {
  return std::make_unique<Workspace>(make_workspace());
}

void BoundProgram::fit(CallBuffers& buffers, const CallContext& ctx) const {
  fit(static_cast<Workspace&>(buffers), ctx);
}

void BoundProgram::run(CallBuffers& buffers, const CallContext& ctx) const {
  run(static_cast<Workspace&>(buffers), ctx);
}

int64_t BoundProgram::buffer_bytes(int64_t rows) const {
  CallContext ctx;
  ctx.rows = rows;
  ctx.logit_rows = {static_cast<int32_t>(rows - 1)};
  Workspace ws = make_workspace();
  fit(ws, ctx);
  int64_t bytes = 0;
  for (const auto& v : ws.f32) bytes += static_cast<int64_t>(v.size() * sizeof(float));
  for (const auto& v : ws.i32) bytes += static_cast<int64_t>(v.size() * sizeof(int32_t));
  return bytes;
}

void BoundProgram::run(Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const int64_t T = ctx.rows;
  if (T < 1 || T > p.max_tokens) fail(p.name, "call", "{} rows for a program of at most {}", T, p.max_tokens);
  fit(ws, ctx);
  if (OpProfile* prof = ctx.profile) {
    prof->seconds.resize(ops_.size());
    prof->calls.resize(ops_.size());
  }
  const int64_t block = block_rows(ctx);
  for (size_t i = 0; i < ops_.size();) {
    if (block == T || segment_end_[i] == 0) {
      i += run_step(i, ws, ctx, true);
      continue;
    }
    // A run of row-local ops, block by block: the values that outlive the
    // run are addressed at the block's first row, block-local ones at row 0.
    const size_t end = segment_end_[i];
    CallContext part = ctx;
    for (int64_t r0 = 0; r0 < T; r0 += block) {
      part.rows = std::min(block, T - r0);
      // Given embeddings, clipped to the block and counted from its first row.
      part.embeddings.clear();
      for (const CallContext::EmbeddingRows& e : ctx.embeddings) {
        const int64_t from = std::max(e.row, r0), to = std::min(e.row + e.rows, r0 + part.rows);
        if (from < to) part.embeddings.push_back({from - r0, to - from, e.values + (from - e.row) * embed_cols_});
      }
      for (size_t id = 0; id < p.values.size(); ++id)
        ws.offset[id] = block_local_[id] || p.values[id].rows != RowsKind::Tokens ? 0 : r0 * p.values[id].cols;
      for (size_t j = i; j < end;) j += run_step(j, ws, part, r0 == 0);
    }
    std::fill(ws.offset.begin(), ws.offset.end(), 0);
    i = end;
  }
}

size_t BoundProgram::run_step(size_t i, Workspace& ws, const CallContext& ctx, bool count) const {
  const Program& p = *program_;
  // Linears share input rows with their group, so the first's rows decide.
  const Op& op = *ops_[i].op;
  const int64_t rows = op.kind == OpKind::Linear && p.values[op.inputs[0]].rows == RowsKind::LogitRows
                           ? static_cast<int64_t>(ctx.logit_rows.size())
                           : ctx.rows;
  const size_t n = step_length(i, ctx.decode_kernels ? 1 : rows);
  OpProfile* prof = ctx.profile;
  const auto start = prof ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (n > 1) run_linear_group(i, n, ws, ctx);
  else run_op(ops_[i], ws, ctx);
  if (prof) {
    // A group's time is booked on its first op; every op counts the call
    // (once per call, whatever its row blocks).
    prof->seconds[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (count)
      for (size_t j = i; j < i + n; ++j) prof->calls[j] += 1;
  }
  return n;
}

void BoundProgram::run_op(const BoundOp& b, Workspace& ws, const CallContext& ctx) const {
  const OpFamily family = op_family(b.op->kind);
  if (!ctx.row_states.empty() && (family == OpFamily::Attention || family == OpFamily::SequenceMixer)) {
    run_rows_on_own_states(b, ws, ctx);
    return;
  }
  switch (family) {
    case OpFamily::Linear: run_linear(b, ws, ctx); break;
    case OpFamily::Attention: run_attention(b, ws, ctx); break;
    case OpFamily::SequenceMixer: run_sequence_mixer(b, ws, ctx); break;
    case OpFamily::Elementwise: run_elementwise(b, ws, ctx); break;
  }
}

}  // namespace tessera
