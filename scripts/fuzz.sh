#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds every libFuzzer target (tests/fuzz/fuzz_*.c) with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer into build-fuzz/, and runs each for SECONDS.
#   scripts/fuzz.sh [SECONDS]     (default 20)
# Corpora are kept in build-fuzz/corpus/<target>/ between runs; a crash
# leaves its input in build-fuzz/crashes/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-20}
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2; }
build=${MEMKIT_FUZZ_BUILD:-build-fuzz}

die() { echo "fuzz.sh: $*" >&2; exit 1; }

cc=$(command -v clang-14 || command -v clang || true)
[[ -n "$cc" ]] || die "no clang found (scripts/deps.sh installs clang-14 and libclang-rt-14-dev)"
rt=$("$cc" -print-file-name=libclang_rt.fuzzer-x86_64.a)
[[ -f "$rt" ]] || die "$cc has no libFuzzer runtime (install libclang-rt-14-dev)"

targets=()
for src in tests/fuzz/fuzz_*.c; do
  [[ -e "$src" ]] && targets+=("$(basename "$src" .c)")
done
((${#targets[@]})) || die "no tests/fuzz/fuzz_*.c targets"

cmake -S . -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMEMKIT_SANITIZE=address,undefined -DMEMKIT_BUILD_FUZZ=ON -DMEMKIT_BUILD_BENCH=OFF \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; die "cmake configure failed"; }
rm -f "$build.configure.log"
cmake --build "$build" --target "${targets[@]}" || die "build of ${targets[*]} failed"

mkdir -p "$build/crashes"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  # tests/fuzz/<target>.seeds: a folder of real inputs to start from (read, never written)
  seeds=()
  [[ -f tests/fuzz/$t.seeds ]] && read -r seed_dir <"tests/fuzz/$t.seeds" && seeds=("$seed_dir")
  echo "fuzz: $t for ${seconds}s"
  if ! "$build/tests/$t" -max_total_time="$seconds" -print_final_stats=0 \
      -artifact_prefix="$build/crashes/$t-" "$build/corpus/$t" "${seeds[@]}" >"$build/$t.log" 2>&1; then
    tail -n 40 "$build/$t.log" >&2
    echo "fuzz: $t FAILED (log: $build/$t.log, input in $build/crashes/)" >&2
    status=1
  else
    grep -E "^#[0-9]+ *DONE" "$build/$t.log" | tail -n 1 || tail -n 1 "$build/$t.log"
    echo "fuzz: $t ok"
  fi
done
exit $status
