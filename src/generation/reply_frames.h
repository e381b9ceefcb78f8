// Message frames in a chat reply. Some formats write a reply as messages
// with headers of their own, and the text between them is what the user
// reads:
//   harmony (gpt-oss)  <|channel|>final<|message|>TEXT<|return|>, messages
//                      opened by <|start|>assistant and closed by <|end|>
//   Solar Open         <|begin|>assistant<|content|>TEXT<|end|>
//   Kimi K3            <|open|>response<|sep|>TEXT<|close|>response<|sep|>
//                      <|close|>message<|sep|><|end_of_msg|>
//   ATEM (muse-glimmer) <|start|>assistant to=RECIPIENT<|message|>TEXT<|eot|>
//   MiniMax M3         a reply without reasoning opens with a bare </mm:think>
//   GigaChat 3         TEXT<|message_sep|> before its call message
// A FrameFilter takes those markers out of the content (the reasoning
// splitter has taken the reasoning channel's markers already; the calls'
// own markers are not frames and pass).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

enum class ToolCallStyle;

// A marker taken out wherever it appears, but for its last `kept` bytes
// (harmony's "<|channel|>commentary " goes only before a call's "to=").
struct FrameMarker {
  FrameMarker(const char* t, size_t k = 0) : text(t), kept(k) {}  // NOLINT: a bare marker converts
  std::string_view text;
  size_t kept;
};

struct ReplyFrames {
  std::vector<FrameMarker> markers;
  // Set (ATEM): a recipient header, `recipient` NAME `recipient_end` with
  // NAME free of whitespace and '<', at the start of the content or after
  // a space (taken out with it), is taken out too.
  std::string_view recipient = "", recipient_end = "";
};

// The frames of a template whose tool-call style frames its messages.
std::optional<ReplyFrames> reply_frames_of(ToolCallStyle style);

// Streams content with the frames taken out: everything pushed, then
// finish(), gives what one push of the whole text and finish() give.
class FrameFilter {
 public:
  explicit FrameFilter(ReplyFrames frames) : frames_(std::move(frames)) {}
  std::string push(std::string_view text);
  std::string finish();
  static std::string filter(std::string_view text, const ReplyFrames& frames);

 private:
  struct Span {
    size_t begin, end;
  };
  // The first frame of buffer_ (begin npos: none).
  Span next_frame() const;
  // Where the text that may still become a frame starts.
  size_t held_from() const;
  // Whether a recipient header may start at `i`, and where (with its space).
  std::optional<size_t> recipient_start(size_t i) const;
  // Where the name of a header whose `recipient` is at `i` ends (bounded).
  size_t recipient_name_end(size_t i) const;

  ReplyFrames frames_;
  std::string buffer_;
  bool emitted_ = false;  // any text handed out (a recipient header then needs its space)
};

}  // namespace tessera
