#include "state/sequence_state.h"

#include "core/error.h"

namespace tessera {

SequenceState::SequenceState(const ModelSpec& spec, int64_t context_length, KvType kv_type, int64_t rollback_margin)
    : num_layers_(spec.num_layers),
      rollback_margin_(rollback_margin),
      kv_(spec, context_length, kv_type, rollback_margin),
      conv_(spec, rollback_margin),
      recurrent_(spec, rollback_margin) {}

bool SequenceState::can_truncate(int64_t n) const {
  if (n == 0) return true;  // clear()
  return kv_.can_truncate(n) && (n == length() || (conv_.can_resume_at(n) && recurrent_.can_resume_at(n)));
}

bool SequenceState::truncate(int64_t n) {
  if (!can_truncate(n)) return false;
  if (n == 0) {
    clear();
    return true;
  }
  if (n == length()) return true;
  recurrent_.truncate(n);
  return kv_.truncate(n);
}

void SequenceState::clear() {
  kv_.clear();
  conv_.clear();
  recurrent_.clear();
}

void SequenceState::restore(const SequenceState& s) {
  if (s.num_layers_ != num_layers_ || s.context_length() != context_length() ||
      s.rollback_margin_ != rollback_margin_ || s.kv_.type() != kv_.type())
    fail("session", "restore", "the snapshot is of another model or context ({} layers, {} positions)", s.num_layers_,
         s.context_length());
  *this = s;
}

void SequenceState::save(ByteWriter& w) const {
  w.put<int64_t>(num_layers_);
  w.put<int64_t>(rollback_margin_);
  w.put<int64_t>(context_length());
  w.put<int32_t>(kv_.type() == KvType::F16 ? 1 : 0);
  kv_.save(w);
  conv_.save(w);
  recurrent_.save(w);
}

void SequenceState::load(ByteReader& r) {
  const int64_t layers = r.get<int64_t>(), margin = r.get<int64_t>(), context = r.get<int64_t>();
  const int32_t f16 = r.get<int32_t>();
  if (layers != num_layers_ || margin != rollback_margin_ || context != context_length() ||
      f16 != (kv_.type() == KvType::F16 ? 1 : 0))
    fail("session file", "state", "was saved for {} layers, a context of {} and a {} KV cache; this session has {}, {} "
         "and {}", layers, context, f16 ? "f16" : "f32", num_layers_, context_length(), kv_type_name(kv_.type()));
  SequenceState loaded = *this;
  loaded.kv_.load(r);
  loaded.conv_.load(r);
  loaded.recurrent_.load(r);
  *this = std::move(loaded);
}

}  // namespace tessera
