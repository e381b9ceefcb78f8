#include "runtime/executor.h"

#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "kernels/reference/kernels.h"

namespace tessera {

namespace {

void expect_shape(const Program& p, const WeightView& t, const std::string& name, std::vector<int64_t> shape) {
  if (t.shape != shape)
    fail(p.name, name, "weight has shape [{}], the model needs [{}]", fmt::join(t.shape, ", "), fmt::join(shape, ", "));
}

}  // namespace

BoundProgram::BoundProgram(const Program& program, const WeightStore& weights) : program_(&program) {
  const Program& p = program;
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
        break;
      }
      default:
        break;
    }
    ops_.push_back(b);
  }
}

Workspace BoundProgram::make_workspace() const {
  Workspace ws;
  const Program& p = *program_;
  ws.f32.resize(p.values.size());
  ws.i32.resize(p.values.size());
  for (size_t i = 0; i < p.values.size(); ++i) {
    const Value& v = p.values[i];
    // Logit rows are sized per call (run() grows them): all positions' logits
    // of a long prefill are only ever wanted by parity checks.
    const size_t n = static_cast<size_t>((v.rows == RowsKind::Tokens ? p.max_tokens : 1) * v.cols);
    if (v.type == ValueType::F32) {
      ws.f32[i].resize(n);
    } else {
      ws.i32[i].resize(n);
    }
  }
  return ws;
}

void BoundProgram::run(Workspace& ws, const CallContext& ctx) const {
  const Program& p = *program_;
  const int64_t T = ctx.rows;
  const int64_t L = static_cast<int64_t>(ctx.logit_rows.size());
  ThreadPool& pool = *ctx.pool;
  auto rows_of = [&](int id) { return p.values[id].rows == RowsKind::Tokens ? T : L; };
  if (T < 1 || T > p.max_tokens) fail(p.name, "call", "{} rows for a program of at most {}", T, p.max_tokens);
  for (size_t i = 0; i < p.values.size(); ++i) {
    const Value& v = p.values[i];
    if (v.rows == RowsKind::LogitRows && ws.f32[i].size() < static_cast<size_t>(L * v.cols))
      ws.f32[i].resize(static_cast<size_t>(L * v.cols));
  }
  for (const BoundOp& b : ops_) {
    const Op& op = *b.op;
    switch (op.kind) {
      case OpKind::Embed: {
        ref::embed_any(*b.w0, ws.i(op.inputs[0]), T, op.scale, ws.f(op.outputs[0]));
        break;
      }
      case OpKind::RmsNorm: {
        const int in = op.inputs[0];
        const int64_t width = op.group > 0 ? op.group : p.values[in].cols;
        const int64_t rows = rows_of(in) * (p.values[in].cols / width);
        const float* w = b.w0 ? static_cast<const float*>(b.w0->data) : nullptr;
        ref::rms_norm(ws.f(in), w, rows, width, op.eps, op.plus_one, ws.f(op.outputs[0]));
        break;
      }
      case OpKind::Linear: {
        const int in = op.inputs[0], out = op.outputs[0];
        const int64_t k = p.values[in].cols, n = p.values[out].cols, rows = rows_of(in);
        const float* x = ws.f(in);
        float* y = ws.f(out);
        pool.parallel_for(
            n, [&](int64_t begin, int64_t end) { ref::linear_any(x, rows, k, *b.w0, b.w1, n, begin, end, y); }, 64);
        break;
      }
      case OpKind::Rope:
        ref::rope(ws.f(op.inputs[0]), T, op.heads, op.head_dim, op.rot_dim, op.neox, ws.f(op.inputs[1]),
                  ws.f(op.inputs[2]));
        break;
      case OpKind::Attention: {
        const ref::KvSpan span = ctx.kv->span(op.kv_layer, op.window, ws.f(op.inputs[1]), ws.f(op.inputs[2]));
        ref::AttentionShape shape{op.heads, op.kv_heads, op.head_dim, op.window, op.scale, op.softcap};
        const float* q = ws.f(op.inputs[0]);
        float* o = ws.f(op.outputs[0]);
        pool.parallel_for(op.heads, [&](int64_t begin, int64_t end) {
          ref::attention(q, T, span, shape, begin, end, o);
        });
        break;
      }
      case OpKind::KvStore:
        ctx.kv->store(op.kv_layer, ws.f(op.inputs[0]), ws.f(op.inputs[1]), T);
        break;
      case OpKind::GatedActivation: {
        const int64_t n = T * p.values[op.inputs[0]].cols;
        ref::gated_activation(op.activation, ws.f(op.inputs[0]), ws.f(op.inputs[1]), n, ws.f(op.outputs[0]));
        break;
      }
      case OpKind::Add:
        ref::add_in_place(ws.f(op.outputs[0]), ws.f(op.inputs[0]), rows_of(op.inputs[0]) * p.values[op.inputs[0]].cols);
        break;
      case OpKind::SelectRows: {
        const int64_t w = p.values[op.inputs[0]].cols;
        const float* x = ws.f(op.inputs[0]);
        float* y = ws.f(op.outputs[0]);
        for (int64_t r = 0; r < L; ++r)
          std::memcpy(y + r * w, x + static_cast<int64_t>(ctx.logit_rows[r]) * w, sizeof(float) * w);
        break;
      }
      case OpKind::Softcap:
        ref::softcap(ws.f(op.outputs[0]), rows_of(op.outputs[0]) * p.values[op.outputs[0]].cols, op.softcap);
        break;
    }
  }
}

}  // namespace tessera
