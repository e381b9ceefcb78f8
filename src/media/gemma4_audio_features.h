// Gemma 4's audio features, as transformers' Gemma4AudioFeatureExtractor
// computes them from 16 kHz mono samples (feature_extractor config keys in
// brackets, defaults after them):
//   the samples cut to max_length (480,000) and padded with zeros to a
//     multiple of pad_to_multiple_of (128); a mask marks the real ones;
//   frame_length / 2 zeros in front; frames of frame_length (320 = 20 ms)
//     every hop_length (160 = 10 ms) samples, while frame_length + 1 fit;
//   each frame times a periodic Hann window (f32), its magnitude spectrum
//     (an fft_length = 512-point DFT), times a triangular HTK mel filter bank
//     of feature_size (128) bands over [min_frequency, max_frequency]
//     (0 - 8,000 Hz), log(mel + mel_floor (0.001));
//   a frame whose last sample is padding is masked, its features zeroed.
// Preemphasis, dither, input scaling and per-bin normalization are refused
// unless off (their defaults). The DFT is computed in double; numpy computes
// its FFT of the f32 frames in f32, so the features differ from
// transformers' by numpy's own rounding (tests/python/test_media.py
// measures it).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera {

struct Gemma4AudioConfig {
  int64_t sampling_rate = 16000, feature_size = 128;
  double frame_length_ms = 20.0, hop_length_ms = 10.0, min_frequency = 0.0, max_frequency = 8000.0;
  double mel_floor = 1e-3;
  int64_t max_length = 480000, pad_to_multiple_of = 128;
  bool fft_overdrive = false;

  // From the processor's feature-extractor config; Error("preprocessor_config.json", key, problem).
  static Gemma4AudioConfig from_json(const nlohmann::json& config);
};

struct AudioFeatures {
  int64_t frames = 0, bands = 0;
  std::vector<float> values;  // [frames][bands]
  std::vector<uint8_t> mask;  // [frames]: 1 for a frame of real samples
};

AudioFeatures gemma4_audio_features(const std::vector<float>& samples, const Gemma4AudioConfig& config);

}  // namespace tessera
