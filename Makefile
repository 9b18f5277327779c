# SPDX-License-Identifier: Apache-2.0
# memkit — the two commands a fresh machine needs:
#   make bench   build, run the lab's default suite, print the summary, write the report
#   make test    build and run every test (C tests, sanitizer builds, fuzzing, Python)
# and: make (build), make install PREFIX=DIR, make clean.

PREFIX ?= /usr/local
PYTHON ?= python3
JOBS   ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 20

BUILD      := build
VENV       := .venv
VENV_STAMP := $(VENV)/.stamp

.PHONY: all deps test-deps lib venv test test-c test-asan test-tsan test-fuzz test-python bench install clean

all: lib venv

deps:
	@scripts/deps.sh

lib: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The lab's Python front end and its dependencies, in a local virtual
# environment: the package editable, without its CMake build (the lab uses
# build/; `pip install .` is the way with the C parts inside the package).
$(VENV_STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/pip install -q --upgrade pip >/dev/null
	@$(VENV)/bin/pip install -q -e '.[test]' -Ceditable.mode=inplace -Cwheel.cmake=false
	@touch $@
venv: deps $(VENV_STAMP)

test: lib venv test-c test-asan test-tsan test-fuzz test-python

test-c: lib test-deps
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every C test again under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMKIT_DEBUG_CONTRACTS=ON \
	  -DMEMKIT_SANITIZE=address,undefined -DMEMKIT_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

# The threaded tests under ThreadSanitizer.
test-tsan: deps
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DMEMKIT_SANITIZE=thread -DMEMKIT_BUILD_BENCH=OFF >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && ctest --output-on-failure -L threaded --no-tests=ignore

# libFuzzer targets (clang), each run briefly against its reference.
test-fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

test-deps:
	@scripts/deps.sh --test

test-python: venv lib test-deps
	@MEMKIT_BUILD=$(BUILD) MEMKIT_REQUIRE_BROWSER=1 $(VENV)/bin/python -m pytest -q --durations=10 tests/python

# The default suite (results/memkit.db), its summary (which names `memkit
# compare` once an earlier run shares measurements with it), then the report even when an
# experiment failed (the run keeps the others); Ctrl-C stops here.
bench: lib venv
	@MEMKIT_BUILD=$(BUILD) $(VENV)/bin/memkit run; rc=$$?; [ $$rc -eq 130 ] && exit 130; \
	  $(VENV)/bin/memkit report; exit $$rc

# The library, the preload, the experiments and their data, the man page and
# the bash/zsh completions (generated from the command line's parser).
install: lib venv
	@$(VENV)/bin/python -m memkit.docs --out $(BUILD)/docs >/dev/null
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	@rm -rf $(BUILD) build-asan build-tsan build-fuzz
