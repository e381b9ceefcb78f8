#include "media/gemma4_audio_features.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "media/processor_config.h"

namespace tessera {

namespace {

// numpy.linspace(start, stop, n): start + i · step, the last exactly stop.
std::vector<double> linspace(double start, double stop, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  const double step = (stop - start) / static_cast<double>(n - 1);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i) * step + start;
  v.back() = stop;
  return v;
}

// transformers' mel_filter_bank(..., norm=None, mel_scale="htk"): [bins][bands].
std::vector<double> htk_mel_filters(int64_t bins, int64_t bands, double fmin, double fmax, int64_t rate) {
  auto to_mel = [](double f) { return 2595.0 * std::log10(1.0 + (f / 700.0)); };
  std::vector<double> filter = linspace(to_mel(fmin), to_mel(fmax), bands + 2);
  for (double& m : filter) m = 700.0 * (std::pow(10.0, m / 2595.0) - 1.0);
  const std::vector<double> fft = linspace(0, static_cast<double>(rate / 2), bins);
  std::vector<double> out(static_cast<size_t>(bins * bands));
  for (int64_t b = 0; b < bins; ++b)
    for (int64_t m = 0; m < bands; ++m) {
      const auto i = static_cast<size_t>(m);
      const double down = -(filter[i] - fft[static_cast<size_t>(b)]) / (filter[i + 1] - filter[i]);
      const double up = (filter[i + 2] - fft[static_cast<size_t>(b)]) / (filter[i + 2] - filter[i + 1]);
      out[static_cast<size_t>(b * bands + m)] = std::max(0.0, std::min(down, up));
    }
  return out;
}

}  // namespace

Gemma4AudioConfig Gemma4AudioConfig::from_json(const nlohmann::json& config) {
  if (!config.is_object()) fail(kProcessorConfigFile, "", "must be a JSON object");
  Gemma4AudioConfig c;
  c.sampling_rate = processor_positive(config, "sampling_rate", c.sampling_rate);
  c.feature_size = processor_positive(config, "feature_size", c.feature_size);
  c.frame_length_ms = processor_number(config, "frame_length_ms", c.frame_length_ms);
  c.hop_length_ms = processor_number(config, "hop_length_ms", c.hop_length_ms);
  c.min_frequency = processor_number(config, "min_frequency", c.min_frequency);
  c.max_frequency = processor_number(config, "max_frequency", c.max_frequency);
  c.mel_floor = processor_number(config, "mel_floor", c.mel_floor);
  if (config.contains("fft_overdrive") && config["fft_overdrive"].is_boolean()) c.fft_overdrive = config["fft_overdrive"].get<bool>();
  for (const char* off : {"preemphasis", "dither"})
    if (processor_number(config, off, 0.0) != 0.0) fail(kProcessorConfigFile, off, "is not supported yet (only 0)");
  if (processor_number(config, "input_scale_factor", 1.0) != 1.0) fail(kProcessorConfigFile, "input_scale_factor", "is not supported yet (only 1)");
  for (const char* off : {"per_bin_mean", "per_bin_stddev"})
    if (config.contains(off) && !config[off].is_null()) fail(kProcessorConfigFile, off, "is not supported yet");
  if (c.frame_length_ms <= 0 || c.hop_length_ms <= 0) fail(kProcessorConfigFile, "frame_length_ms", "frame and hop lengths must be positive");
  if (c.min_frequency < 0 || c.min_frequency > c.max_frequency) fail(kProcessorConfigFile, "min_frequency", "must be in [0, max_frequency]");
  return c;
}

AudioFeatures gemma4_audio_features(const std::vector<float>& input, const Gemma4AudioConfig& c) {
  // Python's int(round(x)): ties to even.
  const auto frame = static_cast<int64_t>(std::nearbyint(static_cast<double>(c.sampling_rate) * c.frame_length_ms / 1000.0));
  const auto hop = static_cast<int64_t>(std::nearbyint(static_cast<double>(c.sampling_rate) * c.hop_length_ms / 1000.0));
  int64_t fft = int64_t{1} << static_cast<int>(std::ceil(std::log2(static_cast<double>(frame))));
  if (c.fft_overdrive) fft *= 2;
  const int64_t bins = fft / 2 + 1;
  // Truncate, pad to the multiple, then frame_length / 2 zeros in front.
  const auto real = static_cast<int64_t>(std::min<size_t>(input.size(), static_cast<size_t>(c.max_length)));
  const int64_t padded = (real + c.pad_to_multiple_of - 1) / c.pad_to_multiple_of * c.pad_to_multiple_of;
  const int64_t left = frame / 2, total = left + padded;
  std::vector<float> x(static_cast<size_t>(total), 0.0f);
  std::copy_n(input.begin(), real, x.begin() + left);
  AudioFeatures out;
  out.bands = c.feature_size;
  out.frames = total >= frame + 1 ? (total - (frame + 1)) / hop + 1 : 0;
  out.values.assign(static_cast<size_t>(out.frames * out.bands), 0.0f);
  out.mask.assign(static_cast<size_t>(out.frames), 0);
  // Periodic Hann window (numpy.hanning(frame + 1) without its last value), in f32.
  std::vector<float> window(static_cast<size_t>(frame));
  for (int64_t i = 0; i < frame; ++i) {
    const double n = static_cast<double>(1 - (frame + 1) + 2 * i);
    window[static_cast<size_t>(i)] = static_cast<float>(0.5 + 0.5 * std::cos(std::numbers::pi * n / static_cast<double>(frame)));
  }
  const std::vector<double> mel = htk_mel_filters(bins, c.feature_size, c.min_frequency, c.max_frequency, c.sampling_rate);
  std::vector<double> cosines(static_cast<size_t>(fft)), sines(static_cast<size_t>(fft));
  for (int64_t k = 0; k < fft; ++k) {
    const double angle = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(fft);
    cosines[static_cast<size_t>(k)] = std::cos(angle);
    sines[static_cast<size_t>(k)] = std::sin(angle);
  }
  std::vector<float> windowed(static_cast<size_t>(frame));
  std::vector<float> magnitude(static_cast<size_t>(bins));
  for (int64_t f = 0; f < out.frames; ++f) {
    const int64_t start = f * hop;
    for (int64_t i = 0; i < frame; ++i)
      windowed[static_cast<size_t>(i)] = x[static_cast<size_t>(start + i)] * window[static_cast<size_t>(i)];
    for (int64_t b = 0; b < bins; ++b) {
      double re = 0, im = 0;
      for (int64_t i = 0; i < frame; ++i) {
        const auto k = static_cast<size_t>((b * i) % fft);
        re += windowed[static_cast<size_t>(i)] * cosines[k];
        im -= windowed[static_cast<size_t>(i)] * sines[k];
      }
      magnitude[static_cast<size_t>(b)] = static_cast<float>(std::sqrt(re * re + im * im));
    }
    // The frame's last sample (index start + frame in the padded signal) decides its mask.
    const int64_t last = start + frame - left;
    out.mask[static_cast<size_t>(f)] = last >= 0 && last < real ? 1 : 0;
    if (!out.mask[static_cast<size_t>(f)]) continue;
    for (int64_t m = 0; m < c.feature_size; ++m) {
      double acc = 0;
      for (int64_t b = 0; b < bins; ++b) acc += static_cast<double>(magnitude[static_cast<size_t>(b)]) * mel[static_cast<size_t>(b * c.feature_size + m)];
      out.values[static_cast<size_t>(f * out.bands + m)] = static_cast<float>(std::log(acc + c.mel_floor));
    }
  }
  return out;
}

}  // namespace tessera
