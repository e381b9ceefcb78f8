// Images in Python (src/media):
//   _tessera.decode_image(data: bytes) -> uint8 ndarray [height, width, 3]
//   _tessera.resize_image(pixels: uint8 [h, w, 3], width, height, resample) -> uint8 [height, width, 3]
//   _tessera.preprocess_image(data: bytes, config_json) -> float32 ndarray [3, H, W]
//   _tessera.preprocess_image_and_crops(data: bytes, config_json) -> float32 [1 + crops, 3, H, W]
//   _tessera.qwen_preprocess_image(data: bytes, config_json) -> (float32 [patches, patch_dim], (t, h, w))
//   _tessera.gemma4_preprocess_image(data: bytes, config_json)
//       -> (float32 [max_patches, patch_dim], int64 positions [max_patches, 2], soft tokens)
//   _tessera.decode_wav(data: bytes) -> (float32 mono samples, sample rate)
//   _tessera.gemma4_audio_features(samples: float32, config_json) -> (float32 [frames, bands], bool mask [frames])
//   _tessera.gemma3_image_features(checkpoint_dir | mmproj.gguf, pixel_values: float32 [3, H, W],
//                                  reference=True, threads=0)
//       -> float32 ndarray [tokens, text hidden] (the reference encoder, or the one on the vector kernels)
// (`config_json`: the processor's preprocessor_config.json; `resample`: Pillow's filter number.)
#include <cstring>
#include <filesystem>
#include <span>
#include <string>

#include <nlohmann/json.hpp>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "media/audio.h"
#include "media/gemma3_vision.h"
#include "media/gemma3_vision_encoder.h"
#include "media/gemma4_audio_features.h"
#include "media/gemma4_image_processor.h"
#include "media/image.h"
#include "media/image_processor.h"
#include "media/image_resize.h"
#include "media/qwen_image_processor.h"
#include "python/bindings.h"
#include "sources/gguf.h"

namespace py = pybind11;

namespace {

using tessera::RgbImage;

RgbImage decode(const py::bytes& data) {
  const std::string bytes = data;
  py::gil_scoped_release release;
  return tessera::decode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

// `values` as a numpy array of `shape` (their count must match).
template <class T>
py::array_t<T> numpy_of(const std::vector<T>& values, std::vector<py::ssize_t> shape) {
  py::array_t<T> out(std::move(shape));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(T));
  return out;
}

py::array_t<uint8_t> to_numpy(const RgbImage& image) { return numpy_of(image.pixels, {image.height, image.width, 3}); }

RgbImage from_numpy(const py::array_t<uint8_t, py::array::c_style | py::array::forcecast>& pixels) {
  if (pixels.ndim() != 3 || pixels.shape(2) != 3)
    throw py::value_error("resize_image: pixels must be a uint8 array [height, width, 3]");
  RgbImage image;
  image.height = pixels.shape(0);
  image.width = pixels.shape(1);
  image.pixels.assign(pixels.data(), pixels.data() + pixels.size());
  return image;
}

}  // namespace

void bind_media(py::module_& m) {
  register_tessera_error(m);
  m.def("decode_image", [](const py::bytes& data) { return to_numpy(decode(data)); }, py::arg("data"),
        "JPEG or PNG bytes as uint8 RGB pixels [height, width, 3], as Pillow's convert('RGB') gives them.");
  m.def(
      "resize_image",
      [](const py::array_t<uint8_t, py::array::c_style | py::array::forcecast>& pixels, int64_t width, int64_t height,
         int64_t resample) {
        const RgbImage in = from_numpy(pixels);
        const tessera::Resample filter = tessera::resample_from_pil(resample);
        RgbImage out;
        {
          py::gil_scoped_release release;
          out = tessera::resize_image(in, width, height, filter);
        }
        return to_numpy(out);
      },
      py::arg("pixels"), py::arg("width"), py::arg("height"), py::arg("resample"),
      "Pillow's Image.resize of 8-bit RGB pixels, bit for bit (resample: Pillow's filter number).");
  m.def(
      "preprocess_image",
      [](const py::bytes& data, const std::string& config_json) {
        const auto config = tessera::ImageProcessorConfig::from_json(nlohmann::json::parse(config_json));
        const RgbImage image = decode(data);
        tessera::PixelValues px;
        {
          py::gil_scoped_release release;
          px = tessera::preprocess_image(image, config);
        }
        return numpy_of(px.values, {px.channels, px.height, px.width});
      },
      py::arg("data"), py::arg("config_json"),
      "Image bytes as the model's Hugging Face image processor (PIL backend) gives them: float32 [3, H, W].");
  m.def(
      "preprocess_image_and_crops",
      [](const py::bytes& data, const std::string& config_json) {
        const auto config = tessera::ImageProcessorConfig::from_json(nlohmann::json::parse(config_json));
        const RgbImage image = decode(data);
        std::vector<tessera::PixelValues> all;
        {
          py::gil_scoped_release release;
          all = tessera::preprocess_image_and_crops(image, config);
        }
        const tessera::PixelValues& first = all.front();
        py::array_t<float> out({static_cast<int64_t>(all.size()), first.channels, first.height, first.width});
        float* dst = out.mutable_data();
        for (const tessera::PixelValues& px : all) dst = std::copy(px.values.begin(), px.values.end(), dst);
        return out;
      },
      py::arg("data"), py::arg("config_json"),
      "The picture and its pan-and-scan crops (Gemma 3's do_pan_and_scan), each as preprocess_image gives it.");
  m.def(
      "qwen_preprocess_image",
      [](const py::bytes& data, const std::string& config_json) {
        const auto config = tessera::QwenImageProcessorConfig::from_json(nlohmann::json::parse(config_json));
        const RgbImage image = decode(data);
        tessera::QwenPatches px;
        {
          py::gil_scoped_release release;
          px = tessera::qwen_preprocess_image(image, config);
        }
        return py::make_tuple(numpy_of(px.values, {px.grid_h * px.grid_w, px.patch_dim}),
                              py::make_tuple(px.grid_t, px.grid_h, px.grid_w));
      },
      py::arg("data"), py::arg("config_json"),
      "Image bytes as Qwen2-VL's image processor (PIL backend) gives them: (pixel_values, image_grid_thw).");
  m.def(
      "gemma4_preprocess_image",
      [](const py::bytes& data, const std::string& config_json) {
        const auto config = tessera::Gemma4ImageProcessorConfig::from_json(nlohmann::json::parse(config_json));
        const RgbImage image = decode(data);
        tessera::Gemma4Patches px;
        {
          py::gil_scoped_release release;
          px = tessera::gemma4_preprocess_image(image, config);
        }
        const int64_t rows = config.max_patches();
        return py::make_tuple(numpy_of(px.values, {rows, px.patch_dim}), numpy_of(px.positions, {rows, 2}),
                              px.num_soft_tokens);
      },
      py::arg("data"), py::arg("config_json"),
      "Image bytes as Gemma 4's image processor (PIL backend) gives them: (pixel_values, image_position_ids, "
      "num_soft_tokens).");
  m.def(
      "decode_wav",
      [](const py::bytes& data) {
        const std::string bytes = data;
        tessera::Audio audio;
        {
          py::gil_scoped_release release;
          audio = tessera::decode_wav(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
        }
        return py::make_tuple(numpy_of(audio.samples, {static_cast<py::ssize_t>(audio.samples.size())}),
                              audio.sample_rate);
      },
      py::arg("data"), "WAV bytes as mono float32 samples in [-1, 1) and the sample rate.");
  m.def(
      "gemma4_audio_features",
      [](const py::array_t<float, py::array::c_style | py::array::forcecast>& samples, const std::string& config_json) {
        const auto config = tessera::Gemma4AudioConfig::from_json(nlohmann::json::parse(config_json));
        const std::vector<float> in(samples.data(), samples.data() + samples.size());
        tessera::AudioFeatures f;
        {
          py::gil_scoped_release release;
          f = tessera::gemma4_audio_features(in, config);
        }
        const py::array_t<float> values = numpy_of(f.values, {f.frames, f.bands});
        py::array_t<bool> mask(static_cast<py::ssize_t>(f.frames));
        for (int64_t i = 0; i < f.frames; ++i) mask.mutable_data()[i] = f.mask[static_cast<size_t>(i)] != 0;
        return py::make_tuple(values, mask);
      },
      py::arg("samples"), py::arg("config_json"),
      "Gemma 4's log-mel audio features of 16 kHz mono samples: (input_features, input_features_mask).");
  m.def(
      "gemma3_image_features",
      [](const std::string& directory, const py::array_t<float, py::array::c_style | py::array::forcecast>& pixels,
         bool reference, int threads) {
        if (pixels.ndim() != 3) throw py::value_error("gemma3_image_features: pixel_values must be [3, H, W]");
        tessera::PixelValues px;
        px.channels = pixels.shape(0);
        px.height = pixels.shape(1);
        px.width = pixels.shape(2);
        px.values.assign(pixels.data(), pixels.data() + pixels.size());
        std::vector<float> features;
        int64_t tokens = 0, hidden = 0;
        {
          py::gil_scoped_release release;
          auto encoder = std::make_shared<const tessera::Gemma3VisionReference>(
              std::filesystem::is_regular_file(directory)
                  ? tessera::Gemma3VisionReference::load_mmproj(tessera::GgufFile::open(directory))
                  : tessera::Gemma3VisionReference::load(directory));
          features = reference ? encoder->image_features(px)
                               : tessera::Gemma3VisionEncoder(encoder, threads).image_features(px);
          tokens = encoder->config().tokens_per_image;
          hidden = encoder->config().text_hidden;
        }
        return numpy_of(features, {tokens, hidden});
      },
      py::arg("checkpoint_dir"), py::arg("pixel_values"), py::arg("reference") = true, py::arg("threads") = 0,
      "Gemma 3's image soft tokens from a multimodal checkpoint directory or an mmproj GGUF, by the plain reference "
      "encoder or (reference=False) the one on the vector kernels.");
}
