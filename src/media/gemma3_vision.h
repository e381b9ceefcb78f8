// Gemma 3's image encoder, the plain reference: pixel values → the image's
// soft tokens in the text model's embedding space, as transformers'
// Gemma3Model.get_image_features computes them (f32 throughout).
//
// SigLIP vision tower (vision_config):
//   patches: a Conv2d with kernel = stride = patch_size, i.e. each
//     patch_size² × 3 block of pixels times a [hidden, 3, p, p] kernel plus
//     a bias; patches in raster order (row of patches, then column);
//   + a learned position embedding per patch;
//   layers: x += attn(LayerNorm1(x)), x += mlp(LayerNorm2(x)), where attn
//     is full (bidirectional) multi-head attention with biased q / k / v /
//     out projections and scale head_dim^-½, and mlp is fc2(gelu_tanh(fc1));
//   a final LayerNorm (post_layernorm). The pooling head is not used.
// Projector (multi_modal_projector):
//   the patch grid averaged over k × k squares (k = grid / √tokens), the
//   pooled tokens in raster order, Gemma's RMSNorm (x / rms · (1 + w)),
//   times mm_input_projection_weight [vision hidden, text hidden].
//
// This is the oracle a program-based encoder on Tessera's kernels will be
// checked against; it is not fast (a real 896-pixel image is minutes here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "media/image_processor.h"

namespace tessera {
class GgufFile;
}

namespace tessera {

struct Gemma3VisionConfig {
  int64_t hidden = 0, intermediate = 0, layers = 0, heads = 0, image_size = 0, patch_size = 0;
  float layer_norm_eps = 1e-6f;
  int64_t tokens_per_image = 0;  // mm_tokens_per_image
  int64_t text_hidden = 0;
  int64_t grid() const { return image_size / patch_size; }
};

class Gemma3VisionReference {
 public:
  // A Gemma3ForConditionalGeneration checkpoint directory (config.json,
  // safetensors). Throws Error naming the file and key or tensor.
  static Gemma3VisionReference load(const std::string& directory);
  // An mmproj GGUF as llama.cpp's converter writes Gemma 3's
  // (general.architecture "clip", clip.projector_type "gemma3"): the same
  // tensors under clip's names (v.patch_embd, v.blk.N.attn_q, ..., v.post_ln,
  // mm.soft_emb_norm with its 1 + w stored, mm.input_projection), any of
  // ggml's float or quantized types. Throws Error naming the key or tensor.
  static Gemma3VisionReference load_mmproj(const GgufFile& gguf);
  // The image processor's mean and std an mmproj carries (clip.vision.image_mean / _std).
  std::vector<float> image_mean, image_std;

  const Gemma3VisionConfig& config() const { return config_; }
  // The image's soft tokens, [tokens_per_image][text_hidden], row-major.
  // `pixels` must be [3, image_size, image_size].
  std::vector<float> image_features(const PixelValues& pixels) const;

  // The weights, for an encoder on faster kernels (media/gemma3_vision_encoder.h).
  struct Linear {
    std::vector<float> weight, bias;  // [out, in], [out]
    int64_t out = 0, in = 0;
  };
  struct Norm {
    std::vector<float> weight, bias;
  };
  struct Layer {
    Norm norm1, norm2;
    Linear q, k, v, o, fc1, fc2;
  };
  const std::vector<float>& patch_weight() const { return patch_weight_; }
  const std::vector<float>& patch_bias() const { return patch_bias_; }
  const std::vector<float>& positions() const { return positions_; }
  const std::vector<Layer>& layers() const { return layers_; }
  const Norm& post_norm() const { return post_norm_; }
  const std::vector<double>& soft_scale() const { return soft_scale_; }
  const std::vector<float>& projection() const { return projection_; }

 private:
  Gemma3VisionConfig config_;
  std::vector<float> patch_weight_, patch_bias_, positions_;  // [hidden, 3, p, p], [hidden], [grid², hidden]
  std::vector<Layer> layers_;
  Norm post_norm_;
  std::vector<double> soft_scale_;  // [hidden]: the RMSNorm's multiplier, 1 + w
  std::vector<float> projection_;   // [hidden, text_hidden]
};

}  // namespace tessera
