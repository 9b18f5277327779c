#!/usr/bin/env bash
# Installs what building and testing memkit needs on a fresh Debian/Ubuntu
# machine: the compilers and build tools from apt, nothing if already there.
# Python packages go into the project's .venv (see the Makefile), never the
# system.
#   scripts/deps.sh          what building needs
#   scripts/deps.sh --test   and what the tests need besides (a headless
#                            browser that opens the lab's report)
set -euo pipefail

need=()
pg_missing=0
have() { command -v "$1" >/dev/null 2>&1; }
have cc || have gcc || need+=(gcc)
have cmake || need+=(cmake)
have ninja || need+=(ninja-build)
have git || need+=(git)
have pkg-config || need+=(pkg-config)
# clang builds the libFuzzer targets; its runtime ships in libclang-rt.
have clang-14 || have clang || need+=(clang-14)
if have clang-14 || have clang; then
  cl=$(command -v clang-14 || command -v clang)
  rt=$("$cl" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
  [[ -f "$rt" ]] || need+=(libclang-rt-14-dev)
else
  need+=(libclang-rt-14-dev)
fi
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [[ "${1:-}" == "--test" ]]; then
  have chromium || need+=(chromium)
  # The Python tests start a throwaway PostgreSQL server (initdb + pg_ctl).
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || { need+=(postgresql); pg_missing=1; }
fi

if ((${#need[@]})); then
  echo "deps: installing ${need[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
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
