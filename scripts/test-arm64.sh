#!/usr/bin/env bash
# The AArch64 build, tested on this x86-64 machine under qemu-aarch64 (`make
# test-arm64`; scripts/setup-arm64.sh installs what it needs):
#   1. cross-compile the library, the CLI and the unit tests
#      (cmake/aarch64-linux-gnu.cmake) into build-arm64;
#   2. run every unit test under `qemu-aarch64 -cpu max` (a CPU with the
#      dot product, so the neon level is detected and its kernels are
#      checked bit for bit against their scalar twins), then the scalar-only
#      CPU test under `-cpu cortex-a53` (no dot product: the level is refused);
#   3. end to end: the SmolLM2 lut4 bundle, converted by the host's
#      tessera, must reproduce the committed determinism oracle (greedy ids
#      of tests/data/oracle) at the neon level, with 2 threads.
# Timings under the emulator mean nothing; this checks correctness only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
ARM=build-arm64
QEMU=(qemu-aarch64 -cpu max)

# Without `tessera serve`: Debian's arm64 cpp-httplib is not among the
# packages setup-arm64.sh installs, and the server has no kernels to check.
cmake -S . -B "$ARM" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DTESSERA_BUILD_SERVER=OFF >/dev/null
cmake --build "$ARM" -j "$JOBS"

# Two tests exercise host facilities qemu-user emulates differently:
# transparent huge pages of the emulated address space (not reported in
# smaps), and posix_spawn's exec error (glibc reports it through memory its
# CLONE_VFORK child shares, which qemu runs as a plain fork, so the failure
# never reaches the parent).
EMULATOR_ARTEFACTS="MappedFile.HugePagesBackTheCopyWhereTheKernelGrantsThem|Subprocess.MissingProgramIsAnError"
ctest --test-dir "$ARM" --output-on-failure -j "$JOBS" -E "$EMULATOR_ARTEFACTS"
qemu-aarch64 -cpu cortex-a53 "$ARM/tessera_tests" --gtest_brief=1 --gtest_filter='CpuIsa.*:QLinear.*'

model=smollm2-135m-instruct
"$BUILD/tessera" pull "$model" --no-convert >/dev/null
"$BUILD/tessera" convert "$model" -o "$ARM/$model.lut4" --weights lut4 --force >/dev/null
TESSERA_ISA=neon "${QEMU[@]}" "$ARM/tessera" oracle "$ARM/$model.lut4" -t 2 \
  --check "tests/data/oracle/$model.lut4.json"
echo "[test-arm64] passed"
