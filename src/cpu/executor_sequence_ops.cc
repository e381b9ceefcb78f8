// The executor's sequence mixers with state of their own: the short and
// causal convolutions (conv tails) and the gated delta rule (recurrent
// state), and the stateful ops of a step of several sequences.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/float_linear.h"
#include "kernels/qlinear_i16gemm.h"
#include "kernels/reference/kernels.h"
#include "cpu/executor_ops.h"

namespace tessera {

void BoundProgram::run_sequence_mixer(const BoundOp& b, Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const int64_t T = ctx.rows;
  ThreadPool& pool = *pool_;
  const kernels::VectorOps& v = *vops_;
  const Op& op = *b.op;
  switch (op.kind) {
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
    case OpKind::DeltaRule:
      run_delta_rule(b, ws, ctx, *ctx.state, 0, T);
      break;
    default:
      break;
  }
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
// for rollback (state/recurrent_state.h).
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
  pool_->parallel_for(T, [&](int64_t t0, int64_t t1) {
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
  pool_->parallel_for(Hv, [&](int64_t h0, int64_t h1) {
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
  ThreadPool& pool = *pool_;
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

}  // namespace tessera
