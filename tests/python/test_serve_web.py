"""The web chat page of `tessera serve` in headless Chromium, driven over the
DevTools protocol (--remote-debugging-pipe: NUL-separated JSON on fds 3 / 4):
the page loads, names the model, sends the message given as ?prompt=, shows
the reply growing while it streams, then its speed; a reasoning model's
thinking shows in its own element above the reply. A screenshot is kept
under the test's tmp dir (its path is printed)."""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import time

import pytest

from pathlib import Path

from serve_helpers import Server
from tiny_models import make_tiny_chat_checkpoint

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh installs it)")


class Browser:
    """Headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, user_data_dir):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Above 10, so that placing them at 3 and 4 in the child overwrites neither.
        low = (to_browser_r, from_browser_w)
        to_browser_r, from_browser_w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in low)
        for fd in low:
            os.close(fd)

        def child_fds():  # the pipe protocol's fixed descriptors: 3 reads commands, 4 writes replies
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-pipe", f"--user-data-dir={user_data_dir}", "--window-size=1000,700",
             "--hide-scrollbars", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=child_fds, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.session = None

    def call(self, method, params=None, timeout=30):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next_id:
                    if "error" in reply:
                        raise AssertionError(f"{method}: {reply['error']}")
                    return reply["result"]
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raise AssertionError(f"{method}: no reply in {timeout} s")

    def open(self, url):
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def evaluate(self, expression):
        return self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})["result"].get("value")

    def close(self):
        try:
            self.session = None
            self.call("Browser.close", timeout=5)
        except (AssertionError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


STATE = """(() => {
  const reply = document.querySelector('.msg.assistant');
  return {model: document.getElementById('model').textContent,
          user: (document.querySelector('.msg.user') || {}).textContent || null,
          reply: reply ? reply.textContent : null, done: !!(reply && reply.dataset.done),
          pieces: reply ? Number(reply.dataset.pieces || 0) : 0,
          stats: (document.querySelector('.stats') || {}).textContent || null,
          speed: document.getElementById('speed').textContent};
})()"""


def wait_for_reply(browser, deadline):
    """The page's state once its reply is done (or the last seen at `deadline`)."""
    state = None
    while time.monotonic() < deadline:
        state = browser.evaluate(STATE)
        if state and state["done"]:
            break
        time.sleep(0.05)
    return state


def test_web_chat_page_streams_a_reply(pulled_model_path, tmp_path):
    with Server(pulled_model_path("smollm2-135m-instruct"), "--threads", 2) as server:
        browser = Browser(tmp_path / "chromium-profile")
        try:
            browser.open(f"{server.url}/?prompt=Write%20a%20haiku%20about%20autumn.")
            seen_partial, state = [], None
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                state = browser.evaluate(STATE)
                if state and state["done"]:
                    break
                if state and state["reply"]:
                    seen_partial.append(state["reply"])
                time.sleep(0.05)
            assert state and state["done"], state
            assert state["model"] == server.model_name
            assert state["user"] == "Write a haiku about autumn."
            assert state["reply"].strip() and state["pieces"] > 1
            # Seen while streaming: a non-empty reply shorter than the final one.
            assert any(0 < len(p) < len(state["reply"]) for p in seen_partial), (seen_partial[:3], state)
            assert "tok/s" in state["stats"] and "ttft" in state["stats"] and state["speed"].endswith("tok/s")

            shot = tmp_path / "web_chat.png"
            shot.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", {"format": "png"})["data"]))
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
            print(f"screenshot: {shot}")
        finally:
            browser.close()
        assert server.alive()


def test_web_chat_page_shows_reasoning_apart(tmp_path):
    """A tiny random Qwen3.5 with its real template, whose prompt opens
    <think>: the reply (cut at the page's max_tokens) is all reasoning,
    which shows in a .reasoning element, the reply itself empty."""
    template = (Path(__file__).resolve().parents[1] / "data" / "chat_templates" / "qwen3.5.jinja").read_text()
    model = make_tiny_chat_checkpoint("qwen3_5", tmp_path / "tiny_qwen3_5", template)
    with Server(str(model), "--threads", 2, env={"TESSERA_HOME": str(tmp_path / "home")}) as server:
        browser = Browser(tmp_path / "chromium-profile")
        try:
            browser.open(f"{server.url}/?prompt=Why%3F")
            state = wait_for_reply(browser, time.monotonic() + 90)
            assert state and state["done"], state
            thought = browser.evaluate("(document.querySelector('.reasoning') || {}).textContent || null")
            assert thought and state["reply"] == "", (thought, state)
            order = browser.evaluate("[...document.getElementById('log').children].map((e) => e.className)")
            assert order[:3] == ["msg user", "reasoning", "msg assistant"], order
        finally:
            browser.close()


def test_web_chat_page_sends_an_attached_image(tmp_path):
    """A tiny random multimodal Gemma 3: an image attached through the page's
    file input (DOM.setFileInputFiles, as a user picks a file) goes with the
    message as an image_url data: URL holding the file's bytes, shows as a
    thumbnail, and the server answers it (the page samples, so the reply's
    text is not compared)."""
    import io
    import numpy as np
    from PIL import Image
    from tiny_models import make_tiny_gemma3_with_images
    model = tmp_path / "tiny_gemma3_images"
    model.mkdir()
    make_tiny_gemma3_with_images(model)
    path = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(3).integers(0, 256, (30, 40, 3), dtype=np.uint8)).save(path)
    with Server(str(model), "--reference", "--threads", 2) as server:
        browser = Browser(tmp_path / "chromium-profile")
        try:
            browser.open(server.url + "/")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and browser.evaluate("document.getElementById('model').textContent") \
                    != server.model_name:
                time.sleep(0.05)
            root = browser.call("DOM.getDocument")["root"]["nodeId"]
            node = browser.call("DOM.querySelector", {"nodeId": root, "selector": "#image"})["nodeId"]
            browser.call("DOM.setFileInputFiles", {"nodeId": node, "files": [str(path)]})
            while time.monotonic() < deadline and browser.evaluate(
                    "document.getElementById('attached').textContent") != "photo.png":
                time.sleep(0.05)
            browser.evaluate("document.getElementById('input').value = 'Describe.';"
                             "document.getElementById('form').requestSubmit()")
            state = wait_for_reply(browser, deadline)
            assert state and state["done"], state
            assert state["user"] == "Describe." and state["reply"], state
            assert browser.evaluate("document.querySelectorAll('.msg.error').length") == 0
            sent = browser.evaluate("messages[0].content")
            assert sent[1] == {"type": "text", "text": "Describe."}
            assert sent[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
            assert browser.evaluate("document.querySelector('.msg.user img.thumb').src.startsWith('data:image/png')")
            assert browser.evaluate("document.getElementById('attached').textContent") == ""  # sent, not kept
        finally:
            browser.close()
