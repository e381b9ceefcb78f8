#include "engine/prompt_images.h"

#include <filesystem>

#include "core/error.h"

namespace tessera::engine {

std::unique_ptr<ImageEncoder> open_image_encoder(const std::string& source, const std::string& mmproj,
                                                 const tok::Tokenizer* tokenizer, const ImageLimits& limits,
                                                 bool reference) {
  if (!mmproj.empty()) {
    if (!tokenizer) fail("--mmproj", mmproj, "the text model has no tokenizer to place images with");
    auto id = [&](std::string_view piece) { return tokenizer->piece_to_token(piece); };
    ImageTokens ids;
    const std::optional<int32_t> begin = id("<start_of_image>"), end = id("<end_of_image>");
    if (!begin || !end)
      fail("--mmproj", mmproj, "the text model's vocabulary has no <start_of_image> / <end_of_image>: not Gemma 3's");
    ids.begin = *begin;
    ids.end = *end;
    // llama.cpp's Gemma 3 GGUFs hold 262,144 tokens, without Hugging Face's
    // <image_soft_token> (262,144): an unused special token holds the place
    // (its embedding is replaced by the image's features).
    std::optional<int32_t> soft = id("<image_soft_token>");
    if (!soft) soft = id("<unused0>");
    if (!soft) fail("--mmproj", mmproj, "the text model's vocabulary has no <image_soft_token> or <unused0>");
    ids.soft = *soft;
    return ImageEncoder::open_mmproj(mmproj, ids, limits, reference);
  }
  if (std::filesystem::is_directory(source) && std::filesystem::exists(std::filesystem::path(source) / "config.json"))
    return ImageEncoder::open(source, limits, reference);
  return nullptr;
}

PromptWithImages prompt_with_images(const tok::Tokenizer& tokenizer, const ImageEncoder& encoder, std::string text,
                                    bool add_special, std::span<const std::string> images, int64_t max_images,
                                    int64_t max_tokens) {
  if (static_cast<int64_t>(images.size()) > max_images)
    fail("request", "images", "{} images exceed the limit of {} per request", images.size(), max_images);
  const ImageTokens& t = encoder.tokens();
  const std::string mark(tokenizer.token_to_piece(t.begin));
  std::string expansion = t.before + mark;
  for (int64_t j = 0; j < t.per_image; ++j) expansion += tokenizer.token_to_piece(t.soft);
  expansion += std::string(tokenizer.token_to_piece(t.end)) + t.after;
  size_t marks = 0;
  for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + expansion.size())) {
    text.replace(at, mark.size(), expansion);
    ++marks;
  }
  if (marks != images.size())
    fail("request", "images", "{} images for {} image marks ({}) in the prompt", images.size(), marks, mark);

  PromptWithImages p;
  p.ids = tokenizer.encode(text, add_special);
  if (static_cast<int64_t>(p.ids.size()) > max_tokens)
    fail("request", "prompt", "{} prompt tokens with the images' exceed the {} the context leaves", p.ids.size(),
         max_tokens);
  p.keys = p.ids;
  for (size_t i = 0; i < p.ids.size();) {
    if (p.ids[i] != t.soft) {
      ++i;
      continue;
    }
    size_t run = i;
    while (run < p.ids.size() && p.ids[run] == t.soft) ++run;
    if (static_cast<int64_t>(run - i) != t.per_image || p.images.size() == images.size())
      fail("request", "images", "the prompt holds {} soft image tokens at {} where an image takes {}", run - i, i,
           t.per_image);
    PromptImage image;
    image.begin = static_cast<int64_t>(i);
    image.file = p.images.size();
    const std::string& bytes = images[image.file];
    image.key = image_key(encoder.decode(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    for (int64_t j = 0; j < t.per_image; ++j) p.keys[i + static_cast<size_t>(j)] = media_history_key(image.key, j);
    p.images.push_back(std::move(image));
    i = run;
  }
  if (p.images.size() != images.size())
    fail("request", "images", "{} images, but the tokenized prompt holds {}", images.size(), p.images.size());
  return p;
}

int64_t image_safe_end(const PromptWithImages& prompt, const ImageEncoder& encoder, int64_t from, int64_t end) {
  const int64_t n = encoder.tokens().per_image;
  for (const PromptImage& image : prompt.images)
    if (image.begin < end && image.begin + n > end) return image.begin > from ? image.begin : image.begin + n;
  return end;
}

std::vector<EmbeddedSpan> image_spans(PromptWithImages& prompt, const ImageEncoder& encoder,
                                      std::span<const std::string> images, int64_t from, int64_t end) {
  const ImageTokens& t = encoder.tokens();
  std::vector<EmbeddedSpan> spans;
  for (PromptImage& image : prompt.images) {
    if (image.begin + t.per_image <= from || image.begin >= end) continue;
    if (image.begin < from || image.begin + t.per_image > end)
      fail("engine", "images", "a prefill part [{}, {}) cuts the image at {}", from, end, image.begin);
    if (image.features.empty()) {
      const std::string& bytes = images[image.file];
      image.features = encoder.encode(encoder.decode(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    }
    spans.push_back({image.begin - from, t.per_image, image.features.data(), t.bidirectional, image.key});
  }
  return spans;
}

void EncoderImagePrompter::build(std::string text, std::span<const std::string> images) {
  prompt_ = prompt_with_images(tokenizer_, encoder_, std::move(text), /*add_special=*/false, images, max_images_,
                               max_tokens_);
  images_ = images;
}

std::vector<EmbeddedSpan> EncoderImagePrompter::spans(int64_t from) {
  return image_spans(prompt_, encoder_, images_, from, static_cast<int64_t>(prompt_.ids.size()));
}

}  // namespace tessera::engine
