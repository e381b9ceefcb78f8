#!/usr/bin/env bash
# One-time setup of a fresh Debian machine: system packages (apt) and a Python
# virtual environment (.venv) with what the tests and the model pull need.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  cmake g++ make git ccache python3-venv libssl-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libhwy-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev prometheus-cpp-dev libjpeg62-turbo-dev libpng-dev
  clang-14 libclang-rt-14-dev
  chromium  # the web chat page's headless test (tests/python/test_serve_web.py)
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] apt-get install ${missing[*]}"
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PY" -m venv .venv
fi
# torch==2.13.0 is the CPU build; any other spec would pull a multi-GB CUDA build.
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -r requirements-dev.txt
echo "[setup] done"
