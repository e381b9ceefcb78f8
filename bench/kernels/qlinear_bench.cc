// Micro-benchmarks of the integer-dot linear kernels (Google Benchmark):
// decode GEMV and prefill GEMM on the shapes of the real models' matrices,
// per instruction set, reporting weight bytes read per second; and the
// T-MAC activation-table route (tmac_gemv.h, not shipped) beside the shipped
// GEMV at one activation pass (run_tmac, run/..._one_pass).
//
//   build/tessera_kernel_bench --benchmark_filter=Lut4
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/interleaved_linear.h"
#include "kernels/qlinear.h"
#include "kernels/qlinear_amx.h"
#include "kernels/qlinear_i16gemm.h"
#include "tmac_gemv.h"

namespace tessera::kernels {
namespace {

struct Fixture {
  std::vector<uint8_t> data;
  std::vector<float> scales, palette;
  WeightView view;
  std::unique_ptr<QLinearWeights> w;
  Int8Activations acts;
  std::vector<float> x;
  std::vector<float> y;

  Fixture(WeightFormat f, int64_t rows, int64_t cols, int64_t tokens, int passes = 2) {
    std::mt19937 rng(1);
    data.resize(weight_data_bytes(f, rows, cols));
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    scales.assign(rows, 0.01f);
    palette.resize(rows / 16 * 16);
    for (auto& p : palette) p = std::uniform_real_distribution<float>(-1, 1)(rng);
    view.format = f;
    view.shape = {rows, cols};
    view.data = data.data();
    view.scales = scales.data();
    view.palette = palette.data();
    view.group_size = 16;
    w = std::make_unique<QLinearWeights>(view);
    x.resize(tokens * cols);
    for (auto& v : x) v = std::normal_distribution<float>()(rng);
    quantize_activations(Isa::Scalar, x.data(), tokens, cols, w->layout(), passes, acts);  // 2: a layer's linears
    y.resize(tokens * rows);
  }
};

// What every linear benchmark shares: skipped where the CPU lacks `isa`;
// the fixture of the state's [rows, cols, tokens]; call(fx) timed; tokens
// and multiply-adds per second counted.
template <class Call>
void time_linear(benchmark::State& state, WeightFormat f, Isa isa, Call call, int passes = 2) {
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported");
    return;
  }
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  Fixture fx(f, rows, cols, tokens, passes);
  for (auto _ : state) {
    call(fx);
    benchmark::DoNotOptimize(fx.y.data());
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations() * tokens), benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(state.iterations() * tokens * rows * cols) * 1e-9,
                                                benchmark::Counter::kIsRate);
}

// `passes` int8 activation passes: 2 as a layer's linears, 1 as the output
// head (the like-for-like rival of run_tmac below).
void run(benchmark::State& state, WeightFormat f, Isa isa, int passes = 2) {
  const int64_t rows = state.range(0), cols = state.range(1);
  time_linear(
      state, f, isa, [&](Fixture& fx) { qlinear(isa, *fx.w, fx.acts, nullptr, 0, rows, fx.y.data(), rows); }, passes);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(weight_data_bytes(f, rows, cols)));
}

// The T-MAC route (tmac_gemv.h) on uniform B-bit weights of the same shape:
// the token's tables built, then every row's exact int32 dot product (checked
// against the plain twin before timing). Weight bytes as the lut formats'
// data (B bits per weight).
template <int B>
void run_tmac(benchmark::State& state) {
  if (!isa_supported(Isa::Avx512)) {
    state.SkipWithError("ISA not supported");
    return;
  }
  const int64_t rows = state.range(0), cols = state.range(1);
  std::mt19937 rng(1);
  std::vector<uint8_t> codes(static_cast<size_t>(rows * cols));
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % (1u << B));
  std::vector<int8_t> a(static_cast<size_t>(cols));
  for (auto& v : a) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  const bench::TmacWeights<B> w(codes.data(), rows, cols);
  bench::TmacTables t;
  std::vector<int32_t> y(static_cast<size_t>(rows)), want(static_cast<size_t>(rows));
  bench::build_tmac_tables(a.data(), cols, t);
  bench::tmac_gemv<B>(w, t, y.data());
  bench::tmac_gemv_reference(codes.data(), rows, cols, B, a.data(), want.data());
  if (y != want) {
    state.SkipWithError("T-MAC result differs from the plain twin");
    return;
  }
  for (auto _ : state) {
    bench::build_tmac_tables(a.data(), cols, t);
    bench::tmac_gemv<B>(w, t, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(state.iterations() * rows * cols) * 1e-9,
                                                benchmark::Counter::kIsRate);
  state.SetBytesProcessed(state.iterations() * rows * cols * B / 8);
}

// Prefill on AMX tiles, including the per-call bf16 packing of the activations.
void run_amx(benchmark::State& state, WeightFormat f) {
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  Bf16Activations b;
  time_linear(state, f, Isa::Amx, [&](Fixture& fx) {
    pack_bf16_activations(Isa::Amx, fx.x.data(), tokens, cols, b);
    qlinear_amx(*fx.w, b, nullptr, 0, rows, fx.y.data(), rows);
  });
}

void pack_bf16(benchmark::State& state) {
  const int64_t tokens = state.range(0), cols = state.range(1);
  std::vector<float> x(tokens * cols, 1.5f);
  Bf16Activations b;
  for (auto _ : state) {
    pack_bf16_activations(Isa::Amx, x.data(), tokens, cols, b);
    benchmark::DoNotOptimize(b.pairs.data());
  }
  state.SetBytesProcessed(state.iterations() * tokens * cols * 4);
}

// Prefill on the int16 GEMM (activation quantization and weight expansion included).
void run_i16gemm(benchmark::State& state, WeightFormat f, Isa isa) {
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  Int16Activations a;
  time_linear(state, f, isa, [&](Fixture& fx) {
    prepare_int16_activations(tokens, cols, a);
    quantize_int16_rows(isa, fx.x.data(), 0, tokens, a);
    qlinear_i16gemm(isa, *fx.w, a, nullptr, 0, rows, fx.y.data(), rows);
  });
}
// One decode row's int8 activation quantization, both passes (the
// calling thread does this before each linear group of a decode step).
void quantize_acts(benchmark::State& state, ActLayout layout, Isa isa) {
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported");
    return;
  }
  const int64_t cols = state.range(0);
  std::mt19937 rng(2);
  std::vector<float> x(cols);
  for (auto& v : x) v = std::normal_distribution<float>()(rng);
  Int8Activations acts;
  for (auto _ : state) {
    quantize_activations(isa, x.data(), 1, cols, layout, 2, acts);
    benchmark::DoNotOptimize(acts.q.data());
  }
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(quantize_acts, natural_avx512, ActLayout::Natural, Isa::Avx512)->Arg(576)->Arg(1536);
BENCHMARK_CAPTURE(quantize_acts, lut4pairs_avx512, ActLayout::Lut4Pairs, Isa::Avx512)->Arg(576)->Arg(1536);
BENCHMARK_CAPTURE(quantize_acts, natural_avx2, ActLayout::Natural, Isa::Avx2)->Arg(576)->Arg(1536);
BENCHMARK_CAPTURE(quantize_acts, lut4pairs_avx2, ActLayout::Lut4Pairs, Isa::Avx2)->Arg(576)->Arg(1536);

#define I16_SHAPES ->Args({1536, 576, 128})->Args({576, 1536, 128})->Args({4864, 896, 128})->Args({896, 4864, 128})->Args({1536, 576, 8})->Args({196608, 576, 8})->ThreadRange(1, 2)
BENCHMARK_CAPTURE(run_i16gemm, lut4_avx2, WeightFormat::Lut4, Isa::Avx2) I16_SHAPES;
BENCHMARK_CAPTURE(run_i16gemm, lut4_avx512, WeightFormat::Lut4, Isa::Avx512) I16_SHAPES;

BENCHMARK(pack_bf16)->Args({512, 576})->Args({512, 1536});

BENCHMARK_CAPTURE(run_amx, lut4_amx, WeightFormat::Lut4)->Args({1536, 576, 512})->Args({576, 1536, 512})->Args({4864, 896, 512})->Args({896, 4864, 512})->Args({1536, 576, 8})->Args({1536, 576, 16})->Args({1536, 576, 32});
BENCHMARK_CAPTURE(run_amx, int8_amx, WeightFormat::Int8)->Args({1536, 576, 512});

// SmolLM2-135M gate/up [1536, 576], down [576, 1536]; Qwen2.5-0.5B gate/up [4864, 896];
// SmolLM2-135M output head [49152, 576] (int8); [196608, 576] lut4: 56 MB of
// 576-column rows, a stream from DRAM as a decode step's layers are.
#define SHAPES ->Args({1536, 576, 1})->Args({576, 1536, 1})->Args({4864, 896, 1})->Args({1536, 576, 8})->Args({1536, 576, 16})->Args({1536, 576, 32})->Args({1536, 576, 64})
BENCHMARK_CAPTURE(run, lut4_avx512, WeightFormat::Lut4, Isa::Avx512) SHAPES->Args({196608, 576, 1});
BENCHMARK_CAPTURE(run, lut4_avx2, WeightFormat::Lut4, Isa::Avx2) SHAPES;
BENCHMARK_CAPTURE(run, int8_avx512, WeightFormat::Int8, Isa::Avx512) SHAPES->Args({49152, 576, 1});
BENCHMARK_CAPTURE(run, int8_avx2, WeightFormat::Int8, Isa::Avx2) SHAPES;

// The fast level's blocked linear: a Q4_1-like blk4 weight (codes 0..15,
// f16 scale and offset per 32 columns) at one activation pass, on today's
// lanes (qlinear) and interleaved 16 rows at a time (interleaved_linear),
// with an activation scale per 8 columns (the head's) or per 32 (the
// layers'; at amx, calls of 16+ tokens take the AMX tile kernel).
// format: Blk4 (Q4_1-like, above), Blk5 (Q5_0-like: codes 0..31 standing
// for -16..15, a scale per block) or Blk8 (Q8_0-like: signed bytes, a scale
// per block).
void run_blocked(benchmark::State& state, Isa isa, bool interleaved, int64_t act_block = kActBlock,
                 WeightFormat format = WeightFormat::Blk4) {
  if (!isa_supported(isa)) {
    state.SkipWithError("ISA not supported");
    return;
  }
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  const bool offsets = format == WeightFormat::Blk4;
  std::mt19937 rng(1);
  std::vector<uint8_t> data(weight_data_bytes(format, rows, cols));
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::vector<uint16_t> params(static_cast<size_t>((offsets ? 2 : 1) * rows * (cols / 32)));
  for (auto& p : params) p = f32_to_f16(std::uniform_real_distribution<float>(-0.01f, 0.01f)(rng));
  const int codes = format == WeightFormat::Blk5 ? 32 : 16;
  std::vector<float> codebook(static_cast<size_t>(codes));
  for (int i = 0; i < codes; ++i) codebook[i] = static_cast<float>(format == WeightFormat::Blk5 ? i - 16 : i);
  WeightView view;
  view.format = format;
  view.shape = {rows, cols};
  view.data = data.data();
  view.block_cols = 32;
  view.block_offsets = offsets;
  view.block_params = params.data();
  view.palette = codebook.data();
  const QLinearWeights w(view);
  const InterleavedWeights iw(view);
  std::vector<float> x(tokens * cols), y(tokens * rows);
  for (auto& v : x) v = std::normal_distribution<float>()(rng);
  Int8Activations acts;
  quantize_activations(Isa::Scalar, x.data(), tokens, cols, interleaved ? ActLayout::Natural : w.layout(), 1, acts,
                       kActQmax, act_block);
  for (auto _ : state) {
    if (interleaved) interleaved_linear(isa, iw, acts, nullptr, 0, iw.groups(), y.data(), rows);
    else qlinear(isa, w, acts, nullptr, 0, rows, y.data(), rows);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(state.iterations() * tokens * rows * cols) * 1e-9,
                                                benchmark::Counter::kIsRate);
}
#define BLOCKED_SHAPES ->Args({1536, 576, 1})->Args({576, 1536, 1})->Args({1536, 576, 4})->Args({1536, 576, 8})->Args({1536, 576, 16})->Args({1536, 576, 64})->Args({2048, 640, 64})
BENCHMARK_CAPTURE(run_blocked, blk4_lanes_avx512, Isa::Avx512, false) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk4_interleaved_avx512, Isa::Avx512, true) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk4_lanes_avx2, Isa::Avx2, false) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk4_interleaved_avx2, Isa::Avx2, true) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk4_interleaved32_avx512, Isa::Avx512, true, kActBlockCoarse) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk4_interleaved32_amx, Isa::Amx, true, kActBlockCoarse) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk4_interleaved32_avx2, Isa::Avx2, true, kActBlockCoarse) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk5_interleaved32_avx2, Isa::Avx2, true, kActBlockCoarse, WeightFormat::Blk5) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk8_interleaved32_avx2, Isa::Avx2, true, kActBlockCoarse, WeightFormat::Blk8) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk5_interleaved32_avx512, Isa::Avx512, true, kActBlockCoarse, WeightFormat::Blk5) BLOCKED_SHAPES;
BENCHMARK_CAPTURE(run_blocked, blk8_interleaved32_avx512, Isa::Avx512, true, kActBlockCoarse, WeightFormat::Blk8) BLOCKED_SHAPES;

// Palette lookup in registers (shipped) against T-MAC activation tables, one
// token: SmolLM2 gate/up (L2), Qwen2.5 gate/up (L2 / L3), 56 MB (DRAM).
#define TMAC_SHAPES ->Args({1536, 576, 1})->Args({4864, 896, 1})->Args({196608, 576, 1})
BENCHMARK_CAPTURE(run, lut4_avx512_one_pass, WeightFormat::Lut4, Isa::Avx512, 1) TMAC_SHAPES;
BENCHMARK_CAPTURE(run, lut2_avx512, WeightFormat::Lut2, Isa::Avx512) TMAC_SHAPES;
BENCHMARK_CAPTURE(run, lut2_avx512_one_pass, WeightFormat::Lut2, Isa::Avx512, 1) TMAC_SHAPES;
BENCHMARK_TEMPLATE(run_tmac, 4) TMAC_SHAPES;
BENCHMARK_TEMPLATE(run_tmac, 2) TMAC_SHAPES;

}  // namespace
}  // namespace tessera::kernels

BENCHMARK_MAIN();
