#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing memkit needs on a fresh Debian/Ubuntu
# machine: the compilers and build tools from apt, nothing if already there.
# Python packages go into the project's .venv (see the Makefile), never the
# system.
#   scripts/deps.sh          what building needs
#   scripts/deps.sh --test   and what the tests need besides (a headless
#                            browser that opens the lab's report)
set -euo pipefail

need=()   # Debian package names
why=()    # and what each is for, said before anything is installed
want() { need+=("$1"); why+=("$1: $2"); }
pg_missing=0
have() { command -v "$1" >/dev/null 2>&1; }
have cc || have gcc || want gcc "the C compiler for the library, tests and experiments"
have cmake || want cmake "the build system"
have ninja || want ninja-build "the build tool CMake drives"
have git || want git "the commit the library records (mk_version, fingerprints)"
have pkg-config || want pkg-config "the install test builds the pkg-config example"
# clang builds the libFuzzer targets; its runtime ships in libclang-rt.
have clang-14 || have clang || want clang-14 "the libFuzzer targets of make test"
if have clang-14 || have clang; then
  cl=$(command -v clang-14 || command -v clang)
  rt=$("$cl" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
  [[ -f "$rt" ]] || want libclang-rt-14-dev "libFuzzer's runtime for the fuzz targets"
else
  want libclang-rt-14-dev "libFuzzer's runtime for the fuzz targets"
fi
python3 -c 'import venv, ensurepip' 2>/dev/null || want python3-venv "the lab's Python front end lives in ./.venv"
if [[ "${1:-}" == "--test" ]]; then
  have chromium || want chromium "the test that opens the lab's report in a headless browser"
  have strace || want strace "the test of what the preload shim asks of the kernel at start-up"
  # The Python tests start a throwaway PostgreSQL server (initdb + pg_ctl).
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ||
    { want postgresql "the tests of the PostgreSQL results database start a throwaway server"; pg_missing=1; }
fi

if ((${#need[@]})); then
  echo "deps: memkit needs these Debian packages, not yet installed:"
  printf '  %s\n' "${why[@]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    SUDO=sudo
    echo "deps: installing them needs root: running 'sudo apt-get install' (it may ask for your password)"
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ((pg_missing)); then
    # The tests make their own clusters: no default one created and started.
    $SUDO mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/memkit.conf >/dev/null
  fi
  # Another apt-get may hold the lock (a shared machine): wait for it.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
