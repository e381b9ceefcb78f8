// The executor's stateless ops: embedding, norms, RoPE, activations,
// residual adds, row selection, softcap, slices, scales, argmax.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/float_linear.h"
#include "kernels/qlinear_i16gemm.h"
#include "kernels/reference/kernels.h"
#include "cpu/executor_ops.h"

namespace tessera {

void BoundProgram::run_elementwise(const BoundOp& b, Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const int64_t T = ctx.rows;
  const int64_t L = static_cast<int64_t>(ctx.logit_rows.size());
  ThreadPool& pool = *pool_;
  auto rows_of = [&](int id) { return p.values[id].rows == RowsKind::Tokens ? T : L; };
  const kernels::VectorOps& v = *vops_;
  const Op& op = *b.op;
  switch (op.kind) {
    case OpKind::Embed: {
      const kernels::InterleavedWeights* iw = b.table ? b.table->interleaved.get() : nullptr;
      float* out = ws.f(op.outputs[0]);
      if (!iw) {
        ref::embed_any(*b.w0, ws.i(op.inputs[0]), T, op.scale, out);
      } else {
        // The table's stored bytes were given back: each row comes back from
        // the interleaved copy in its stored format and decodes as before.
        kernels::InterleavedWeights::StoredRows row;
        ref::embed_decoded(iw->rows(), iw->cols(), ws.i(op.inputs[0]), T, op.scale, out,
                           [&](int64_t id, float* dst) {
                             iw->restore_rows(id, id + 1, row);
                             decode_row(row.view, 0, dst);
                           });
      }
      const int64_t cols = p.values[op.outputs[0]].cols;
      for (const CallContext::EmbeddingRows& e : ctx.embeddings)
        std::memcpy(out + e.row * cols, e.values, sizeof(float) * e.rows * cols);
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
    default:
      break;
  }
}

}  // namespace tessera
