// libFuzzer target: WAV bytes -> mono samples -> Gemma 4's audio features.
// Any input must end in features or a tessera::Error; a small sample cap
// keeps the DFT cheap.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "media/audio.h"
#include "media/gemma4_audio_features.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::AudioLimits limits;
  limits.max_samples = 4096;
  try {
    const tessera::Audio audio = tessera::decode_wav(std::span(data, size), limits);
    (void)tessera::gemma4_audio_features(audio.samples, tessera::Gemma4AudioConfig{});
  } catch (const tessera::Error&) {
  }
  return 0;
}
