#include "runtime/executor.h"

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

namespace tessera {

namespace {

// Elements per thread below which an elementwise op is not split (a decode
// step's ops are a few thousand elements; a pool hand-off costs microseconds).
constexpr int64_t kElementwiseGrain = 16384;
// Query rows per work item of a prefill attention split (see Attention).
constexpr int64_t kAttentionRowBlock = 16;
// Linears in one group at most (q/k/v make 3).
constexpr int kMaxLinearGroup = 8;
static_assert(kDefaultRowBlock / 4 >= kernels::kAmxMinTokens, "row blocks would leave the AMX kernels");

// The levels whose prefill calls (kI16GemmMinTokens rows or more) run the
// int16 GEMM; Isa::Amx has its tiles instead.
bool uses_i16gemm(Isa isa) { return isa == Isa::Avx2 || isa == Isa::Avx512; }

void expect_shape(const Program& p, const WeightView& t, const std::string& name, std::vector<int64_t> shape) {
  if (t.shape != shape)
    fail(p.name, name, "weight has shape [{}], the model needs [{}]", fmt::join(t.shape, ", "), fmt::join(shape, ", "));
}

// `level` names the vector kernels (and the float Linear kernels);
// `linear_level` the integer Linear kernels of this program (amx for
// prefill programs at Isa::Amx).
KernelPlacement place(const Op& op, const WeightView* w, bool integer_linear, bool float_linear,
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
                           int64_t row_block, Arithmetic arithmetic)
    : program_(&program), isa_(isa), arithmetic_(arithmetic), vops_(&kernels::vector_ops(isa)), row_block_(row_block) {
  const Program& p = program;
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
          if (!entry.weights) entry.weights = std::make_shared<const kernels::QLinearWeights>(t);
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
          const bool head = p.values[op.inputs[0]].rows == RowsKind::LogitRows;
          // The head's row norms, read from the stored bytes before they may be given back.
          if (head && !entry.refine)
            entry.refine = std::make_shared<const kernels::RefineHead>(kernels::make_refine_head(*entry.weights));
          // The fast level runs its blocked linears on their interleaved
          // form, one copy per weight for every program: the layers', and
          // the head's where the interleaved sums' f32 rounding fits its
          // refinement's bound (the refinement, and the embedding lookup of
          // a tied head, then read rows back from the copy).
          if (arithmetic == Arithmetic::Fast && kernels::InterleavedWeights::supported(*entry.weights)) {
            if (!head || kernels::InterleavedWeights::fits_refine_bound(*entry.weights)) {
              if (!entry.interleaved)
                entry.interleaved = std::make_shared<const kernels::InterleavedWeights>(*entry.weights, cache.arena,
                                                                                         /*give_back=*/true);
              b.iw = entry.interleaved;
            }
          }
          b.act_layout = b.iw ? kernels::ActLayout::Natural : entry.weights->layout();
          b.act_passes = head ? 1 : act_passes;
          b.act_qmax = head ? kernels::kActQmax : kernels::layer_act_qmax(isa, b.act_passes);
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
  kernels::ActLayout layout = kernels::ActLayout::Natural;
  for (BoundOp& b : ops_) {
    const Op& op = *b.op;
    if (b.qw) {
      b.reuse_acts = quantized == op.inputs[0] && layout == b.act_layout && passes == b.act_passes &&
                     qmax == b.act_qmax;
      quantized = op.inputs[0];
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

BoundProgram::LinearPath BoundProgram::linear_path(const BoundOp& b, int64_t rows) const {
  if (b.float_linear) return LinearPath::Float;
  if (!b.qw) return LinearPath::Reference;
  // The GEMMs take one scale per row; blocked weights scale per block.
  if (b.qw->blocked() || arithmetic_ == Arithmetic::Fast) return LinearPath::IntegerDot;
  if (isa_ == Isa::Amx && rows >= kernels::kAmxMinTokens) return LinearPath::Amx;
  if (uses_i16gemm(isa_) && rows >= kernels::kI16GemmMinTokens) return LinearPath::I16Gemm;
  return LinearPath::IntegerDot;
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

int64_t BoundProgram::workspace_bytes(int64_t rows) const {
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

void BoundProgram::run_linear_group(size_t first, size_t count, Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const BoundOp& lead = ops_[first];
  const int in = lead.op->inputs[0];
  const int64_t k = p.values[in].cols, rows = ctx.rows;
  const float* x = ws.f(in);
  if (ctx.on_linear_input)
    for (size_t m = first; m < first + count; ++m) (*ctx.on_linear_input)(ops_[m].op->weights[0], x, rows, k);
  if (!lead.reuse_acts)
    kernels::quantize_activations(isa_, x, rows, k, lead.act_layout, lead.act_passes, ws.acts, lead.act_qmax);
  // The members' units of work end to end — blocks of 4 output features,
  // or of 16 for an interleaved weight (its row groups) — in one
  // parallel_for over all of them (one hand-off to the pool instead of one
  // per Linear). Every output is computed as when its Linear runs alone.
  std::array<int64_t, kMaxLinearGroup + 1> start{};
  bool interleaved = false;
  auto unit = [&](size_t m) -> int64_t { return ops_[first + m].iw ? kernels::kInterleavedRows : 4; };
  for (size_t m = 0; m < count; ++m) {
    start[m + 1] = start[m] + (p.values[ops_[first + m].op->outputs[0]].cols + unit(m) - 1) / unit(m);
    interleaved |= ops_[first + m].iw != nullptr;
  }
  const Isa isa = isa_;
  ctx.pool->parallel_for(
      start[count],
      [&](int64_t begin, int64_t end) {
        for (size_t m = 0; m < count; ++m) {
          const int64_t b = std::max(begin, start[m]), e = std::min(end, start[m + 1]);
          if (b >= e) continue;
          const BoundOp& op = ops_[first + m];
          const int64_t n = p.values[op.op->outputs[0]].cols;
          if (op.iw)
            kernels::interleaved_linear(isa, *op.iw, ws.acts, op.w1, b - start[m], e - start[m],
                                        ws.f(op.op->outputs[0]), n);
          else
            kernels::qlinear(isa, *op.qw, ws.acts, op.w1, (b - start[m]) * 4, std::min(n, (e - start[m]) * 4),
                             ws.f(op.op->outputs[0]), n);
        }
      },
      interleaved ? 4 : 16);
}

// Qwen3.5's gated delta rule over a call (Qwen3_5GatedDeltaNet after its
// conv, torch_recurrent_gated_delta_rule), one position at a time:
//   q̂, k̂ = l2norm(q), l2norm(k) per key head (x / sqrt(Σx² + 1e-6)); q̂ /= √key_dim
//   β = sigmoid(b);  decay = exp(−exp(A_log) · softplus(a + dt_bias))
//   per value head h (key head h / (heads / key heads)): ref::delta_rule_step
// The recurrent form, also for prefill: the chunked form transformers uses
// for prompts is the same sum reassociated, which would make a position's
// bits depend on how the sequence was cut into calls. Value heads are
// independent, so the thread split changes no bits; the updates are logged
// for rollback (runtime/recurrent_state.h).
void BoundProgram::run_delta_rule(const BoundOp& b, Workspace& ws, const CallContext& ctx, SequenceState& state,
                                  int64_t row0, int64_t rows) const {
  const Op& op = *b.op;
  const int64_t T = rows, Hv = op.heads, Hk = op.kv_heads, dk = op.head_dim, dv = op.value_dim;
  const int64_t group = Hv / Hk, width = 2 * Hk * dk + Hv * dv;
  const float* qkv = ws.f(op.inputs[0]) + row0 * width;
  const float *a = ws.f(op.inputs[1]) + row0 * Hv, *bb = ws.f(op.inputs[2]) + row0 * Hv;
  float* o = ws.f(op.outputs[0]) + row0 * Hv * dv;
  RecurrentState& rs = state.recurrent();
  float* S = rs.matrices(op.layer);
  // Per position: q̂ per key head, k̂ per value head (the log's layout), v, decay, β.
  std::vector<float> q(static_cast<size_t>(T * Hk * dk)), k(static_cast<size_t>(T * Hv * dk));
  std::vector<float> vals(static_cast<size_t>(T * Hv * dv)), decay(static_cast<size_t>(T * Hv)),
      beta(static_cast<size_t>(T * Hv));
  const float* neg_exp_a = b.prepared.data();
  const float* dt_bias = b.prepared.data() + Hv;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  ctx.pool->parallel_for(T, [&](int64_t t0, int64_t t1) {
    std::vector<float> kn(static_cast<size_t>(dk));
    for (int64_t t = t0; t < t1; ++t) {
      const float* row = qkv + t * width;
      for (int64_t h = 0; h < Hk; ++h) {
        auto l2norm = [&](const float* x, float* y, float scale) {
          float ss = 0.0f;
          for (int64_t i = 0; i < dk; ++i) ss += x[i] * x[i];
          const float inv = 1.0f / std::sqrt(ss + 1e-6f);
          for (int64_t i = 0; i < dk; ++i) y[i] = x[i] * inv * scale;
        };
        l2norm(row + h * dk, q.data() + (t * Hk + h) * dk, q_scale);
        l2norm(row + (Hk + h) * dk, kn.data(), 1.0f);
        for (int64_t r = 0; r < group; ++r)
          std::copy(kn.begin(), kn.end(), k.begin() + (t * Hv + h * group + r) * dk);
      }
      std::copy(row + 2 * Hk * dk, row + width, vals.begin() + t * Hv * dv);
      for (int64_t h = 0; h < Hv; ++h) {
        const float x = a[t * Hv + h] + dt_bias[h];
        const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));  // F.softplus (threshold 20)
        decay[t * Hv + h] = std::exp(neg_exp_a[h] * softplus);
        beta[t * Hv + h] = 1.0f / (1.0f + std::exp(-bb[t * Hv + h]));
      }
    }
  });
  const kernels::VectorOps& v = *vops_;
  ctx.pool->parallel_for(Hv, [&](int64_t h0, int64_t h1) {
    std::vector<float> scratch(static_cast<size_t>(dv));
    for (int64_t h = h0; h < h1; ++h) {
      float* Sh = S + h * dk * dv;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t i = t * Hv + h;
        v.delta_rule_step(Sh, q.data() + (t * Hk + h / group) * dk, k.data() + i * dk, vals.data() + i * dv, decay[i],
                          beta[i], dk, dv, scratch.data(), o + t * Hv * dv + h * dv);
      }
    }
  });
  rs.log(op.layer, state.length(), k.data(), vals.data(), decay.data(), beta.data(), T);
}

void BoundProgram::run_rows_on_own_states(const BoundOp& b, Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const Op& op = *b.op;
  const int64_t B = ctx.rows;
  ThreadPool& pool = *ctx.pool;
  const kernels::VectorOps& v = *vops_;
  const auto& states = ctx.row_states;
  switch (op.kind) {
    case OpKind::Attention: {
      const int64_t qw = p.values[op.inputs[0]].cols, kvw = p.values[op.inputs[1]].cols;
      float *k = ws.f(op.inputs[1]), *vv = ws.f(op.inputs[2]);
      if (states[0]->kv().type() == KvType::F16) {
        v.round_to_f16(k, B * kvw);
        v.round_to_f16(vv, B * kvw);
      }
      const ref::AttentionShape shape{op.heads, op.kv_heads, op.head_dim, op.window, op.scale, op.softcap};
      const float* q = ws.f(op.inputs[0]);
      float* o = ws.f(op.outputs[0]);
      // Items (row, run of heads), as one decode step splits its heads.
      const int64_t parts = std::min<int64_t>(pool.threads(), op.heads);
      pool.parallel_for(B * parts, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t r = i / parts, part = i % parts;
          const ref::KvSpan span = states[r]->kv().span(op.kv_layer, op.window, k + r * kvw, vv + r * kvw);
          v.attention(q + r * qw, 1, span, shape, op.heads * part / parts, op.heads * (part + 1) / parts, 0, 1,
                      o + r * qw);
        }
      });
      break;
    }
    case OpKind::KvStore: {
      const int64_t kvw = p.values[op.inputs[0]].cols;
      for (int64_t r = 0; r < B; ++r)
        states[r]->kv().store(op.kv_layer, ws.f(op.inputs[0]) + r * kvw, ws.f(op.inputs[1]) + r * kvw, 1);
      break;
    }
    case OpKind::ShortConv:
    case OpKind::CausalConv: {
      const int64_t channels = p.values[op.outputs.back()].cols, kernel = op.kernel;
      const int64_t in_cols = p.values[op.inputs[0]].cols;
      const bool gated = op.kind == OpKind::ShortConv;
      pool.parallel_for(B, [&](int64_t r0, int64_t r1) {
        std::vector<const float*> past(static_cast<size_t>(std::max<int64_t>(0, kernel - 1)));
        for (int64_t r = r0; r < r1; ++r) {
          ConvState& conv = states[r]->conv();
          conv.past_rows(op.layer, states[r]->length(), past.data());
          const float* x = ws.f(op.inputs[0]) + r * in_cols;
          float* y = ws.f(op.outputs.back()) + r * channels;
          if (gated) {
            float* bx = ws.f(op.outputs[0]) + r * channels;
            v.short_conv(x, 1, channels, kernel, b.prepared.data(), past.data(), 0, channels, bx, y);
            conv.store(op.layer, states[r]->length(), bx, 1);
          } else {
            v.causal_conv_silu(x, 1, channels, kernel, b.prepared.data(), past.data(), 0, channels, y);
            conv.store(op.layer, states[r]->length(), x, 1);
          }
        }
      });
      break;
    }
    case OpKind::DeltaRule:
      for (int64_t r = 0; r < B; ++r) run_delta_rule(b, ws, ctx, *states[r], r, 1);
      break;
    default:
      fail(p.name, op_kind_name(op.kind), "op has no per-sequence form");
  }
}

void BoundProgram::run_op(const BoundOp& b, Workspace& ws, const CallContext& ctx) const {
  if (!ctx.row_states.empty()) {
    switch (b.op->kind) {
      case OpKind::Attention:
      case OpKind::KvStore:
      case OpKind::ShortConv:
      case OpKind::CausalConv:
      case OpKind::DeltaRule:
        run_rows_on_own_states(b, ws, ctx);
        return;
      default:
        break;
    }
  }
  const Program& p = *program_;
  const int64_t T = ctx.rows;
  const int64_t L = static_cast<int64_t>(ctx.logit_rows.size());
  ThreadPool& pool = *ctx.pool;
  auto rows_of = [&](int id) { return p.values[id].rows == RowsKind::Tokens ? T : L; };
  const kernels::VectorOps& v = *vops_;
  const Op& op = *b.op;
  switch (op.kind) {
    case OpKind::Embed: {
      const kernels::InterleavedWeights* iw = b.table ? b.table->interleaved.get() : nullptr;
      if (!iw) {
        ref::embed_any(*b.w0, ws.i(op.inputs[0]), T, op.scale, ws.f(op.outputs[0]));
        break;
      }
      // The table's stored bytes were given back: each row comes back from
      // the interleaved copy in its stored format and decodes as before.
      kernels::InterleavedWeights::StoredRows row;
      ref::embed_decoded(iw->rows(), iw->cols(), ws.i(op.inputs[0]), T, op.scale, ws.f(op.outputs[0]),
                         [&](int64_t id, float* dst) {
                           iw->restore_rows(id, id + 1, row);
                           decode_row(row.view, 0, dst);
                         });
      break;
    }
    case OpKind::RmsNorm: {
      const int in = op.inputs[0];
      const int64_t width = op.group > 0 ? op.group : p.values[in].cols;
      const int64_t rows = rows_of(in) * (p.values[in].cols / width);
      const float* w = b.w0 ? static_cast<const float*>(b.w0->data) : nullptr;
      const float* x = ws.f(in);
      float* y = ws.f(op.outputs[0]);
      // Rows are independent: any split gives the same bits. Decode's one
      // row stays on this thread (the grain).
      pool.parallel_for(
          rows,
          [&](int64_t r0, int64_t r1) {
            v.rms_norm(x + r0 * width, w, r1 - r0, width, op.eps, op.plus_one, y + r0 * width);
          },
          std::max<int64_t>(1, kElementwiseGrain / width));
      break;
    }
    case OpKind::Linear: {
      const int in = op.inputs[0], out = op.outputs[0];
      const int64_t k = p.values[in].cols, n = p.values[out].cols, rows = rows_of(in);
      const float* x = ws.f(in);
      float* y = ws.f(out);
      if (ctx.on_linear_input) (*ctx.on_linear_input)(op.weights[0], x, rows, k);
      const LinearPath path = linear_path(b, ctx.decode_kernels ? 1 : rows);
      if (path == LinearPath::Amx) {
        // Linears sharing an input share its row count, so the one that
        // packed this input (reuse_acts) took this path too.
        if (!b.reuse_acts) {
          kernels::prepare_bf16_activations(rows, k, ws.bf16_acts);
          pool.parallel_for(kernels::bf16_data_blocks(rows), [&](int64_t begin, int64_t end) {
            kernels::pack_bf16_blocks(isa_, x, begin, end, ws.bf16_acts);
          });
        }
        // Grains of two 16-feature tiles: the kernel's 32-row weight panel.
        pool.parallel_for(
            (n + 15) / 16,
            [&](int64_t begin, int64_t end) {
              kernels::qlinear_amx(*b.qw, ws.bf16_acts, b.w1, begin * 16, std::min(n, end * 16), y, n);
            },
            2);
      } else if (path == LinearPath::I16Gemm) {
        if (!b.reuse_acts) {
          kernels::prepare_int16_activations(rows, k, ws.i16_acts);
          pool.parallel_for(rows, [&](int64_t begin, int64_t end) {
            kernels::quantize_int16_rows(isa_, x, begin, end, ws.i16_acts);
          });
        }
        // Blocks of 32 output features: the rows one expansion serves.
        pool.parallel_for((n + 31) / 32, [&](int64_t begin, int64_t end) {
          kernels::qlinear_i16gemm(isa_, *b.qw, ws.i16_acts, b.w1, begin * 32, std::min(n, end * 32), y, n);
        });
      } else if (path == LinearPath::IntegerDot) {
        if (!b.reuse_acts)
          kernels::quantize_activations(isa_, x, rows, k, b.act_layout, b.act_passes, ws.acts, b.act_qmax);
        // Units of work: blocks of 4 output features (the lane kernels'),
        // or row groups of 16 (an interleaved weight's), 16 or 4 per grain.
        // The output head's refinement scans each range's outputs right
        // after computing them, while they are in cache
        // (kernels/qlinear_refine.h), then recomputes each row's candidates
        // with two passes (an interleaved head's rows restored to their
        // stored format first): on the calling thread when they are few
        // (SmolLM2's decode: about 22 blocks, which took longer handed to the
        // pool), spread over it past 128 blocks (blocks are independent: same
        // bits).
        const Isa isa = isa_;
        const int64_t unit = b.iw ? kernels::kInterleavedRows : 4, grain = b.iw ? 4 : 16;
        const int64_t units = (n + unit - 1) / unit;
        if (b.refine_top) kernels::refine_prepare(isa, *b.qw, *b.refine, x, rows, units / grain + 1, ws.refine);
        pool.parallel_for(
            units,
            [&](int64_t begin, int64_t end) {
              const int64_t n0 = begin * unit, n1 = std::min(n, end * unit);
              if (b.iw) kernels::interleaved_linear(isa, *b.iw, ws.acts, b.w1, begin, end, y, n);
              else kernels::qlinear(isa, *b.qw, ws.acts, b.w1, n0, n1, y, n);
              if (b.refine_top) kernels::refine_scan_range(isa, *b.qw, *b.refine, y, n, rows, n0, n1, ws.refine);
            },
            grain);
        for (int64_t t = 0; b.refine_top && t < rows; ++t) {
          const int64_t blocks = kernels::refine_plan_row(isa, *b.qw, *b.refine, x, y, n, t, ws.refine);
          float* yt = y + t * n;
          pool.parallel_for(
              blocks,
              [&](int64_t begin, int64_t end) {
                if (b.iw) kernels::refine_blocks_interleaved(isa, *b.iw, ws.refine, b.w1, begin, end, yt);
                else kernels::refine_blocks(isa, *b.qw, ws.refine, b.w1, begin, end, yt);
              },
              64);
        }
      } else if (path == LinearPath::Float) {
        // Blocks of 4 output features: the kernels' row tile.
        const Isa isa = isa_;
        pool.parallel_for(
            (n + 3) / 4,
            [&](int64_t begin, int64_t end) {
              kernels::float_linear(isa, *b.w0, x, rows, b.w1, begin * 4, std::min(n, end * 4), y, n);
            },
            16);
      } else {
        pool.parallel_for(
            n, [&](int64_t begin, int64_t end) { ref::linear_any(x, rows, k, *b.w0, b.w1, n, begin, end, y); }, 64);
      }
      break;
    }
    case OpKind::Rope: {
      // Rows are independent (cos / sin are [rows, rot_dim / 2]): any split
      // gives the same bits.
      float* x = ws.f(op.inputs[0]);
      const float *cos = ws.f(op.inputs[1]), *sin = ws.f(op.inputs[2]);
      const int64_t width = op.heads * op.head_dim, half = op.rot_dim / 2;
      pool.parallel_for(
          T,
          [&](int64_t r0, int64_t r1) {
            v.rope(x + r0 * width, r1 - r0, op.heads, op.head_dim, op.rot_dim, op.neox, cos + r0 * half,
                   sin + r0 * half);
          },
          std::max<int64_t>(1, kElementwiseGrain / width));
      break;
    }
    case OpKind::Attention: {
      if (ctx.state->kv().type() == KvType::F16) {
        // The call's own rows take the values the cache will hold (kv_cache.h).
        const int64_t n = T * p.values[op.inputs[1]].cols;
        v.round_to_f16(ws.f(op.inputs[1]), n);
        v.round_to_f16(ws.f(op.inputs[2]), n);
      }
      const ref::KvSpan span = ctx.state->kv().span(op.kv_layer, op.window, ws.f(op.inputs[1]), ws.f(op.inputs[2]));
      ref::AttentionShape shape{op.heads, op.kv_heads, op.head_dim, op.window, op.scale, op.softcap};
      const float* q = ws.f(op.inputs[0]);
      float* o = ws.f(op.outputs[0]);
      if (T < 2 * kAttentionRowBlock || pool.threads() == 1) {
        // Decode: one contiguous run of heads per thread (9 heads over 2:
        // 0-4 and 5-8), so the query heads of a GQA group that land on the
        // same thread share each load of v in the weighted sum (the kernel
        // takes up to three at once); a thread that finishes first takes
        // the other's run whole. The head split never changes the bits.
        const int64_t parts = std::min<int64_t>(pool.threads(), op.heads);
        pool.parallel_for(parts, [&](int64_t begin, int64_t end) {
          v.attention(q, T, span, shape, op.heads * begin / parts, op.heads * end / parts, 0, T, o);
        });
        break;
      }
      // Prefill: heads alone split unevenly (9 heads over 2 threads is 5:4),
      // so the work is cut into (KV head group, block of query rows) items,
      // in group order, and each thread takes a contiguous run of items of
      // about equal cost — a row's cost is the number of keys it sees, which
      // grows along a causal chunk. Every output is still computed once, by
      // the same arithmetic, so the bits do not depend on the split.
      const int64_t group = op.heads / op.kv_heads;
      const int64_t blocks = (T + kAttentionRowBlock - 1) / kAttentionRowBlock;
      // Keys seen by each row block (the same for every group), then the
      // running cost over items in group order.
      std::vector<double> block_keys(static_cast<size_t>(blocks), 0.0);
      for (int64_t t = 0; t < T; ++t)
        block_keys[t / kAttentionRowBlock] +=
            static_cast<double>(span.past_end + t + 1 - ref::first_visible_key(span, op.window, t));
      std::vector<double> prefix(static_cast<size_t>(op.kv_heads * blocks) + 1, 0.0);
      for (int64_t i = 0; i < op.kv_heads * blocks; ++i) prefix[i + 1] = prefix[i] + block_keys[i % blocks];
      const int parts = pool.threads();
      std::vector<int64_t> cut(static_cast<size_t>(parts) + 1, op.kv_heads * blocks);
      cut[0] = 0;
      for (int p = 1; p < parts; ++p)
        cut[p] = std::lower_bound(prefix.begin(), prefix.end(), prefix.back() * p / parts) - prefix.begin();
      pool.parallel_for(parts, [&](int64_t begin, int64_t end) {
        for (int64_t part = begin; part < end; ++part) {
          // Items [cut[part], cut[part+1]): per group, one contiguous row range.
          for (int64_t i = cut[part]; i < cut[part + 1];) {
            const int64_t g = i / blocks, b0 = i % blocks;
            const int64_t b1 = std::min(blocks, b0 + (cut[part + 1] - i));
            v.attention(q, T, span, shape, g * group, (g + 1) * group, b0 * kAttentionRowBlock,
                        std::min(T, b1 * kAttentionRowBlock), o);
            i += b1 - b0;
          }
        }
      });
      break;
    }
    case OpKind::KvStore:
      ctx.state->kv().store(op.kv_layer, ws.f(op.inputs[0]), ws.f(op.inputs[1]), T);
      break;
    case OpKind::GatedActivation: {
      // Elementwise: any split gives the same bits. Decode-sized ops stay on
      // one thread (the grain), prefill-sized ones use the pool.
      const int64_t n = T * p.values[op.inputs[0]].cols;
      const float *gate = ws.f(op.inputs[0]), *up = ws.f(op.inputs[1]);
      float* out = ws.f(op.outputs[0]);
      pool.parallel_for(
          n, [&](int64_t b, int64_t e) { v.gated_activation(op.activation, gate + b, up + b, e - b, out + b); },
          kElementwiseGrain);
      break;
    }
    case OpKind::Add: {
      float* acc = ws.f(op.outputs[0]);
      const float* x = ws.f(op.inputs[0]);
      pool.parallel_for(
          rows_of(op.inputs[0]) * p.values[op.inputs[0]].cols,
          [&](int64_t b, int64_t e) { v.add_in_place(acc + b, x + b, e - b); }, kElementwiseGrain);
      break;
    }
    case OpKind::SelectRows: {
      const int64_t w = p.values[op.inputs[0]].cols;
      const float* x = ws.f(op.inputs[0]);
      float* y = ws.f(op.outputs[0]);
      for (int64_t r = 0; r < L; ++r)
        std::memcpy(y + r * w, x + static_cast<int64_t>(ctx.logit_rows[r]) * w, sizeof(float) * w);
      break;
    }
    case OpKind::Softcap:
      v.softcap(ws.f(op.outputs[0]), rows_of(op.outputs[0]) * p.values[op.outputs[0]].cols, op.softcap);
      break;
    case OpKind::ShortConv:
    case OpKind::CausalConv: {
      ConvState& conv = ctx.state->conv();
      const int64_t channels = p.values[op.outputs.back()].cols, kernel = op.kernel;
      const int64_t first = ctx.state->length();
      std::vector<const float*> past(static_cast<size_t>(std::max<int64_t>(0, kernel - 1)));
      conv.past_rows(op.layer, first, past.data());
      const float* x = ws.f(op.inputs[0]);
      float* y = ws.f(op.outputs.back());
      // ShortConv: the tail keeps B·x (its first output); CausalConv: x itself.
      const float* kept = op.kind == OpKind::ShortConv ? ws.f(op.outputs[0]) : x;
      // Channels are independent: any split gives the same bits.
      pool.parallel_for(
          channels,
          [&](int64_t c0, int64_t c1) {
            if (op.kind == OpKind::ShortConv)
              v.short_conv(x, T, channels, kernel, b.prepared.data(), past.data(), c0, c1, ws.f(op.outputs[0]), y);
            else
              v.causal_conv_silu(x, T, channels, kernel, b.prepared.data(), past.data(), c0, c1, y);
          },
          std::max<int64_t>(16, kElementwiseGrain / std::max<int64_t>(1, T)));
      conv.store(op.layer, first, kept, T);
      break;
    }
    case OpKind::SplitHeads: {
      const int64_t hd = op.head_dim, width = op.heads * hd;
      const float* x = ws.f(op.inputs[0]);
      float *a = ws.f(op.outputs[0]), *g = ws.f(op.outputs[1]);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < op.heads; ++h) {
          std::memcpy(a + t * width + h * hd, x + t * 2 * width + 2 * h * hd, sizeof(float) * hd);
          std::memcpy(g + t * width + h * hd, x + t * 2 * width + (2 * h + 1) * hd, sizeof(float) * hd);
        }
      break;
    }
    case OpKind::DeltaRule:
      run_delta_rule(b, ws, ctx, *ctx.state, 0, T);
      break;
    case OpKind::SliceCols: {
      const int64_t w = p.values[op.inputs[0]].cols, n = p.values[op.outputs[0]].cols;
      const float* x = ws.f(op.inputs[0]);
      float* y = ws.f(op.outputs[0]);
      for (int64_t t = 0; t < rows_of(op.inputs[0]); ++t)
        std::memcpy(y + t * n, x + t * w + op.col_offset, sizeof(float) * n);
      break;
    }
    case OpKind::Scale: {
      // One multiply per value (by the op's constant, then by the weight's
      // value when there is one): elementwise, any split gives the same bits.
      float* x = ws.f(op.outputs[0]);
      const float c = op.scale, w = b.w1 ? b.w1[0] : 1.0f;
      const bool by_c = c != 1.0f, by_w = b.w1 != nullptr;
      pool.parallel_for(
          rows_of(op.outputs[0]) * p.values[op.outputs[0]].cols,
          [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) {
              if (by_c) x[i] = x[i] * c;
              if (by_w) x[i] = x[i] * w;
            }
          },
          kElementwiseGrain);
      break;
    }
    case OpKind::Argmax: {
      const int64_t n = p.values[op.inputs[0]].cols;
      const float* x = ws.f(op.inputs[0]);
      int32_t* ids = ws.i(op.outputs[0]);
      for (int64_t r = 0; r < rows_of(op.inputs[0]); ++r) ids[r] = static_cast<int32_t>(v.argmax(x + r * n, n));
      break;
    }
  }
}

}  // namespace tessera
