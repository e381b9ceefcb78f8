#include "kernels/reference/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "kernels/reference/dot.h"

namespace tessera::ref {

namespace {

void check_token_id(int64_t id, int64_t t, int64_t vocab) {
  if (id < 0 || id >= vocab) fail("input", "token ids", "token id {} at position {} is outside the vocabulary [0, {})", id, t, vocab);
}

}  // namespace

void embed(const float* table, int64_t vocab, int64_t width, const int32_t* ids, int64_t rows, float scale,
           float* out) {
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t id = ids[t];
    check_token_id(id, t, vocab);
    const float* src = table + id * width;
    float* dst = out + t * width;
    if (scale == 1.0f) {
      std::memcpy(dst, src, sizeof(float) * width);
    } else {
      for (int64_t i = 0; i < width; ++i) dst[i] = src[i] * scale;
    }
  }
}

void rms_norm(const float* x, const float* w, int64_t rows, int64_t width, float eps, bool plus_one, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    const float mean_sq = dot(xr, xr, width) / static_cast<float>(width);
    const float inv = 1.0f / std::sqrt(mean_sq + eps);
    for (int64_t i = 0; i < width; ++i) {
      const float xn = xr[i] * inv;
      yr[i] = w == nullptr ? xn : plus_one ? xn * (1.0f + w[i]) : xn * w[i];
    }
  }
}

void linear(const float* x, int64_t rows, int64_t in, const float* w, const float* bias, int64_t out,
            int64_t n_begin, int64_t n_end, float* y) {
  // Output features in blocks so that a block of weight rows stays in cache
  // while every input row passes over it.
  constexpr int64_t kBlock = 16;
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kBlock) {
    const int64_t n1 = std::min(n_end, n0 + kBlock);
    for (int64_t t = 0; t < rows; ++t) {
      const float* xt = x + t * in;
      float* yt = y + t * out;
      for (int64_t n = n0; n < n1; ++n) {
        const float s = dot(xt, w + n * in, in);
        yt[n] = bias ? s + bias[n] : s;
      }
    }
  }
}

void linear_any(const float* x, int64_t rows, int64_t in, const WeightView& w, const float* bias, int64_t out,
                int64_t n_begin, int64_t n_end, float* y) {
  if (w.format == WeightFormat::F32) {
    linear(x, rows, in, static_cast<const float*>(w.data), bias, out, n_begin, n_end, y);
    return;
  }
  std::vector<float> row(static_cast<size_t>(in));
  for (int64_t n = n_begin; n < n_end; ++n) {
    decode_row(w, n, row.data());
    for (int64_t t = 0; t < rows; ++t) {
      const float s = dot(x + t * in, row.data(), in);
      y[t * out + n] = bias ? s + bias[n] : s;
    }
  }
}

void embed_any(const WeightView& table, const int32_t* ids, int64_t rows, float scale, float* out) {
  const int64_t vocab = table.rows(), width = table.cols();
  if (table.format == WeightFormat::F32) {
    embed(static_cast<const float*>(table.data), vocab, width, ids, rows, scale, out);
    return;
  }
  embed_decoded(vocab, width, ids, rows, scale, out, [&](int64_t id, float* dst) { decode_row(table, id, dst); });
}

void embed_decoded(int64_t vocab, int64_t width, const int32_t* ids, int64_t rows, float scale, float* out,
                   const std::function<void(int64_t id, float* dst)>& decode) {
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t id = ids[t];
    check_token_id(id, t, vocab);
    float* dst = out + t * width;
    decode(id, dst);
    if (scale != 1.0f)
      for (int64_t i = 0; i < width; ++i) dst[i] = dst[i] * scale;
  }
}

void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, int64_t rot_dim, bool neox, const float* cos,
          const float* sin) {
  const int64_t half = rot_dim / 2;
  for (int64_t t = 0; t < rows; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = neox ? i : 2 * i;
        const int64_t b = neox ? i + half : 2 * i + 1;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * c[i] - x1 * s[i];
        v[b] = x1 * c[i] + x0 * s[i];
      }
    }
  }
}

// Two clones with the same bits (std::fma is exactly rounded with or without
// the instruction): where the CPU has FMA its clone issues it inline instead
// of calling libm's fmaf for every term.
#if defined(__x86_64__)
#define TESSERA_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define TESSERA_FMA_CLONES  // FMA is part of the base instruction set (AArch64)
#endif
TESSERA_FMA_CLONES void attention(const float* q, int64_t rows, const KvSpan& kv,
                                                                const AttentionShape& shape, int64_t h_begin,
                                                                int64_t h_end, int64_t t_begin, int64_t t_end,
                                                                float* out) {
  const int64_t hd = shape.head_dim;
  const int64_t kv_width = shape.kv_heads * hd;
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t past = kv.past_end - kv.past_begin;
  std::vector<float> scores(static_cast<size_t>(past + rows));
  std::vector<float> acc(static_cast<size_t>(hd));
  std::vector<float> k_row(static_cast<size_t>(hd)), v_row(static_cast<size_t>(hd));  // an f16 cache row, decoded
  const bool f16 = kv.past_k_f16 != nullptr;
  (void)rows;
  for (int64_t t = t_begin; t < t_end; ++t) {
    const int64_t begin = first_visible_key(kv, shape.window, t), end = visible_key_end(kv, t);
    for (int64_t h = h_begin; h < h_end; ++h) {
      const float* qh = q + (t * shape.heads + h) * hd;
      const int64_t kvh = h / group;
      // Keys visible to this query, in position order: cached, then this chunk's.
      auto key = [&](int64_t p, const float*& k, const float*& v) {
        if (p < kv.past_end) {
          const int64_t at = kv.past_at(p % kv.capacity, kvh, kv_width, hd);
          if (f16) {
            for (int64_t i = 0; i < hd; ++i) {
              k_row[i] = f16_to_f32(kv.past_k_f16[at + i]);
              v_row[i] = f16_to_f32(kv.past_v_f16[at + i]);
            }
            k = k_row.data();
            v = v_row.data();
          } else {
            k = kv.past_k + at;
            v = kv.past_v + at;
          }
        } else {
          k = kv.new_k + (p - kv.past_end) * kv_width + kvh * hd;
          v = kv.new_v + (p - kv.past_end) * kv_width + kvh * hd;
        }
      };
      const int64_t n = end - begin;
      float max_s = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        const float *k, *v;
        key(begin + j, k, v);
        float s = dot_fma(qh, k, hd) * shape.scale;
        if (shape.softcap > 0) s = shape.softcap * std::tanh(s / shape.softcap);
        scores[j] = s;
        max_s = std::max(max_s, s);
      }
      float sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        scores[j] = std::exp(scores[j] - max_s);
        sum += scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float *k, *v;
        key(begin + j, k, v);
        const float p = scores[j] / sum;
        for (int64_t i = 0; i < hd; ++i) acc[i] = std::fma(p, v[i], acc[i]);
      }
      std::memcpy(out + (t * shape.heads + h) * hd, acc.data(), sizeof(float) * hd);
    }
  }
}

void round_to_f16(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = f16_to_f32(f32_to_f16(x[i]));
}

void gated_activation(Activation act, const float* gate, const float* up, int64_t n, float* out) {
  switch (act) {
    case Activation::SiLU:
      for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
      return;
    case Activation::GeluTanh: {
      const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
      for (int64_t i = 0; i < n; ++i) {
        const float x = gate[i];
        out[i] = 0.5f * x * (1.0f + std::tanh(k0 * (x + 0.044715f * x * x * x))) * up[i];
      }
      return;
    }
    case Activation::Sigmoid:
      for (int64_t i = 0; i < n; ++i) out[i] = up[i] / (1.0f + std::exp(-gate[i]));
      return;
    case Activation::Gelu:
      for (int64_t i = 0; i < n; ++i) {
        const float x = gate[i];
        out[i] = 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)) * up[i];
      }
      return;
  }
}

void add_in_place(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void short_conv(const float* bcx, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
                const float* const* past, int64_t c_begin, int64_t c_end, float* bx_out, float* y) {
  for (int64_t t = 0; t < rows; ++t) {
    const float* B = bcx + t * 3 * channels;
    const float* C = B + channels;
    const float* X = C + channels;
    float* bx = bx_out + t * channels;
    for (int64_t c = c_begin; c < c_end; ++c) bx[c] = B[c] * X[c];
    for (int64_t c = c_begin; c < c_end; ++c) {
      float acc = 0.0f;
      bool first = true;
      for (int64_t j = 0; j < kernel; ++j) {
        const int64_t back = kernel - 1 - j;  // rows before t
        const float* in = back <= t ? bx_out + (t - back) * channels : past[kernel - 1 - (back - t)];
        if (in == nullptr) continue;
        const float term = weight[j * channels + c] * in[c];
        acc = first ? term : acc + term;
        first = false;
      }
      y[t * channels + c] = C[c] * acc;
    }
  }
}

void causal_conv_silu(const float* x, int64_t rows, int64_t channels, int64_t kernel, const float* weight,
                      const float* const* past, int64_t c_begin, int64_t c_end, float* y) {
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = c_begin; c < c_end; ++c) {
      float acc = 0.0f;
      bool first = true;
      for (int64_t j = 0; j < kernel; ++j) {
        const int64_t back = kernel - 1 - j;
        const float* in = back <= t ? x + (t - back) * channels : past[kernel - 1 - (back - t)];
        if (in == nullptr) continue;
        const float term = weight[j * channels + c] * in[c];
        acc = first ? term : acc + term;
        first = false;
      }
      y[t * channels + c] = acc / (1.0f + std::exp(-acc));
    }
}

void delta_rule_step(float* S, const float* q, const float* k, const float* v, float decay, float beta, int64_t dk,
                     int64_t dv, float* scratch, float* o) {
  float* m = scratch;
  for (int64_t j = 0; j < dv; ++j) m[j] = 0.0f;
  for (int64_t i = 0; i < dk; ++i) {
    float* row = S + i * dv;
    for (int64_t j = 0; j < dv; ++j) {
      row[j] = row[j] * decay;
      m[j] = m[j] + row[j] * k[i];
    }
  }
  for (int64_t j = 0; j < dv; ++j) m[j] = (v[j] - m[j]) * beta;  // δ
  if (o)
    for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
  for (int64_t i = 0; i < dk; ++i) {
    float* row = S + i * dv;
    for (int64_t j = 0; j < dv; ++j) {
      row[j] = row[j] + k[i] * m[j];
      if (o) o[j] = o[j] + row[j] * q[i];
    }
  }
}

void softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace tessera::ref
