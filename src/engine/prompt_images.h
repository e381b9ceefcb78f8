// A prompt's images: where each image's soft tokens sit in the token ids,
// its picture until it is encoded, its key for prefix reuse, and its
// features once encoded (media/image_encoder.h says how a model's prompt
// holds an image).
//
// Building: the text (a rendered chat or a plain prompt) holds one image mark
// (the encoder's `begin` token text) per image, in order; each becomes the
// processor's expansion, the text is tokenized, and each run of soft tokens
// is one image. Keys: the prompt's ids with each image's rows as
// media_history_key(picture key, j) (runtime/session.h), which is what the
// session's history holds after the prefill, so that slot choice and the
// prefix cache compare prompts and histories image by image. An image is
// encoded only when a part of the prompt that holds it is prefilled: one a
// reused prefix already covers is never encoded.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "generation/chat.h"
#include "media/image_encoder.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

namespace tessera::engine {

// The image encoder for a model: from `mmproj` (an mmproj GGUF, its image
// tokens looked up in `tokenizer`: <start_of_image>, <end_of_image> and
// <image_soft_token>, or <unused0> standing in for the soft token a GGUF
// vocabulary lacks: its embedding is replaced), else from `source`
// when it is a Hugging Face checkpoint directory with a vision tower; null
// when neither gives one. Throws Error for a broken or unsupported one.
// `tokenizer` may be null when `mmproj` is empty.
// `reference`: the encoder's plain reference (as the model's --reference path).
std::unique_ptr<ImageEncoder> open_image_encoder(const std::string& source, const std::string& mmproj,
                                                 const tok::Tokenizer* tokenizer, const ImageLimits& limits,
                                                 bool reference = false);

struct PromptImage {
  int64_t begin = 0;              // its first soft token's index in the prompt
  size_t file = 0;                // which of the request's image files
  uint64_t key = 0;               // image_key of its picture
  std::vector<float> features;    // [per_image][hidden]; empty until encoded
};

struct PromptWithImages {
  std::vector<int32_t> ids;
  std::vector<int32_t> keys;
  std::vector<PromptImage> images;
};

// Each picture is decoded once here for its key and dropped (pictures are
// never all held at once: a request's memory is its files); the checks that
// need no decoding come first. Throws Error("request", "images", ...) for
// more than max_images images or marks and images that do not pair up,
// Error("request", "prompt", ...) for more than max_tokens tokens, and the
// decoder's Error for a file that is no image or is over its limits.
PromptWithImages prompt_with_images(const tok::Tokenizer& tokenizer, const ImageEncoder& encoder, std::string text,
                                    bool add_special, std::span<const std::string> images, int64_t max_images,
                                    int64_t max_tokens);

// Where a prefill part from `from` may end at or before `end` without cutting
// an image's soft tokens (a bidirectional span runs in one call): `end`, else
// the start of the image it would cut, or, when that is `from`, its end.
int64_t image_safe_end(const PromptWithImages& prompt, const ImageEncoder& encoder, int64_t from, int64_t end);

// The spans of the images within prompt tokens [from, end), begin counted
// from `from`, each encoded first (its file decoded again) if it was not
// yet. An image cut by the range is an Error (image_safe_end avoids it).
std::vector<EmbeddedSpan> image_spans(PromptWithImages& prompt, const ImageEncoder& encoder,
                                      std::span<const std::string> images, int64_t from, int64_t end);

// Chat's ImagePrompter (generation/chat.h) on an encoder: build() is
// prompt_with_images (the images must stay valid until spans() is done),
// spans() is image_spans up to the prompt's end.
class EncoderImagePrompter final : public ImagePrompter {
 public:
  EncoderImagePrompter(const tok::Tokenizer& tokenizer, const ImageEncoder& encoder, int64_t max_images,
                       int64_t max_tokens)
      : tokenizer_(tokenizer), encoder_(encoder), max_images_(max_images), max_tokens_(max_tokens) {}
  void build(std::string text, std::span<const std::string> images) override;
  const std::vector<int32_t>& ids() const override { return prompt_.ids; }
  const std::vector<int32_t>& keys() const override { return prompt_.keys; }
  std::vector<EmbeddedSpan> spans(int64_t from) override;

 private:
  const tok::Tokenizer& tokenizer_;
  const ImageEncoder& encoder_;
  int64_t max_images_, max_tokens_;
  PromptWithImages prompt_;
  std::span<const std::string> images_;
};

}  // namespace tessera::engine
