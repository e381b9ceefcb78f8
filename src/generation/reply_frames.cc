#include "generation/reply_frames.h"

#include <algorithm>

#include "generation/reply_text.h"
#include "generation/tool_calls.h"

namespace tessera {

namespace {

using reply_text::is_space;
using reply_text::partial_marker;

constexpr size_t kNone = std::string::npos;
// A recipient's name is a tool's name or "user" / "self": bounded, so that
// text is never held back for long.
constexpr size_t kMaxRecipient = 128;

bool name_char(char c) { return !is_space(c) && c != '<'; }

}  // namespace

std::optional<ReplyFrames> reply_frames_of(ToolCallStyle style) {
  switch (style) {
    case ToolCallStyle::Harmony:
      return ReplyFrames{{"<|start|>assistant", "<|channel|>final<|message|>", "<|channel|>commentary<|message|>",
                          {"<|channel|>commentary to=", 3}, "<|end|>", "<|return|>"}};
    case ToolCallStyle::SolarOpen: return ReplyFrames{{"<|begin|>assistant", "<|content|>", "<|end|>"}};
    case ToolCallStyle::KimiK3:
      return ReplyFrames{{"<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>",
                          "<|end_of_msg|>"}};
    case ToolCallStyle::Atem: return ReplyFrames{{"<|start|>assistant", "<|eom|>", "<|eot|>"}, "to=", "<|message|>"};
    case ToolCallStyle::MiniMaxM3: return ReplyFrames{{"</mm:think>"}};
    case ToolCallStyle::GigaChat3:
    case ToolCallStyle::GigaChat31: return ReplyFrames{{"<|message_sep|>"}};
    default: return std::nullopt;
  }
}

std::optional<size_t> FrameFilter::recipient_start(size_t i) const {
  if (i == 0) return emitted_ ? std::nullopt : std::optional<size_t>(0);
  if (buffer_[i - 1] == ' ') return i - 1;
  return std::nullopt;
}

size_t FrameFilter::recipient_name_end(size_t i) const {
  size_t j = i + frames_.recipient.size();
  while (j < buffer_.size() && j - i < kMaxRecipient && name_char(buffer_[j])) ++j;
  return j;
}

FrameFilter::Span FrameFilter::next_frame() const {
  Span best{kNone, kNone};
  for (const FrameMarker& m : frames_.markers)
    if (const size_t i = buffer_.find(m.text); i < best.begin) best = {i, i + m.text.size() - m.kept};
  const std::string_view r = frames_.recipient;
  if (r.empty()) return best;
  for (size_t i = buffer_.find(r); i != kNone && i < best.begin; i = buffer_.find(r, i + 1)) {
    const std::optional<size_t> start = recipient_start(i);
    if (!start) continue;
    const size_t j = recipient_name_end(i);
    if (std::string_view(buffer_).substr(j).starts_with(frames_.recipient_end))
      return {*start, j + frames_.recipient_end.size()};
  }
  return best;
}

size_t FrameFilter::held_from() const {
  size_t held = buffer_.size();
  for (const FrameMarker& m : frames_.markers)
    held = std::min(held, buffer_.size() - partial_marker(buffer_, m.text));
  const std::string_view r = frames_.recipient;
  if (r.empty()) return held;
  // A space that may open a header, a part of `recipient`, or a header
  // whose name or end is not all here yet.
  if (!buffer_.empty() && buffer_.back() == ' ') held = std::min(held, buffer_.size() - 1);
  std::string spaced(1, ' ');  // " " + r, built so (GCC 12 warns falsely on operator+ here)
  spaced += r;
  held = std::min(held, buffer_.size() - partial_marker(buffer_, spaced));
  if (!emitted_ && r.starts_with(buffer_)) held = 0;
  for (size_t i = buffer_.find(r); i != kNone; i = buffer_.find(r, i + 1)) {
    const std::optional<size_t> start = recipient_start(i);
    if (!start) continue;
    const size_t j = recipient_name_end(i);
    const std::string_view rest = std::string_view(buffer_).substr(j);
    if (j - i < kMaxRecipient && frames_.recipient_end.starts_with(rest)) return std::min(held, *start);
  }
  return held;
}

std::string FrameFilter::push(std::string_view text) {
  buffer_ += text;
  std::string out;
  for (Span f = next_frame(); f.begin != kNone; f = next_frame()) {
    out += buffer_.substr(0, f.begin);
    emitted_ |= f.begin > 0;
    buffer_.erase(0, f.end);
  }
  const size_t held = held_from();
  out += buffer_.substr(0, held);
  emitted_ |= held > 0;
  buffer_.erase(0, held);
  return out;
}

std::string FrameFilter::finish() {
  std::string out = std::move(buffer_);
  buffer_.clear();
  return out;
}

std::string FrameFilter::filter(std::string_view text, const ReplyFrames& frames) {
  FrameFilter f(frames);
  std::string out = f.push(text);
  return out + f.finish();
}

}  // namespace tessera
