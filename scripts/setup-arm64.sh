#!/usr/bin/env bash
# One-time setup for `make test-arm64` on an x86-64 Debian machine: the GNU
# cross compiler for AArch64, qemu's user-mode emulator, and the arm64 builds
# of the libraries the project links, installed beside the host's through
# Debian multiarch (dpkg --add-architecture arm64). Header-only libraries
# (nlohmann-json, CLI11) are architecture-independent and come from setup.sh.
set -euo pipefail

SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
PACKAGES=(
  g++-aarch64-linux-gnu qemu-user
  libfmt-dev:arm64 libssl-dev:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 libhwy-dev:arm64 libgtest-dev:arm64
  libjpeg62-turbo-dev:arm64 libpng-dev:arm64
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
((${#missing[@]})) || { echo "[setup-arm64] nothing to install"; exit 0; }
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "[setup-arm64] dpkg --add-architecture arm64"
  $SUDO dpkg --add-architecture arm64
fi
echo "[setup-arm64] apt-get install ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
echo "[setup-arm64] done"
