#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if any library object calls memset, memcpy, memmove, bzero or mempcpy
# (or their fortified __*_chk forms):
# inside libmemkit_preload.so those names are the shim itself, and a call from
# the code its resolvers run would recurse.
set -u
bad=$(nm -u "$@" 2>&1 | grep -E ' (__)?(memset|memcpy|memmove|bzero|mempcpy)(_chk)?$' || true)
checked=$#
if [[ -n $bad ]]; then
  echo "library objects call libc string routines:"
  nm -A -u "$@" | grep -E ' (__)?(memset|memcpy|memmove|bzero|mempcpy)(_chk)?$'
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$checked objects checked"
echo "1 passed, 0 failed"
