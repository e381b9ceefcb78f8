#include "tokenizer/vocab.h"

#include <functional>

#include "core/error.h"

namespace tessera::tok {

namespace {

uint64_t hash_of(std::string_view piece) { return std::hash<std::string_view>{}(piece); }
uint32_t tag_of(uint64_t h) { return static_cast<uint32_t>(h >> 32); }

}  // namespace

size_t Vocab::slot_of(std::string_view piece, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  const uint32_t tag = tag_of(h);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0 || (s.tag == tag && this->piece(s.id) == piece)) return i;
  }
}

std::optional<int32_t> Vocab::find(std::string_view piece) const {
  if (slots_.empty()) return std::nullopt;
  const int32_t id = slots_[slot_of(piece, hash_of(piece))].id;
  if (id < 0) return std::nullopt;
  return id;
}

void Vocab::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  used_ = 0;
  for (const Slot& o : old) {
    if (o.id < 0) continue;
    const std::string_view p = piece(o.id);
    const uint64_t h = hash_of(p);
    Slot& slot = slots_[slot_of(p, h)];
    if (slot.id < 0) ++used_;
    slot = {o.id, tag_of(h)};
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
  const uint64_t h = hash_of(piece);
  Slot& slot = slots_[slot_of(piece, h)];
  if (slot.id < 0) ++used_;
  slot = {id, tag_of(h)};
}

}  // namespace tessera::tok
