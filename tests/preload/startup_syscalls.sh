#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the preload shim asks of the kernel at a process's start (the time is
# the lab's to measure): a program that never calls memset/memcpy runs none
# of memkit's code; one that does reads its settings from libc's environment
# and looks for its profile once: no /proc/self/environ or /proc/self/auxv
# (those reads cost ~30 us per process in a VM), and the settings still
# count.
#   usage: startup_syscalls.sh PRELOAD_SO ONE_CALL_PROGRAM
set -u
so=${1:?usage: startup_syscalls.sh PRELOAD_SO PROGRAM}
prog=${2:?usage: startup_syscalls.sh PRELOAD_SO PROGRAM}
command -v strace >/dev/null || { echo "FAIL: strace is missing (scripts/deps.sh --test installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0 failed=0
check() {   # description, then a command whose success is the check
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $what"; failed=$((failed + 1)); fi
}
trace() {   # arguments for the program; its file system calls into $work/trace
  env -u MEMKIT_PROFILE -u XDG_CONFIG_HOME HOME="$work" LD_PRELOAD="$so" \
    strace -f -qq -e trace=%file -o "$work/trace" "$prog" "$@" 2> "$work/err"
}

trace none
check "a program that makes no call looks for no profile" \
  bash -c "! grep -q 'memkit/profile' '$work/trace'"

trace
check "one call looks for the profile once" \
  test "$(grep -c '\.config/memkit/profile' "$work/trace")" = 1
check "one call reads no /proc/self/environ" bash -c "! grep -q '/proc/self/environ' '$work/trace'"
check "one call reads no /proc/self/auxv" bash -c "! grep -q '/proc/self/auxv' '$work/trace'"

env MEMKIT_TUNABLES=no_such_tunable=1 LD_PRELOAD="$so" "$prog" 2> "$work/err"
check "the settings from libc's environment count" \
  grep -q "unknown tunable 'no_such_tunable'" "$work/err"

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
