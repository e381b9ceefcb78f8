"""Tiny random Hugging Face models of every architecture Tessera runs, made on
the fly with transformers (seeded, fp32): few layers and small widths, but
the real structure — GQA, qkv bias (Qwen2), q/k norm (Qwen3, Gemma 3), tied
and untied embeddings, RoPE scaling, Gemma 3 sliding-window layers with a
window much shorter than the test sequences, soft-capping, LFM2's short
convolutions, Qwen3.5's gated delta-net and gated attention, OLMo 2's
post-block norms.

Every parameter is redrawn (norm weights around their neutral value, the
rest N(0, 0.1²)) so that no block is an identity that would hide a bug."""

from pathlib import Path

import torch
import transformers

VOCAB = 256


def _configs():
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=512)
    return {
        "llama": lambda: transformers.LlamaConfig(**common, num_hidden_layers=3, tie_word_embeddings=False),
        "llama_tied_llama3_rope": lambda: transformers.LlamaConfig(
            **common, num_hidden_layers=2, tie_word_embeddings=True,
            rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
        "llama_mqa_linear_rope": lambda: transformers.LlamaConfig(
            **{**common, "num_key_value_heads": 1}, num_hidden_layers=2, tie_word_embeddings=False,
            rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}),
        "qwen2": lambda: transformers.Qwen2Config(**common, num_hidden_layers=3, tie_word_embeddings=True),
        "qwen3": lambda: transformers.Qwen3Config(**common, num_hidden_layers=3, head_dim=32,
                                                  tie_word_embeddings=False),
        "gemma3": lambda: transformers.Gemma3TextConfig(
            **common, num_hidden_layers=4, head_dim=16, sliding_window=8, query_pre_attn_scalar=24,
            layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
            rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "linear", "rope_theta": 1000000.0, "factor": 8.0}}),
        # attn_logit_softcapping is set but transformers' Gemma 3 ignores it (so
        # must we); final_logit_softcapping is applied.
        # LFM2: short-convolution layers around GQA attention layers (q/k
        # layer norms); the MLP keeps its 128 width (auto-adjust off).
        "lfm2": lambda: transformers.Lfm2Config(
            **common, num_hidden_layers=4, conv_L_cache=3, block_auto_adjust_ff_dim=False,
            layer_types=["conv", "full_attention", "conv", "conv"], tie_word_embeddings=True),
        # Qwen3.5: gated delta-net layers around a gated full-attention layer,
        # GQA in both (2 key heads for 4 value heads), partial RoPE (1/4).
        "qwen3_5": lambda: transformers.Qwen3_5TextConfig(
            **common, num_hidden_layers=4, head_dim=16, tie_word_embeddings=False,
            layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
            linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16,
            linear_conv_kernel_dim=4),
        # Gemma 4 (E2B's structure, shrunk): 16-wide sliding heads, 32-wide
        # full-attention heads with proportional RoPE over a quarter of them,
        # one KV head, per-layer embeddings, the last 3 of 7 layers sharing
        # the KV of layers 3 (sliding) and 2 (full) with double-wide MLPs,
        # final softcap, a window of 8.
        "gemma4": lambda: transformers.Gemma4TextConfig(
            **{**common, "num_key_value_heads": 1}, num_hidden_layers=7, head_dim=16, global_head_dim=32,
            layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                         "sliding_attention", "full_attention", "full_attention"],
            sliding_window=8, num_kv_shared_layers=3, hidden_size_per_layer_input=8, vocab_size_per_layer_input=VOCAB,
            use_double_wide_mlp=True, final_logit_softcapping=30.0, tie_word_embeddings=True),
        # OLMo 2: norms after the blocks, q / k norms over all heads at once.
        "olmo2": lambda: transformers.Olmo2Config(**common, num_hidden_layers=3, tie_word_embeddings=False),
        "gemma3_softcap": lambda: transformers.Gemma3TextConfig(
            **common, num_hidden_layers=2, head_dim=16, sliding_window=5, query_pre_attn_scalar=16,
            layer_types=["sliding_attention", "full_attention"], attn_logit_softcapping=3.0,
            final_logit_softcapping=4.0),
    }


ARCHITECTURES = sorted(_configs())


def make_tiny_model(name: str, directory: Path, seed: int = 0):
    """Saves the tiny model `name` (config.json + model.safetensors) in
    `directory` and returns the transformers model (eval, eager attention)."""
    torch.manual_seed(seed)
    config = _configs()[name]()
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    # Gemma and Qwen3.5 norms scale by (1 + w); Qwen3.5's gated norm of the
    # delta-net output by w.
    plus_one = name.startswith("gemma3") or name == "qwen3_5"
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname and name == "gemma4":  # Gemma 4's norms scale by w
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif "norm" in pname:
                centre = 0.0 if plus_one and "linear_attn.norm" not in pname else 1.0
                p.copy_(centre + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.1)
        # Gemma 4's per-layer output scale is a buffer (1 at init): vary it too.
        for bname, buf in model.named_buffers():
            if bname.endswith("layer_scalar"):
                buf.copy_(0.5 + torch.rand_like(buf))
    model.save_pretrained(directory)
    return model


def add_byte_tokenizer(directory: Path):
    """Gives a tiny model a tokenizer.json: byte-level BPE over exactly its
    256 byte tokens (no merges), so that text tools (oracle, run -p) work."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    assert len(alphabet) == VOCAB
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(str(Path(directory) / "tokenizer.json"))


def hf_greedy(hf, prompt, steps):
    """transformers' own greedy continuation of `prompt` (token ids), one
    token per call through its cache: what long-generation tests compare with."""
    out, past = [], None
    x = torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(steps):
            o = hf(x, past_key_values=past, use_cache=True)
            past = o.past_key_values
            out.append(int(o.logits[0, -1].argmax()))
            x = torch.tensor([[out[-1]]])
    return out


def add_byte_vocabulary(writer, vocab_size: int):
    """Writes a SentencePiece vocabulary of exactly the tiny models' 256 byte
    tokens (<0x00> .. <0xFF>) into a gguf.GGUFWriter, so that GGUFs written
    from tiny models carry the tokenizer their loader requires."""
    import gguf
    writer.add_tokenizer_model("llama")
    writer.add_token_list([f"<0x{b:02X}>" for b in range(vocab_size)])
    writer.add_token_types([int(gguf.TokenType.BYTE)] * vocab_size)
    writer.add_token_scores([0.0] * vocab_size)


def tiny_gguf_writer(hf, path, arch: str, head_count_kv=None, rms_eps=None):
    """A gguf.GGUFWriter for the tiny model `hf` in llama.cpp's `arch` layout
    with the keys every architecture has (sizes, heads, RoPE base, norm
    epsilon, the byte vocabulary, eos); the caller adds its own keys and
    tensors, then calls write_tiny_gguf."""
    import gguf
    c = hf.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads if head_count_kv is None else head_count_kv)
    w.add_rope_freq_base(c.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(c.rms_norm_eps if rms_eps is None else rms_eps)
    w.add_vocab_size(c.vocab_size)
    add_byte_vocabulary(w, c.vocab_size)
    w.add_eos_token_id(c.eos_token_id % c.vocab_size)
    return w


def write_tiny_gguf(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def assert_gguf_matches_transformers(hf, gguf_path, checkpoint_dir):
    """The GGUF written from `hf` runs on Tessera's reference path: the same
    argmax as transformers at each of 40 random positions, logits within
    1e-3 of its largest, and the safetensors checkpoint's values bit for bit."""
    import numpy as np
    import tessera
    ids = torch.randint(0, VOCAB, (1, 40), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        ref = hf(ids).logits[0].numpy()
    ours = tessera.Session(tessera.Model(str(gguf_path), reference=True)).forward(ids[0].tolist(), all_logits=True)
    assert (ours.argmax(-1) == ref.argmax(-1)).all()
    assert np.abs(ours - ref).max() <= 1e-3 * np.abs(ref).max()
    from_checkpoint = tessera.Session(tessera.Model(str(checkpoint_dir), reference=True)).forward(ids[0].tolist(),
                                                                                                 all_logits=True)
    assert np.array_equal(ours, from_checkpoint)


def make_tiny_chat_checkpoint(name: str, directory: Path, chat_template: str, seed: int = 0,
                              context: int = 4096) -> Path:
    """A tiny random `name` model that chats: its byte tokenizer plus
    <|im_start|> (256) and <|im_end|> (257, the end of a turn and the stop
    token), and `chat_template` (a real model's, from
    tests/data/chat_templates) as chat_template.jinja; `context` positions
    (a real template's tool prompt is ~1,000-6,500 byte tokens)."""
    import json
    from tokenizers import AddedToken
    directory = Path(directory)
    torch.manual_seed(seed)
    config = _configs()[name]()
    config.vocab_size = VOCAB + 2
    if getattr(config, "vocab_size_per_layer_input", None):  # Gemma 4's per-layer embeddings
        config.vocab_size_per_layer_input = config.vocab_size
    config.eos_token_id = VOCAB + 1
    config.max_position_embeddings = context
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            p.copy_(1.0 + 0.1 * torch.randn_like(p)) if "norm" in pname else p.normal_(0.0, 0.1)
    model.save_pretrained(directory)
    add_byte_tokenizer(directory)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tok.add_special_tokens([AddedToken("<|im_start|>", special=True), AddedToken("<|im_end|>", special=True)])
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "bos_token": None}))
    (directory / "chat_template.jinja").write_text(chat_template)
    return directory


GEMMA3_IMAGE_TOKENS, GEMMA3_IMAGE_SIZE = 16, 112


def make_tiny_gemma3_with_images(directory: Path, seed: int = 0):
    """A tiny random Gemma3ForConditionalGeneration that chats about images
    (seeded): a SigLIP tower of 2 layers on 112-pixel images pooled to 16
    soft tokens, a text model of 3 layers (sliding window 8), the byte
    tokenizer plus Gemma 3's special tokens (<bos> 256 ... <start_of_image>
    260, <end_of_image> 261, <image_soft_token> 262, <pad> 263), Gemma 3's
    chat template and its image processor's preprocessor_config.json.
    Returns the transformers model."""
    import json
    from tokenizers import AddedToken, Tokenizer
    directory = Path(directory)
    specials = ["<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>",
                "<image_soft_token>", "<pad>"]
    bos, _, _, eot, boi, eoi, soft, pad = range(VOCAB, VOCAB + len(specials))
    cfg = transformers.Gemma3Config(
        text_config=dict(vocab_size=VOCAB + len(specials), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                         max_position_embeddings=1024, sliding_window=8, query_pre_attn_scalar=32, bos_token_id=bos,
                         eos_token_id=eot, pad_token_id=pad,
                         layer_types=["sliding_attention", "full_attention", "sliding_attention"]),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=GEMMA3_IMAGE_SIZE, patch_size=14),
        mm_tokens_per_image=GEMMA3_IMAGE_TOKENS, image_token_index=soft, boi_token_index=boi, eoi_token_index=eoi,
        eos_token_id=eot, bos_token_id=bos, pad_token_id=pad)
    torch.manual_seed(seed)
    model = transformers.Gemma3ForConditionalGeneration(cfg).eval()
    with torch.no_grad():  # weights away from their zero / one initialisation, features of a useful size
        for name, p in model.named_parameters():
            if "vision_tower" in name or "multi_modal_projector" in name:
                p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.1))
            elif "norm" in name:
                p.copy_(torch.randn_like(p) * 0.2)
    model.save_pretrained(directory)
    add_byte_tokenizer(directory)
    tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(s, special=True) for s in specials])
    tok.save(str(directory / "tokenizer.json"))
    template = (Path(__file__).parents[1] / "data" / "chat_templates" / "gemma3.jinja").read_text()
    (directory / "chat_template.jinja").write_text(template)
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<bos>", "eos_token": "<end_of_turn>", "pad_token": "<pad>", "add_bos_token": False,
        "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}))
    transformers.Gemma3ImageProcessor(size={"height": GEMMA3_IMAGE_SIZE, "width": GEMMA3_IMAGE_SIZE}) \
        .save_pretrained(directory)
    return model


def write_gemma3_mmproj(model, path, projection_f16: bool = True, projector_type: str = "gemma3"):
    """Writes the vision tower and projector of a Gemma3ForConditionalGeneration
    as llama.cpp's convert_hf_to_gguf.py --mmproj writes them (checked against
    that converter's output on make_tiny_gemma3_with_images, 2026-12-07):
    clip's tensor names, the HF shapes unchanged, the soft embedding norm
    stored as 1 + w, the input projection in F16 (the converter forces it;
    `projection_f16=False` keeps f32), the scale factor only when it is not 4."""
    import gguf
    import numpy as np
    vc = model.config.vision_config
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    tower = next(p for p in ("model.vision_tower.vision_model.", "vision_tower.vision_model.", "model.vision_tower.",
                             "vision_tower.") if p + "post_layernorm.weight" in state)
    projector = next(p for p in ("model.multi_modal_projector.", "multi_modal_projector.")
                     if p + "mm_input_projection_weight" in state)
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_string("general.type", "mmproj")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_string("clip.projector_type", projector_type)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.projection_dim", model.config.text_config.hidden_size)
    w.add_uint32("clip.vision.image_size", vc.image_size)
    w.add_uint32("clip.vision.patch_size", vc.patch_size)
    w.add_uint32("clip.vision.embedding_length", vc.hidden_size)
    w.add_uint32("clip.vision.feed_forward_length", vc.intermediate_size)
    w.add_uint32("clip.vision.block_count", vc.num_hidden_layers)
    w.add_uint32("clip.vision.attention.head_count", vc.num_attention_heads)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", vc.layer_norm_eps)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    grid = vc.image_size // vc.patch_size
    merge = grid // round(model.config.mm_tokens_per_image ** 0.5)
    if merge != 4:
        w.add_uint32("clip.vision.projector.scale_factor", merge)

    def t(name, value):
        w.add_tensor(name, np.ascontiguousarray(value))

    proj = state[projector + "mm_input_projection_weight"]
    t("mm.input_projection.weight", proj.astype(np.float16) if projection_f16 else proj)
    t("mm.soft_emb_norm.weight", state[projector + "mm_soft_emb_norm.weight"] + np.float32(1.0))
    t("v.patch_embd.weight", state[tower + "embeddings.patch_embedding.weight"])
    t("v.patch_embd.bias", state[tower + "embeddings.patch_embedding.bias"])
    t("v.position_embd.weight", state[tower + "embeddings.position_embedding.weight"])
    names = {"layer_norm1": "ln1", "layer_norm2": "ln2", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.out_proj": "attn_out", "mlp.fc1": "ffn_up", "mlp.fc2": "ffn_down"}
    for i in range(vc.num_hidden_layers):
        for hf, ours in names.items():
            for kind in ("weight", "bias"):
                t(f"v.blk.{i}.{ours}.{kind}", state[f"{tower}encoder.layers.{i}.{hf}.{kind}"])
    t("v.post_ln.weight", state[tower + "post_layernorm.weight"])
    t("v.post_ln.bias", state[tower + "post_layernorm.bias"])
    write_tiny_gguf(w)
