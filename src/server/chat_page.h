// The web chat page `tessera serve` answers GET / with: one self-contained
// HTML document (no external scripts or styles) that lists the model
// (GET /v1/models), streams replies from POST /v1/chat/completions as they
// arrive and shows each reply's decode speed and time to first token.
// `/?prompt=TEXT` sends TEXT as the first message when the page loads (what
// the headless-browser test uses).
#pragma once

#include <string_view>

namespace tessera::server {

std::string_view chat_page_html();

}  // namespace tessera::server
