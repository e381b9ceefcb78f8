// WAV decoding: a hand-made 16-bit stereo file decodes to the channels'
// mean; every truncation is an Error or the samples present so far (a
// streamed WAV's data chunk may claim more than it holds), never a crash;
// the sample cap is checked from the header. Gemma 4's features: frame and
// mask counts. (Against transformers: tests/python/test_media.py.)
#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "media/audio.h"
#include "media/gemma4_audio_features.h"

namespace tessera {
namespace {

void put(std::vector<uint8_t>& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::vector<uint8_t> stereo_wav(const std::vector<int16_t>& interleaved) {
  std::vector<uint8_t> fmt;
  put(fmt, 1, 2);          // PCM
  put(fmt, 2, 2);          // channels
  put(fmt, 16000, 4);      // rate
  put(fmt, 16000 * 4, 4);  // bytes per second
  put(fmt, 4, 2);          // block
  put(fmt, 16, 2);         // bits
  std::vector<uint8_t> body = {'W', 'A', 'V', 'E', 'f', 'm', 't', ' '};
  put(body, static_cast<uint32_t>(fmt.size()), 4);
  body.insert(body.end(), fmt.begin(), fmt.end());
  body.insert(body.end(), {'d', 'a', 't', 'a'});
  put(body, static_cast<uint32_t>(interleaved.size() * 2), 4);
  for (int16_t s : interleaved) put(body, static_cast<uint16_t>(s), 2);
  std::vector<uint8_t> wav = {'R', 'I', 'F', 'F'};
  put(wav, static_cast<uint32_t>(body.size()), 4);
  wav.insert(wav.end(), body.begin(), body.end());
  return wav;
}

TEST(Audio, StereoWavDecodesToTheChannelsMean) {
  const Audio a = decode_wav(stereo_wav({16384, 0, -32768, -32768, 100, -100}));
  EXPECT_EQ(a.sample_rate, 16000);
  EXPECT_EQ(a.samples, (std::vector<float>{0.25f, -1.0f, 0.0f}));
}

TEST(Audio, TruncationsAreErrorsOrThePrefix) {
  const std::vector<uint8_t> wav = stereo_wav({1, 2, 3, 4, 5, 6, 7, 8});
  for (size_t n = 0; n < wav.size(); ++n) {
    try {
      const Audio a = decode_wav(std::span(wav.data(), n));
      EXPECT_LE(a.samples.size(), 4u) << n;
    } catch (const Error&) {
    }
  }
}

TEST(Audio, TheSampleCapComesFromTheHeader) {
  AudioLimits small;
  small.max_samples = 2;
  EXPECT_THROW(decode_wav(stereo_wav({1, 2, 3, 4, 5, 6}), small), Error);
  EXPECT_THROW(decode_wav(std::vector<uint8_t>{'R', 'I', 'F', 'F'}), Error);
}

TEST(Audio, Gemma4FramesAndMask) {
  // 900 samples pad to 1,024; with 160 in front, frames of 321 every 160: 6.
  const AudioFeatures f = gemma4_audio_features(std::vector<float>(900, 0.1f), Gemma4AudioConfig{});
  EXPECT_EQ(f.frames, 6);
  EXPECT_EQ(f.bands, 128);
  // Frame i's last sample is sample i·160 + 160 of the signal: real while < 900.
  EXPECT_EQ(f.mask, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  for (int64_t b = 0; b < 128; ++b) EXPECT_EQ(f.values[static_cast<size_t>(5 * 128 + b)], 0.0f);
}

}  // namespace
}  // namespace tessera
