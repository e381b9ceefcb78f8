#include "tokenizer/vocab.h"

#include <functional>

#include "core/error.h"

namespace tessera::tok {

size_t Vocab::slot_of(std::string_view piece) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(piece) & mask;; i = (i + 1) & mask)
    if (slots_[i] < 0 || this->piece(slots_[i]) == piece) return i;
}

std::optional<int32_t> Vocab::find(std::string_view piece) const {
  if (slots_.empty()) return std::nullopt;
  const int32_t id = slots_[slot_of(piece)];
  if (id < 0) return std::nullopt;
  return id;
}

void Vocab::grow() {
  std::vector<int32_t> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, -1);
  used_ = 0;
  for (int32_t id : old) {
    if (id < 0) continue;
    int32_t& slot = slots_[slot_of(piece(id))];
    if (slot < 0) ++used_;
    slot = id;
  }
}

void Vocab::reserve(size_t pieces, size_t chars) {
  chars_.reserve(chars);
  spans_.reserve(pieces);
  while (slots_.size() < 2 * pieces) grow();
}

void Vocab::set(int32_t id, std::string_view piece) {
  if (id < 0) fail("tokenizer", "vocabulary", "token id {} is negative", id);
  if (chars_.size() + piece.size() > UINT32_MAX) fail("tokenizer", "vocabulary", "pieces exceed 4 GiB");
  if (static_cast<size_t>(id) >= spans_.size()) spans_.resize(static_cast<size_t>(id) + 1);
  spans_[static_cast<size_t>(id)] = {static_cast<uint32_t>(chars_.size()), static_cast<uint32_t>(piece.size())};
  chars_.append(piece);
  // At most half full, so probes stay short and always end at an empty slot.
  if (2 * (used_ + 1) > slots_.size()) grow();
  int32_t& slot = slots_[slot_of(piece)];
  if (slot < 0) ++used_;
  slot = id;
}

}  // namespace tessera::tok
