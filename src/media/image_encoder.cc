#include "media/image_encoder.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/json_file.h"
#include "core/sha256.h"
#include "media/gemma3_vision.h"
#include "media/gemma3_vision_encoder.h"
#include "media/image_processor.h"
#include "sources/gguf.h"

namespace tessera {

namespace {

int32_t token_id(const nlohmann::json& config, const char* key) {
  if (!config.contains(key) || !config[key].is_number_integer() || config[key].get<int64_t>() < 0)
    fail("config.json", key, "missing or not a token id");
  return config[key].get<int32_t>();
}

// Gemma 3: pixel values of the fixed size its processor makes, through the
// reference SigLIP tower and projector.
class Gemma3ImageEncoder final : public ImageEncoder {
 public:
  // `tokens`: begin, end and soft set; the rest is Gemma 3's.
  // `reference`: the plain reference encoder, else the one on the vector kernels.
  Gemma3ImageEncoder(Gemma3VisionReference tower, const ImageProcessorConfig& processor, ImageTokens tokens,
                     const ImageLimits& limits, bool reference)
      : tower_(std::make_shared<const Gemma3VisionReference>(std::move(tower))),
        limits_(limits),
        processor_(processor),
        tokens_(std::move(tokens)) {
    if (!reference) fast_ = std::make_unique<Gemma3VisionEncoder>(tower_);
    tokens_.per_image = tower_->config().tokens_per_image;
    tokens_.before = tokens_.after = "\n\n";
    tokens_.bidirectional = true;
  }

  const ImageTokens& tokens() const override { return tokens_; }

  RgbImage decode(std::span<const uint8_t> bytes) const override { return decode_image(bytes, limits_); }
  std::vector<float> encode(const RgbImage& image) const override {
    const PixelValues pixels = preprocess_image(image, processor_);
    return fast_ ? fast_->image_features(pixels) : tower_->image_features(pixels);
  }

 private:
  std::shared_ptr<const Gemma3VisionReference> tower_;
  std::unique_ptr<Gemma3VisionEncoder> fast_;
  ImageLimits limits_;
  ImageProcessorConfig processor_;
  ImageTokens tokens_;
};

std::unique_ptr<ImageEncoder> open_gemma3(const std::string& directory, const nlohmann::json& config,
                                          const ImageLimits& limits, bool reference) {
  Gemma3VisionReference tower = Gemma3VisionReference::load(directory);
  ImageProcessorConfig processor;
  const std::string processor_path = directory + "/preprocessor_config.json";
  if (std::filesystem::exists(processor_path)) {
    processor = ImageProcessorConfig::from_json(read_json_file(processor_path, "preprocessor_config.json"));
  } else {  // transformers' Gemma3ImageProcessor defaults at the tower's size
    processor.height = processor.width = tower.config().image_size;
  }
  if (processor.do_pan_and_scan)
    fail("preprocessor_config.json", "do_pan_and_scan", "pan and scan crops are not supported yet");
  if (processor.height != tower.config().image_size || processor.width != tower.config().image_size)
    fail("preprocessor_config.json", "size", "{} × {} differs from the tower's image_size {}", processor.width,
         processor.height, tower.config().image_size);
  ImageTokens tokens;
  tokens.begin = token_id(config, "boi_token_index");
  tokens.end = token_id(config, "eoi_token_index");
  tokens.soft = token_id(config, "image_token_index");
  return std::make_unique<Gemma3ImageEncoder>(std::move(tower), processor, std::move(tokens), limits, reference);
}

}  // namespace

std::unique_ptr<ImageEncoder> ImageEncoder::open(const std::string& directory, const ImageLimits& limits,
                                                 bool reference) {
  const nlohmann::json config = read_json_file(directory + "/config.json", "config.json");
  if (!config.contains("vision_config")) return nullptr;
  const std::string type = config.value("model_type", "");
  if (type == "gemma3") return open_gemma3(directory, config, limits, reference);
  fail("config.json", "vision_config", "images into a '{}' model are not supported yet (Gemma 3 is)", type);
}

std::unique_ptr<ImageEncoder> ImageEncoder::open_mmproj(const std::string& path, const ImageTokens& ids,
                                                        const ImageLimits& limits, bool reference) {
  const GgufFile gguf = GgufFile::open(path);
  Gemma3VisionReference tower = Gemma3VisionReference::load_mmproj(gguf);
  // Gemma 3's processor (a bilinear resize to the tower's square, x / 255,
  // then the file's mean and std), as transformers' Gemma3ImageProcessor:
  // llama.cpp letterboxes a picture that is not square instead.
  ImageProcessorConfig processor;
  processor.height = processor.width = tower.config().image_size;
  std::copy(tower.image_mean.begin(), tower.image_mean.end(), processor.mean.begin());
  std::copy(tower.image_std.begin(), tower.image_std.end(), processor.std.begin());
  return std::make_unique<Gemma3ImageEncoder>(std::move(tower), processor, ids, limits, reference);
}

uint64_t image_key(const RgbImage& image) {
  const int64_t size[2] = {image.width, image.height};
  const std::string hex = sha256_hex_of({std::span(reinterpret_cast<const uint8_t*>(size), sizeof(size)),
                                         std::span<const uint8_t>(image.pixels)});
  const uint64_t key = std::stoull(hex.substr(0, 16), nullptr, 16);
  return key == 0 ? 1 : key;
}

}  // namespace tessera
