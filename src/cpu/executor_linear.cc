// The executor's Linear ops: which path a call takes (integer-dot, AMX
// tiles, int16 GEMM, float kernels, reference) and the grouped linears that
// share one quantized input.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/float_linear.h"
#include "kernels/qlinear_i16gemm.h"
#include "kernels/reference/kernels.h"
#include "cpu/executor_ops.h"

namespace tessera {

BoundProgram::LinearPath BoundProgram::linear_path(const BoundOp& b, int64_t rows) const {
  if (b.float_linear) return LinearPath::Float;
  if (!b.qw) return LinearPath::Reference;
  // The GEMMs take one scale per row; blocked weights scale per block.
  if (b.qw->blocked() || arithmetic_ == Arithmetic::Fast) return LinearPath::IntegerDot;
  if (isa_ == Isa::Amx && rows >= kernels::kAmxMinTokens) return LinearPath::Amx;
  if (uses_i16gemm(isa_) && rows >= kernels::kI16GemmMinTokens) return LinearPath::I16Gemm;
  return LinearPath::IntegerDot;
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
    kernels::quantize_activations(isa_, x, rows, k, lead.act_layout, lead.act_passes, ws.acts, lead.act_qmax,
                                  lead.act_block);
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
  pool_->parallel_for(
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

void BoundProgram::run_linear(const BoundOp& b, Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const int64_t T = ctx.rows;
  const int64_t L = static_cast<int64_t>(ctx.logit_rows.size());
  ThreadPool& pool = *pool_;
  auto rows_of = [&](int id) { return p.values[id].rows == RowsKind::Tokens ? T : L; };
  const Op& op = *b.op;
  switch (op.kind) {
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
          kernels::quantize_activations(isa_, x, rows, k, b.act_layout, b.act_passes, ws.acts, b.act_qmax,
                                        b.act_block);
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
    default:
      break;
  }
}

}  // namespace tessera
