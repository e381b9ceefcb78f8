#include "model/builders.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "model/architectures.h"

namespace tessera::model {

namespace {

void check_spec(const ModelSpec& s, const ArchitectureUnit& unit) {
  auto bad = [&](const char* field, int64_t v) {
    fail(s.source_architecture, field, "must be positive, got {}", v);
  };
  if (s.hidden_size <= 0) bad("hidden_size", s.hidden_size);
  if (s.vocab_size <= 0) bad("vocab_size", s.vocab_size);
  if (s.num_layers <= 0) bad("num_layers", s.num_layers);
  if (s.num_heads <= 0) bad("num_heads", s.num_heads);
  if (s.num_kv_heads <= 0) bad("num_kv_heads", s.num_kv_heads);
  if (s.head_dim <= 0) bad("head_dim", s.head_dim);
  if (s.num_heads % s.num_kv_heads != 0)
    fail(s.source_architecture, "num_kv_heads", "{} query heads are not a multiple of {} KV heads", s.num_heads,
         s.num_kv_heads);
  if (static_cast<int64_t>(s.layer_types.size()) != s.num_layers)
    fail(s.source_architecture, "layer_types", "{} entries for {} layers", s.layer_types.size(), s.num_layers);
  for (int64_t l = 0; l < s.num_layers; ++l) {
    const LayerKind k = s.layer_types[l];
    const bool built = std::find(unit.layer_kinds.begin(), unit.layer_kinds.end(), k) != unit.layer_kinds.end();
    const bool conv = built && k == LayerKind::ShortConv;
    const bool delta = built && k == LayerKind::LinearAttention;
    if (delta && (s.linear_conv_kernel < 1 || s.linear_conv_kernel > 64 || s.linear_num_key_heads < 1 ||
                  s.linear_num_value_heads % s.linear_num_key_heads != 0 || s.linear_key_head_dim < 1 ||
                  s.linear_value_head_dim < 1))
      fail(s.source_architecture, "linear attention", "layer {} has an unusable delta-net geometry", l);
    if (!built)
      fail(s.source_architecture, "layer_types", "layer {} is {}, which has no kernel yet", l, layer_kind_name(k));
    if (conv && (s.conv_kernel < 1 || s.conv_kernel > 64))
      fail(s.source_architecture, "conv_L_cache", "must be in [1, 64], got {}", s.conv_kernel);
    if (k == LayerKind::SlidingAttention && s.sliding_window <= 0)
      fail(s.source_architecture, "sliding_window", "layer {} slides but the window is {}", l, s.sliding_window);
  }
  const std::string& rope_type = s.rope.scaling.type;
  if (rope_type == "longrope" || rope_type == "dynamic")
    fail(s.source_architecture, "rope_scaling", "RoPE scaling type '{}' is not supported", rope_type);
}

Program build_one(const ModelSpec& s, const ArchitectureUnit& unit, int64_t tokens, int64_t chunk, int64_t begin,
                  int64_t end, bool last, bool argmax) {
  Program p;
  p.kind = tokens == 1 ? ProgramKind::Decode : ProgramKind::Prefill;
  p.name = tokens == 1 ? fmt::format("decode.c{}", chunk) : fmt::format("prefill{}.c{}", tokens, chunk);
  p.max_tokens = tokens;
  p.chunk = chunk;
  p.layer_begin = begin;
  p.layer_end = end;
  ProgramBuilder b(p);
  if (begin == 0) {
    build_embedding(b, s);
    if (unit.build_after_embedding) unit.build_after_embedding(b, s);
  }
  // Inputs every attention layer reads: positions and the RoPE tables it uses.
  b.input(b.value("positions", 1, ValueType::I32));
  for (int64_t l = begin; l < end; ++l) unit.build_layer(b, s, l);
  for (const char* table : {"rope", "rope_local"}) {
    for (const char* part : {".cos", ".sin"}) {
      const int id = p.find_value(std::string(table) + part);
      if (id >= 0) b.input(id);
    }
  }
  if (last) build_head(b, s, unit.final_norm, argmax);
  return p;
}

// The values a program reads before any of its ops writes them, in order of
// first use (an Add also reads its target).
std::vector<std::string> values_read_first(const Program& p) {
  std::set<int> written;
  std::vector<std::string> read;
  auto use = [&](int id) {
    if (!written.count(id) && std::find(read.begin(), read.end(), p.values[id].name) == read.end())
      read.push_back(p.values[id].name);
  };
  for (const Op& op : p.ops) {
    for (int id : op.inputs) use(id);
    if (op.kind == OpKind::Add)
      for (int id : op.outputs) use(id);
    for (int id : op.outputs) written.insert(id);
  }
  return read;
}

// Wires the chunks of one variant together: whatever a chunk reads that its
// own ops do not produce first — the residual stream "x", Gemma 4's
// per-layer embeddings "ple", a KV-sharing layer's source k / v of the call —
// is an input of that chunk and an output of the one before, which passes it
// through when it has it from further back. The runtime provides the rest
// (ids, positions, RoPE tables). "x" stays the first input and output.
void connect_chunks(std::vector<Program>& chunks) {
  static const std::set<std::string> provided = {"ids", "positions", "rope.cos", "rope.sin", "rope_local.cos",
                                                 "rope_local.sin"};
  std::map<std::string, Value> defs;
  for (const Program& p : chunks)
    for (const Value& v : p.values) defs.emplace(v.name, v);
  std::vector<std::vector<std::string>> carried(chunks.size());  // carried[c]: what chunk c takes from c-1
  for (size_t c = chunks.size(); c-- > 1;) {
    std::vector<std::string> need;
    for (const std::string& name : values_read_first(chunks[c]))
      if (!provided.count(name)) need.push_back(name);
    // What later chunks take and this one does not make passes through it.
    if (c + 1 < chunks.size())
      for (const std::string& name : carried[c + 1]) {
        bool made = false;
        for (const Op& op : chunks[c].ops)
          for (int id : op.outputs) made |= chunks[c].values[id].name == name;
        if (!made && std::find(need.begin(), need.end(), name) == need.end()) need.push_back(name);
      }
    std::stable_partition(need.begin(), need.end(), [](const std::string& n) { return n == "x"; });
    carried[c] = need;
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    ProgramBuilder b(chunks[c]);
    auto declare = [&](const std::string& name) {
      const Value& v = defs.at(name);
      return b.value(name, v.cols, v.type, v.rows);
    };
    if (c > 0) {
      std::vector<int> ins;
      for (const std::string& name : carried[c]) ins.push_back(declare(name));
      chunks[c].inputs.insert(chunks[c].inputs.begin(), ins.begin(), ins.end());
    }
    if (c + 1 < chunks.size())
      for (const std::string& name : carried[c + 1]) b.output(declare(name));
  }
}

}  // namespace

ProgramSet build_programs(const ModelSpec& spec, const BuildOptions& options) {
  const ArchitectureUnit& unit = architecture_of(spec);
  check_spec(spec, unit);
  if (options.chunks < 1 || options.chunks > spec.num_layers)
    fail("options", "chunks", "must be between 1 and the layer count {}, got {}", spec.num_layers, options.chunks);
  ProgramSet set;
  set.num_chunks = options.chunks;
  set.prefill_sizes = options.prefill_sizes;
  std::sort(set.prefill_sizes.begin(), set.prefill_sizes.end());
  set.prefill_sizes.erase(std::unique(set.prefill_sizes.begin(), set.prefill_sizes.end()), set.prefill_sizes.end());
  for (int64_t t : set.prefill_sizes)
    if (t < 2 || t > 65536) fail("options", "prefill sizes", "each must be in [2, 65536], got {}", t);
  std::vector<int64_t> variants = {1};
  variants.insert(variants.end(), set.prefill_sizes.begin(), set.prefill_sizes.end());
  for (int64_t tokens : variants) {
    std::vector<Program> chunks;
    for (int64_t c = 0; c < options.chunks; ++c) {
      const int64_t begin = spec.num_layers * c / options.chunks;
      const int64_t end = spec.num_layers * (c + 1) / options.chunks;
      chunks.push_back(build_one(spec, unit, tokens, c, begin, end, c + 1 == options.chunks, options.argmax));
    }
    connect_chunks(chunks);
    for (Program& p : chunks) set.programs.push_back(std::move(p));
  }
  return set;
}

}  // namespace tessera::model
