#include "runtime/sequence_state.h"

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

}  // namespace tessera
