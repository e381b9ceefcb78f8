# Tessera top-level build. `make` builds everything (CLI at build/tessera),
# `make test` runs every test suite, `make demo` pulls the default model (and
# converts it once to its cached bundle), runs it and prints the prefill and
# decode rates on its last line.

BUILD      ?= build
JOBS       ?= $(shell nproc)
VENV       ?= .venv
PYTHON     ?= $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,python3)
DEMO_MODEL ?= smollm2-135m-instruct
DEMO_PROMPT ?= Explain in two sentences why the sky is blue.
FUZZ_SECONDS ?= 60

PYBIND11_DIR := $(shell $(PYTHON) -m pybind11 --cmakedir 2>/dev/null)
# TESSERA_BUILD_TESTS named: a `pip install .` into $(BUILD) (.ci/run) turns it off in the cache.
CMAKE_FLAGS  := -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=ON $(if $(PYBIND11_DIR),-DTESSERA_BUILD_PYTHON=ON -Dpybind11_DIR=$(PYBIND11_DIR) -DPython_EXECUTABLE=$(shell $(PYTHON) -c 'import sys; print(sys.executable)'))

.PHONY: all build test test-cpp test-python test-asan test-arm64 demo setup setup-arm64 fuzz clean

all: build

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: build
	$(MAKE) test-cpp test-python

test-cpp:
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-python:
	TESSERA_BIN=$(abspath $(BUILD))/tessera PYTHONPATH=$(abspath python):$(abspath $(BUILD))/python \
	  $(PYTHON) -m pytest -q tests/python $(PYTEST_ARGS)

# The bad-input suite again, against a tessera built with ASan + UBSan.
# -O1 -g1 (line tables): what ASan recommends, and about 1.5x faster to
# compile than -O2 -g, which is most of this target's time in CI.
test-asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
	  -DTESSERA_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS)
	TESSERA_BIN=$(abspath build-asan)/tessera TESSERA_SANITIZED=1 \
	  PYTHONPATH=$(abspath python) $(PYTHON) -m pytest -q tests/python/test_bad_inputs.py

# The AArch64 build (NEON kernels), cross-compiled and tested under
# qemu-aarch64; needs `make setup-arm64` once (scripts/test-arm64.sh).
test-arm64: build
	BUILD=$(BUILD) JOBS=$(JOBS) bash scripts/test-arm64.sh

demo: build
	$(BUILD)/tessera pull $(DEMO_MODEL) --threads $(JOBS)
	$(BUILD)/tessera run $(DEMO_MODEL) --chat -p "$(DEMO_PROMPT)" -n 128 --threads $(JOBS)

setup:
	bash scripts/setup.sh

setup-arm64:
	bash scripts/setup-arm64.sh

# libFuzzer targets (clang). FUZZ_SECONDS per target; corpora in fuzz/corpus-*.
fuzz:
	CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTESSERA_FUZZ=ON -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_CLI=OFF >/dev/null
	cmake --build build-fuzz -j $(JOBS)
	bash fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-arm64
