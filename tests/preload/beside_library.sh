#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The preload shim in a program that also links libmemkit.so: with no
# settings, with MEMKIT_TUNABLES, with a profile, each also with
# LD_BIND_NOW=1.  The shim must not capture libmemkit's own mk_* symbols
# (that crashed at load with settings, and made ld.so print "Relink").
#   usage: beside_library.sh PRELOAD_SO PROGRAM_LINKED_WITH_LIBMEMKIT
set -u
so=${1:?usage: beside_library.sh PRELOAD_SO PROGRAM}
prog=${2:?usage: beside_library.sh PRELOAD_SO PROGRAM}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'nt_threshold=1K\nrep_stosb_threshold=4K\n' > "$work/profile"

passed=0 failed=0
run() {   # name, then env assignments
  local name=$1; shift
  for bind in "" 1; do
    env -u MEMKIT_TUNABLES MEMKIT_PROFILE=none LD_BIND_NOW=$bind LD_PRELOAD="$so" "$@" \
      timeout 20 "$prog" > "$work/out" 2> "$work/err"
    local rc=$?
    if [[ $rc == 0 ]] && ! grep -qE 'Relink|IFUNC' "$work/err"; then
      passed=$((passed + 1))
    else
      echo "FAIL $name${bind:+ with LD_BIND_NOW=1}: exit $rc"
      head -5 "$work/err"
      failed=$((failed + 1))
    fi
  done
}
run "no settings"
run "MEMKIT_TUNABLES" MEMKIT_TUNABLES=nt_threshold=1K:memset=sse2
run "a profile" MEMKIT_PROFILE="$work/profile"
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
