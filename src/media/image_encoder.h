// A multimodal checkpoint's images in: file bytes → the decoded picture →
// the model's image processor → its encoder's soft tokens (embeddings in the
// text model's space), and how its prompt holds an image.
//
// The prompt side, as the model's Hugging Face processor writes it: the
// chat template marks an image with the `begin` token's text (Gemma 3:
// `<start_of_image>`), and the processor replaces each mark with
//   before + begin + soft × per_image + end + after
// (Gemma 3: "\n\n<start_of_image>" + 256 × "<image_soft_token>" +
// "<end_of_image>\n\n"). The soft tokens' embeddings are then the image's
// features (runtime/session.h EmbeddedSpan), bidirectional for Gemma.
//
// Supported: Gemma 3 (its SigLIP tower and projector on the vector kernels,
// or the plain reference of media/gemma3_vision.h; preprocessor_config.json
// without pan and scan),
// from its Hugging Face checkpoint or from an mmproj GGUF.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "media/image.h"

namespace tessera {

struct ImageTokens {
  int32_t begin = -1, end = -1, soft = -1;  // token ids
  int64_t per_image = 0;                    // soft tokens per image
  std::string before, after;                // text around begin ... end
  bool bidirectional = false;               // the soft tokens attend to each other both ways
};

class ImageEncoder {
 public:
  virtual ~ImageEncoder() = default;
  // The encoder of a Hugging Face checkpoint directory; null when its
  // config.json has no vision_config. Throws Error for a vision tower of a
  // model_type not supported, a processor setting not supported (named), or
  // a broken checkpoint.
  // `reference`: the plain f32 reference encoder (the oracle), else the
  // encoder on the vector kernels (media/gemma3_vision_encoder.h).
  static std::unique_ptr<ImageEncoder> open(const std::string& directory, const ImageLimits& limits = {},
                                            bool reference = false);
  // The encoder of an mmproj GGUF (llama.cpp's vision projector files; Gemma
  // 3's), for a text model whose vocabulary gives `ids` (begin, end, soft;
  // the rest is the projector's). Throws Error naming the file's key or
  // tensor (a projector type not supported, a broken file).
  static std::unique_ptr<ImageEncoder> open_mmproj(const std::string& path, const ImageTokens& ids,
                                                   const ImageLimits& limits = {}, bool reference = false);

  virtual const ImageTokens& tokens() const = 0;
  // Image file bytes (JPEG or PNG) → the picture. Throws Error("image", ...)
  // for bytes that are no image, a truncated one, or one over the limits.
  virtual RgbImage decode(std::span<const uint8_t> bytes) const = 0;
  // The picture → its soft tokens, [per_image][text hidden].
  virtual std::vector<float> encode(const RgbImage& image) const = 0;
};

// What identifies a decoded picture for prefix reuse (EmbeddedSpan::key):
// the first 8 bytes of the sha256 of its size and pixels (0 mapped to 1).
uint64_t image_key(const RgbImage& image);

}  // namespace tessera
