#include "media/audio.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/error.h"

namespace tessera {

namespace {

constexpr const char* kWhere = "audio";

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

double sample_at(const uint8_t* p, int bits, bool is_float) {
  if (is_float) {
    if (bits == 32) {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  switch (bits) {
    case 8: return (static_cast<int>(p[0]) - 128) / 128.0;
    case 16: return static_cast<int16_t>(le16(p)) / 32768.0;
    case 24: {
      int32_t v = p[0] | p[1] << 8 | p[2] << 16;
      if (v & 0x800000) v -= 1 << 24;
      return v / 8388608.0;
    }
    default: return static_cast<int32_t>(le32(p)) / 2147483648.0;
  }
}

}  // namespace

Audio decode_wav(std::span<const uint8_t> bytes, const AudioLimits& limits) {
  const uint8_t* d = bytes.data();
  if (bytes.size() < 12 || std::memcmp(d, "RIFF", 4) != 0 || std::memcmp(d + 8, "WAVE", 4) != 0)
    fail(kWhere, "format", "{}", bytes.empty() ? "no bytes" : "not a WAV file (no RIFF / WAVE header)");
  int channels = 0, bits = 0;
  int64_t rate = 0;
  bool is_float = false, have_format = false;
  for (size_t at = 12; at + 8 <= bytes.size();) {
    const std::string_view id(reinterpret_cast<const char*>(d + at), 4);
    const uint64_t size = le32(d + at + 4);
    const size_t body = at + 8;
    if (size > bytes.size() - body && id != "data") fail(kWhere, "chunk", "'{}' runs past the end of the file", id);
    if (id == "fmt ") {
      if (size < 16) fail(kWhere, "fmt", "too short ({} bytes)", size);
      uint16_t tag = le16(d + body);
      channels = le16(d + body + 2);
      rate = le32(d + body + 4);
      bits = le16(d + body + 14);
      if (tag == 0xfffe) {  // WAVE_FORMAT_EXTENSIBLE: the sub-format's first two bytes
        if (size < 26) fail(kWhere, "fmt", "extensible format too short ({} bytes)", size);
        tag = le16(d + body + 24);
      }
      if (tag != 1 && tag != 3) fail(kWhere, "fmt", "format tag {} is not PCM (1) or IEEE float (3)", tag);
      is_float = tag == 3;
      if (channels < 1 || channels > 64) fail(kWhere, "fmt", "{} channels", channels);
      if (rate < 1 || rate > 768000) fail(kWhere, "fmt", "sample rate {} Hz", rate);
      if (is_float ? (bits != 32 && bits != 64) : (bits != 8 && bits != 16 && bits != 24 && bits != 32))
        fail(kWhere, "fmt", "{}-bit {} samples are not supported", bits, is_float ? "float" : "integer");
      have_format = true;
    } else if (id == "data") {
      if (!have_format) fail(kWhere, "data", "comes before the fmt chunk");
      const uint64_t available = std::min<uint64_t>(size, bytes.size() - body);  // streamed WAVs may claim more
      const uint64_t frame = static_cast<uint64_t>(channels) * (bits / 8);
      const uint64_t frames = available / frame;
      if (static_cast<int64_t>(frames) > limits.max_samples)
        fail(kWhere, "length", "{} samples is over the limit of {}", frames, limits.max_samples);
      Audio audio;
      audio.sample_rate = rate;
      audio.samples.resize(frames);
      for (uint64_t i = 0; i < frames; ++i) {
        double sum = 0;
        for (int c = 0; c < channels; ++c) sum += sample_at(d + body + i * frame + c * (bits / 8), bits, is_float);
        audio.samples[i] = static_cast<float>(sum / channels);
      }
      return audio;
    }
    at = body + size + (size & 1);  // chunks are padded to even sizes
  }
  fail(kWhere, "data", "{}", have_format ? "no data chunk" : "no fmt chunk");
}

}  // namespace tessera
