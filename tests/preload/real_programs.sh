#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs real, unmodified programs from this machine (bench/apps/workloads.sh)
# with and without the preload shim and requires byte-identical output.
#   usage: real_programs.sh /path/to/libmemkit_preload.so
set -u
so=${1:?usage: real_programs.sh PRELOAD_SO}
[[ -f $so ]] || { echo "no such file: $so"; exit 2; }
workloads=$(cd "$(dirname "$0")/../../bench/apps" && pwd)/workloads.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$workloads" setup "$work/inputs"
while IFS= read -r line; do export "${line?}"; done < <("$workloads" env)
cd "$work"

passed=0 failed=0
while IFS='|' read -r name tool cmd; do
  if ! command -v "$tool" >/dev/null; then
    echo "skip $name: $tool is not installed"
    continue
  fi
  for mode in plain preload; do
    rm -rf "run-$mode" && cp -r inputs "run-$mode"
    preload=""
    [[ $mode == preload ]] && preload=$so
    (cd "run-$mode" && LD_PRELOAD="$preload" bash -c "$cmd") > "out-$mode" 2> "err-$mode" < /dev/null
    echo $? > "rc-$mode"
  done
  # Identical stdout, success, and nothing from the loader or memkit on stderr
  # (ld.so warns "Relink ... for IFUNC symbol" when a preload gets it wrong).
  if [[ $(cat rc-plain) == 0 && $(cat rc-preload) == 0 && -s out-plain ]] &&
     cmp -s out-plain out-preload && ! grep -qE 'Relink|memkit' err-preload; then
    echo "ok   $name: $(wc -c < out-plain) bytes of output identical"
    passed=$((passed + 1))
  else
    echo "FAIL $name: exit $(cat rc-plain) without, $(cat rc-preload) with the preload"
    cmp out-plain out-preload | head -3
    head -5 err-preload
    failed=$((failed + 1))
  fi
done < <("$workloads" list)

# The shim must really have been active in those runs.
if LD_PRELOAD="$so" python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).memkit_preload_active() != 1)'; then
  echo "ok   the shim was active (memkit_preload_active() == 1 under LD_PRELOAD)"
  passed=$((passed + 1))
else
  echo "FAIL the shim was not active under LD_PRELOAD"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[[ $failed == 0 && $passed -ge 5 ]]
