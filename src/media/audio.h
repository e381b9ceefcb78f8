// Audio in: WAV files (RIFF WAVE, PCM 8 / 16 / 24 / 32-bit integer or IEEE
// float 32 / 64, any channel count, WAVE_FORMAT_EXTENSIBLE included)
// decoded to mono float samples in [-1, 1): integers divided by 2^(bits-1)
// (8-bit: unsigned, centred at 128), channels averaged. The sample count is
// checked against AudioLimits from the header, before any sample buffer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

struct Audio {
  int64_t sample_rate = 0;
  std::vector<float> samples;  // mono
};

struct AudioLimits {
  int64_t max_samples = int64_t{16000} * 60 * 10;  // ten minutes at 16 kHz
};

// Throws Error("audio", what, problem) for anything but a well-formed WAV
// within `limits`.
Audio decode_wav(std::span<const uint8_t> bytes, const AudioLimits& limits = {});

}  // namespace tessera
