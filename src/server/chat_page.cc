#include "server/chat_page.h"

namespace tessera::server {

std::string_view chat_page_html() {
  static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tessera chat</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 0; background: #f5f5f4; color: #1c1917; }
  header { padding: 12px 20px; background: #1c1917; color: #fafaf9; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  #model { font-family: monospace; opacity: 0.8; }
  #log { max-width: 820px; margin: 0 auto; padding: 16px 20px 120px; }
  .msg { white-space: pre-wrap; padding: 10px 14px; border-radius: 10px; margin: 10px 0; line-height: 1.45; }
  .user { background: #dbeafe; margin-left: 15%; }
  .assistant { background: #fff; border: 1px solid #e7e5e4; margin-right: 15%; }
  .stats { font-size: 12px; color: #57534e; margin: -6px 0 10px; font-family: monospace; }
  .error { background: #fee2e2; }
  .reasoning { white-space: pre-wrap; font-size: 13px; color: #78716c; font-style: italic; border-left: 3px solid #d6d3d1;
               padding: 4px 12px; margin: 10px 15% 0 0; }
  form { position: fixed; bottom: 0; left: 0; right: 0; background: #fafaf9; border-top: 1px solid #e7e5e4; padding: 12px; }
  form div { max-width: 820px; margin: 0 auto; display: flex; gap: 8px; }
  textarea { flex: 1; font: inherit; padding: 8px; resize: vertical; min-height: 42px; }
  button, .attach { font: inherit; padding: 8px 16px; }
  .attach { border: 1px solid #a8a29e; border-radius: 3px; cursor: pointer; background: #e7e5e4; }
  #attached { align-self: center; font-size: 12px; color: #57534e; max-width: 120px; overflow: hidden; }
  .thumb { display: block; max-width: 200px; max-height: 160px; margin-bottom: 6px; border-radius: 6px; }
</style>
</head>
<body>
<header><h1>Tessera</h1><span id="model">loading model…</span><span id="speed"></span></header>
<main id="log"></main>
<form id="form"><div>
  <label class="attach" title="Attach an image (JPEG / PNG) to the next message, for a model that takes images">Image
    <input type="file" id="image" accept="image/png,image/jpeg" hidden></label>
  <span id="attached"></span>
  <textarea id="input" placeholder="Message (Enter sends, Shift+Enter: new line)"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="reset" type="button" title="Start a new conversation">New</button>
</div></form>
<script>
"use strict";
const log = document.getElementById("log"), input = document.getElementById("input");
const form = document.getElementById("form"), sendButton = document.getElementById("send");
let modelName = null, messages = [], busy = false;
// The image attached to the next message, as a data: URL (sent inline as an
// OpenAI image_url content part; the server fetches no remote URL).
const imageInput = document.getElementById("image"), attachedLabel = document.getElementById("attached");
let attached = null;
imageInput.addEventListener("change", () => {
  const file = imageInput.files[0];
  if (!file) return;
  const reader = new FileReader();
  reader.onload = () => { attached = reader.result; attachedLabel.textContent = file.name; };
  reader.readAsDataURL(file);
});

function add(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  div.textContent = text;
  log.appendChild(div);
  return div;
}

async function loadModel() {
  try {
    const r = await fetch("/v1/models");
    const body = await r.json();
    modelName = body.data[0].id;
    document.getElementById("model").textContent = modelName;
  } catch (e) {
    document.getElementById("model").textContent = "no model: " + e;
  }
}

// Reads the server-sent events of one streamed completion; each "data:" line
// is a JSON chunk, "data: [DONE]" ends the stream.
async function streamReply(reply) {
  const response = await fetch("/v1/chat/completions", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({model: modelName, messages: messages, stream: true, max_tokens: 512}),
  });
  if (!response.ok) {
    const body = await response.json().catch(() => ({error: {message: response.statusText}}));
    throw new Error(body.error ? body.error.message : response.statusText);
  }
  const reader = response.body.getReader(), decoder = new TextDecoder();
  let buffer = "", text = "", timings = null, pieces = 0, thought = null;
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, {stream: true});
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!event.startsWith("data: ")) continue;
      const data = event.slice(6);
      if (data === "[DONE]") continue;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.timings) timings = chunk.timings;
      const choice = chunk.choices && chunk.choices[0];
      // A reasoning model's thinking (delta.reasoning_content): shown above
      // the reply, not sent back with the conversation.
      if (choice && choice.delta && choice.delta.reasoning_content) {
        if (!thought) {
          thought = document.createElement("div");
          thought.className = "reasoning";
          reply.parentNode.insertBefore(thought, reply);
        }
        thought.textContent += choice.delta.reasoning_content;
        window.scrollTo(0, document.body.scrollHeight);
      }
      if (choice && choice.delta && choice.delta.content) {
        text += choice.delta.content;
        reply.textContent = text;
        reply.dataset.pieces = ++pieces;  // how many streamed updates the reply took
        window.scrollTo(0, document.body.scrollHeight);
      }
    }
  }
  return {text, timings};
}

async function send(text) {
  if (busy || !text.trim()) return;
  busy = true;
  sendButton.disabled = true;
  const image = attached;
  attached = null;
  imageInput.value = "";
  attachedLabel.textContent = "";
  messages.push({role: "user", content: image ? [{type: "image_url", image_url: {url: image}}, {type: "text", text: text}]
                                              : text});
  const shown = add("user", text);
  if (image) {
    const img = document.createElement("img");
    img.src = image;
    img.className = "thumb";
    shown.prepend(img);
  }
  const reply = add("assistant", "");
  try {
    const {text: answer, timings} = await streamReply(reply);
    messages.push({role: "assistant", content: answer});
    if (timings) {
      const stats = document.createElement("div");
      stats.className = "stats";
      stats.textContent = `${timings.decode_tok_s.toFixed(1)} tok/s · ttft ${timings.ttft_ms.toFixed(0)} ms · ` +
                          `${timings.reused_tokens} prompt tokens reused`;
      log.appendChild(stats);
      document.getElementById("speed").textContent = `${timings.decode_tok_s.toFixed(1)} tok/s`;
    }
    reply.dataset.done = "true";
  } catch (e) {
    reply.className = "msg error";
    reply.textContent = "error: " + e.message;
    messages.pop();
  }
  busy = false;
  sendButton.disabled = false;
}

form.addEventListener("submit", (e) => { e.preventDefault(); const t = input.value; input.value = ""; send(t); });
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
});
document.getElementById("reset").addEventListener("click", () => { messages = []; log.textContent = ""; });

loadModel().then(() => {
  const prompt = new URLSearchParams(location.search).get("prompt");
  if (prompt) send(prompt);
});
</script>
</body>
</html>
)HTML";
  return kPage;
}

}  // namespace tessera::server
