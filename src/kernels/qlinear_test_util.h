// Test fixtures shared by the linear-kernel tests: random stored weights as
// the converter writes them, activations with an outlier channel.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "core/half.h"
#include "core/weight_format.h"
#include "kernels/qlinear.h"
#include "kernels/reference/kernels.h"

namespace tessera::kernels::test_fixtures {

// The blocks of a random blk4 ... blk8 weight (RandomWeight's `block`):
// f32 values, offsets, super-block scales (int8 factors times f16
// multipliers per 64-256 columns, as the k-quants transcode).
constexpr int kBlockF32 = 1, kBlockOffsets = 2, kBlockSuper = 4;

// A random stored weight (int8, lut4 / lut3 / lut2, or blk4 ... blk8 with
// `group` columns per block and `block` = kBlockF32 | kBlockOffsets |
// kBlockSuper flags) and its buffers. blk5 / blk6 codebooks are
// consecutive integers from −2^(bits−1) (as Q5_0's and Q6_K's are).
struct RandomWeight {
  std::vector<uint8_t> data, block_params;
  std::vector<float> scales, palette;
  WeightView view;

  RandomWeight(std::mt19937& rng, WeightFormat f, int64_t rows, int64_t cols, int64_t group, int block = 0) {
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f), pos(0.01f, 2.0f);
    data.resize(weight_data_bytes(f, rows, cols));
    for (uint8_t& b : data) b = static_cast<uint8_t>(byte(rng));
    if (f == WeightFormat::Int8)
      for (uint8_t& b : data) b = b == 0x80 ? 0x81 : b;  // q ∈ [-127, 127] as the converter writes
    scales.resize(rows);
    for (float& s : scales) s = pos(rng);
    view.format = f;
    view.shape = {rows, cols};
    view.data = data.data();
    if (is_blocked(f)) {
      // Scales of a few magnitudes, offsets of either sign, each exactly an
      // f16 value (and stored as f32 when asked); a codebook like IQ4_NL's.
      view.block_cols = group;
      view.block_f32 = block & kBlockF32;
      view.block_offsets = block & kBlockOffsets;
      if (f != WeightFormat::Blk8) {
        for (int i = 0; i < 1 << block_code_bits(f); ++i)
          palette.push_back(f == WeightFormat::Blk4 ? static_cast<float>(std::uniform_int_distribution<int>(-128, 127)(rng))
                                                    : static_cast<float>(i - (1 << (block_code_bits(f) - 1))));
        view.palette = palette.data();
      }
      if (block & kBlockSuper) {
        // Per section: [rows][blocks] int8 factors, then [rows][supers] f16 multipliers.
        int64_t super = 256;
        while (cols % super != 0 || super % group != 0) super /= 2;
        view.block_super = super;
        view.block_f32 = false;
        const int64_t blocks = cols / group, supers = cols / super, sections = (block & kBlockOffsets) ? 2 : 1;
        block_params.resize(static_cast<size_t>(sections * rows * (blocks + 2 * supers)));
        for (int64_t sec = 0; sec < sections; ++sec) {
          uint8_t* p = block_params.data() + sec * rows * (blocks + 2 * supers);
          for (int64_t i = 0; i < rows * blocks; ++i)
            p[i] = static_cast<uint8_t>(std::uniform_int_distribution<int>(sec ? 0 : -64, 63)(rng));
          for (int64_t i = 0; i < rows * supers; ++i) {
            const uint16_t h = f32_to_f16(sec ? -pos(rng) * 0.01f : pos(rng) * 0.0002f);
            std::memcpy(p + rows * blocks + 2 * i, &h, 2);
          }
        }
        view.block_params = block_params.data();
        return;
      }
      const int64_t n = rows * (cols / group) * ((block & kBlockOffsets) ? 2 : 1);
      block_params.resize(static_cast<size_t>(n) * ((block & kBlockF32) ? 4 : 2));
      for (int64_t i = 0; i < n; ++i) {
        const bool offset = i >= rows * (cols / group);
        const float v = f16_to_f32(f32_to_f16(offset ? u(rng) * 0.5f : pos(rng) * 0.01f));
        if (block & kBlockF32) std::memcpy(block_params.data() + 4 * i, &v, 4);
        else {
          const uint16_t h = f32_to_f16(v);
          std::memcpy(block_params.data() + 2 * i, &h, 2);
        }
      }
      view.block_params = block_params.data();
      return;
    }
    view.scales = scales.data();
    if (is_lut(f)) {
      palette.resize(rows / group * (1 << lut_bits(f)));
      for (float& p : palette) p = u(rng);
      view.palette = palette.data();
      view.group_size = group;
    }
  }
};

inline std::vector<float> random_acts(std::mt19937& rng, int64_t rows, int64_t cols) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = d(rng);
  // An outlier channel and an all-zero block, as real activations have.
  for (int64_t t = 0; t < rows; ++t) {
    x[t * cols + cols / 3] *= 40.0f;
    if (cols >= 128)
      for (int64_t c = 64; c < 128; ++c) x[t * cols + c] = 0.0f;
  }
  return x;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A test case: a weight of this format and shape, called with `tokens` rows.
struct LinearShape {
  WeightFormat format;
  int64_t rows, cols, group, tokens;  // blk4 ... blk8: group = columns per block
  int block = 0;                      // blk4 ... blk8: kBlockF32 | kBlockOffsets | kBlockSuper
};

// One random case of a shape: the stored weight, its kernel form,
// activations and a bias (not copyable: w points into rw).
struct RandomCase {
  RandomWeight rw;
  QLinearWeights w;
  std::vector<float> x, bias;

  RandomCase(std::mt19937& rng, const LinearShape& s)
      : rw(rng, s.format, s.rows, s.cols, s.group, s.block), w(rw.view), x(random_acts(rng, s.tokens, s.cols)), bias(s.rows) {
    for (float& b : bias) b = std::uniform_real_distribution<float>(-1, 1)(rng);
  }
  RandomCase(const RandomCase&) = delete;
  RandomCase& operator=(const RandomCase&) = delete;
};

// kernel(n_begin, n_end) over [0, rows): in one range, or in two split at
// `split` (0 or rows: one), as two threads would.
template <class Kernel>
void call_split(int64_t rows, int64_t split, Kernel kernel) {
  if (split <= 0 || split >= rows) {
    kernel(0, rows);
  } else {
    kernel(0, split);
    kernel(split, rows);
  }
}

// Expects got [tokens][rows] (a kernel's twin, no bias) within the rounding
// bound of the f32 reference on the same stored weight:
//   |got − ref| ≤ Σ_c |w_c|·act_error(t, c) + Σ_c |x_c|·(half a step of row n's
//                 palette on the int8 grid: s_n·m_g/254) + 1e-5·Σ_c |w_c·x_c|
// (the last term is f32 summation noise). act_error(t, c) bounds how far the
// kernel's version of activation x[t][c] is from it.
template <class ActError>
void expect_within_rounding_bound(const RandomWeight& rw, const std::vector<float>& x, int64_t tokens,
                                  const std::vector<float>& got, ActError act_error, const std::string& what) {
  const int64_t rows = rw.view.rows(), cols = rw.view.cols();
  std::vector<float> want(tokens * rows), row(cols);
  ref::linear_any(x.data(), tokens, cols, rw.view, nullptr, rows, 0, rows, want.data());
  for (int64_t n = 0; n < rows; ++n) {
    decode_row(rw.view, n, row.data());
    double pal_step = 0;
    if (is_lut(rw.view.format)) {
      const int entries = 1 << lut_bits(rw.view.format);
      float m = 0;
      for (int i = 0; i < entries; ++i)
        m = std::max(m, std::fabs(rw.palette[(n / rw.view.group_size) * entries + i]));
      pal_step = rw.scales[n] * m / 254.0;
    }
    for (int64_t t = 0; t < tokens; ++t) {
      double bound = 0, mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double xc = x[t * cols + c];
        bound += std::fabs(row[c]) * act_error(t, c) + std::fabs(xc) * pal_step;
        mag += std::fabs(row[c] * xc);
      }
      bound = bound * 1.0001 + 1e-5 * mag;
      ASSERT_LE(std::fabs(got[t * rows + n] - want[t * rows + n]), bound) << what << " row " << n << " token " << t;
    }
  }
}

// A kernel level to test, and for avx2 whether its AVX-VNNI variants run.
struct KernelLevel {
  Isa isa;
  bool avx_vnni;
  std::string name() const { return std::string(isa_name(isa)) + (avx_vnni ? "+avx_vnni" : ""); }
};

// The given levels this CPU runs, avx2 once without AVX-VNNI and, where the
// CPU has it, once with.
inline std::vector<KernelLevel> supported_levels(std::initializer_list<Isa> isas) {
  std::vector<KernelLevel> out;
  for (Isa isa : isas) {
    if (!isa_supported(isa)) continue;
    out.push_back({isa, false});
    if (isa == Isa::Avx2 && avx_vnni_supported()) out.push_back({isa, true});
  }
  return out;
}

// Sets the AVX-VNNI switch to a level's for a scope (where the CPU has
// AVX-VNNI), restoring it after.
class AvxVnniScope {
 public:
  explicit AvxVnniScope(const KernelLevel& level) {
    if (avx_vnni_supported()) set_avx_vnni(level.avx_vnni);
  }
  ~AvxVnniScope() {
    if (avx_vnni_supported()) set_avx_vnni(before_);
  }
  AvxVnniScope(const AvxVnniScope&) = delete;
  AvxVnniScope& operator=(const AvxVnniScope&) = delete;

 private:
  bool before_ = avx_vnni_enabled();
};

}  // namespace tessera::kernels::test_fixtures
