// A loaded model: spec, programs bound to its weights by a backend
// (backend/backend.h), tokenizer, chat template, stop tokens and the host's
// thread pool. Immutable once loaded; any
// number of Sessions (session.h) run on it, one at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/model_spec.h"
#include "graph/program.h"
#include "model/builders.h"
#include "backend/arithmetic.h"
#include "backend/backend.h"
#include "backend/weight_store.h"
#include "core/thread_pool.h"
#include "kernels/cpu_isa.h"
#include "runtime/rope_table.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct LoadOptions {
  // Compute threads (results are identical for any count); 0: the machine's
  // physical cores (core/cpu_cores.h).
  int threads = 0;
  // Programs: layer chunks and prefill variants. 0 / empty: a bundle's own
  // (manifest "build"), else 1 chunk and model::BuildOptions' sizes.
  int64_t chunks = 0;
  std::vector<int64_t> prefill_sizes;
  bool progress = false;  // progress bar on stderr while weights load
  bool verify = false;    // bundles: check every tensor's sha256
  // The CPU backend's instruction set (cpu/cpu_backend.h); unset:
  // active_isa() (TESSERA_ISA or the best the CPU has). Isa::Scalar runs
  // every op on its reference kernel.
  std::optional<Isa> isa;
  // Tokens per row block of long calls (backend/backend.h; 0: calls run whole).
  int64_t row_block = kDefaultRowBlock;
  // The integer-dot linears' arithmetic (backend/arithmetic.h): fast (the
  // default: one int8 activation pass, every call on the integer-dot
  // kernels; closer to an F32 copy of a GGUF than llama.cpp's own arithmetic,
  // docs/QUANTIZATION.md) or exact (two passes: the oracle's and parity's).
  Arithmetic arithmetic = Arithmetic::Fast;
  // How every Session of this model keeps its KV cache (state/kv_cache.h):
  // f32 (default) or f16 (half the memory and the bytes decode attention
  // reads; measured effect in docs/BENCHMARKING.md).
  KvType kv_type = KvType::F32;
  // How a bundle's weights.bin is brought into memory (core/mapped_file.h):
  // Auto (default) reads it into transparent huge pages where the kernel
  // grants them, else maps it; Mmap always maps it. Other sources are
  // dequantized into memory whatever this says.
  FileMemory weights_memory = FileMemory::Auto;
};

class Model {
 public:
  // `name_or_path`: a bundle directory (tessera convert), a GGUF file, an HF
  // checkpoint directory or a pulled model name. Bundles are mmap'd, not
  // copied; the others are dequantized to f32 in memory. Throws Error naming what is wrong (unknown name, unsupported
  // architecture, missing or misshapen tensor, ...).
  static std::unique_ptr<Model> load(const std::string& name_or_path, const LoadOptions& options = {});

  const std::string& path() const { return path_; }
  // 64 hex digits naming exactly these weights and programs: the sha256 of a
  // bundle's manifest.json (which holds every tensor's sha256), else of the
  // source's spec and path. Session files are tied to it.
  const std::string& identity() const { return identity_; }
  const ModelSpec& spec() const { return spec_; }
  const ProgramSet& programs() const { return programs_; }
  // programs().programs[i] bound to the weights by backend().
  const Executable& executable(size_t program_index) const { return *executables_[program_index]; }
  const Backend& backend() const { return *backend_; }
  // Null when the source has no tokenizer (an HF directory without tokenizer.json).
  const tok::Tokenizer* tokenizer() const { return tokenizer_ ? &*tokenizer_ : nullptr; }
  const tok::Tokenizer& require_tokenizer() const;
  // The model's own template, or the known one for its architecture; null if neither.
  const ChatTemplate* chat_template() const { return chat_template_ ? &*chat_template_ : nullptr; }
  // Token ids that end generation (config / GGUF eos and end-of-turn tokens).
  const std::vector<int32_t>& stop_token_ids() const { return stop_ids_; }
  const RopeTable& rope(bool local) const { return local && rope_local_ ? *rope_local_ : *rope_; }
  bool has_local_rope() const { return rope_local_.has_value(); }
  // The host's threads: the CPU backend runs its kernels on them, and host
  // work (perplexity's log-softmax, the bandwidth probe) may use them.
  ThreadPool& pool() const { return *pool_; }
  uint64_t weight_bytes() const { return weights_.bytes(); }
  const WeightStore& weights() const { return weights_; }
  bool from_bundle() const { return from_bundle_; }
  KvType kv_type() const { return kv_type_; }
  Arithmetic arithmetic() const { return arithmetic_; }
  // How a bundle's weights are held: Mmap or HugePages (what Auto resolved
  // to); nullopt for the sources dequantized into memory.
  std::optional<FileMemory> weights_memory() const { return weights_memory_; }

 private:
  std::string path_;
  std::string identity_;
  ModelSpec spec_;
  ProgramSet programs_;
  WeightStore weights_;
  KvType kv_type_ = KvType::F32;
  Arithmetic arithmetic_ = Arithmetic::Exact;
  std::optional<FileMemory> weights_memory_;
  std::unique_ptr<ThreadPool> pool_;            // before backend_: the backend runs on it
  std::unique_ptr<Backend> backend_;            // before executables_: they point into it
  std::vector<std::unique_ptr<Executable>> executables_;
  std::optional<tok::Tokenizer> tokenizer_;
  std::optional<ChatTemplate> chat_template_;
  std::vector<int32_t> stop_ids_;
  std::optional<RopeTable> rope_, rope_local_;
  bool from_bundle_ = false;

  // `argmax`: the last chunk ends with an Argmax op (model::BuildOptions).
  void finish_load(const LoadOptions& options, int64_t default_chunks, std::vector<int64_t> default_prefill,
                   bool argmax = true);
};

}  // namespace tessera
