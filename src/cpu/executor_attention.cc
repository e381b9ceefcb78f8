// The executor's attention ops: Attention over the KV cache (decode split
// by heads, prefill by cost-balanced (KV head group, row block) items) and
// KvStore.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernels/float_linear.h"
#include "kernels/qlinear_i16gemm.h"
#include "kernels/reference/kernels.h"
#include "cpu/executor_ops.h"

namespace tessera {

void BoundProgram::run_attention(const BoundOp& b, Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const int64_t T = ctx.rows;
  ThreadPool& pool = *pool_;
  const kernels::VectorOps& v = *vops_;
  const Op& op = *b.op;
  switch (op.kind) {
    case OpKind::Attention: {
      if (ctx.state->kv().type() == KvType::F16) {
        // The call's own rows take the values the cache will hold (kv_cache.h).
        const int64_t n = T * p.values[op.inputs[1]].cols;
        v.round_to_f16(ws.f(op.inputs[1]), n);
        v.round_to_f16(ws.f(op.inputs[2]), n);
      }
      ref::KvSpan span = ctx.state->kv().span(op.kv_layer, op.window, ws.f(op.inputs[1]), ws.f(op.inputs[2]));
      if (!ctx.block_end.empty()) span.block_end = ctx.block_end.data();
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
      // grows along a causal chunk (a bidirectional block's rows see all of it). Every output is still computed once, by
      // the same arithmetic, so the bits do not depend on the split.
      const int64_t group = op.heads / op.kv_heads;
      const int64_t blocks = (T + kAttentionRowBlock - 1) / kAttentionRowBlock;
      // Keys seen by each row block (the same for every group), then the
      // running cost over items in group order.
      std::vector<double> block_keys(static_cast<size_t>(blocks), 0.0);
      for (int64_t t = 0; t < T; ++t)
        block_keys[t / kAttentionRowBlock] +=
            static_cast<double>(ref::visible_key_end(span, t) - ref::first_visible_key(span, op.window, t));
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
    default:
      break;
  }
}

}  // namespace tessera
