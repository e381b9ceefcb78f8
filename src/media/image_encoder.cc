#include "media/image_encoder.h"

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/json_file.h"
#include "core/sha256.h"
#include "media/gemma3_vision.h"
#include "media/image_processor.h"

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
  Gemma3ImageEncoder(const std::string& directory, const nlohmann::json& config, const ImageLimits& limits)
      : tower_(Gemma3VisionReference::load(directory)), limits_(limits) {
    const std::string processor_path = directory + "/preprocessor_config.json";
    if (std::filesystem::exists(processor_path)) {
      processor_ = ImageProcessorConfig::from_json(read_json_file(processor_path, "preprocessor_config.json"));
    } else {  // transformers' Gemma3ImageProcessor defaults at the tower's size
      processor_.height = processor_.width = tower_.config().image_size;
    }
    if (processor_.do_pan_and_scan)
      fail("preprocessor_config.json", "do_pan_and_scan", "pan and scan crops are not supported yet");
    if (processor_.height != tower_.config().image_size || processor_.width != tower_.config().image_size)
      fail("preprocessor_config.json", "size", "{} × {} differs from the tower's image_size {}", processor_.width,
           processor_.height, tower_.config().image_size);
    tokens_.begin = token_id(config, "boi_token_index");
    tokens_.end = token_id(config, "eoi_token_index");
    tokens_.soft = token_id(config, "image_token_index");
    tokens_.per_image = tower_.config().tokens_per_image;
    tokens_.before = tokens_.after = "\n\n";
    tokens_.bidirectional = true;
  }

  const ImageTokens& tokens() const override { return tokens_; }

  RgbImage decode(std::span<const uint8_t> bytes) const override { return decode_image(bytes, limits_); }
  std::vector<float> encode(const RgbImage& image) const override {
    return tower_.image_features(preprocess_image(image, processor_));
  }

 private:
  Gemma3VisionReference tower_;
  ImageLimits limits_;
  ImageProcessorConfig processor_;
  ImageTokens tokens_;
};

}  // namespace

std::unique_ptr<ImageEncoder> ImageEncoder::open(const std::string& directory, const ImageLimits& limits) {
  const nlohmann::json config = read_json_file(directory + "/config.json", "config.json");
  if (!config.contains("vision_config")) return nullptr;
  const std::string type = config.value("model_type", "");
  if (type == "gemma3") return std::make_unique<Gemma3ImageEncoder>(directory, config, limits);
  fail("config.json", "vision_config", "images into a '{}' model are not supported yet (Gemma 3 is)", type);
}

uint64_t image_key(const RgbImage& image) {
  const int64_t size[2] = {image.width, image.height};
  const std::string hex = sha256_hex_of({std::span(reinterpret_cast<const uint8_t*>(size), sizeof(size)),
                                         std::span<const uint8_t>(image.pixels)});
  const uint64_t key = std::stoull(hex.substr(0, 16), nullptr, 16);
  return key == 0 ? 1 : key;
}

}  // namespace tessera
