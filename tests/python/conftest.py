# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the package on sys.path, a CLI runner, fake experiments
(small scripts speaking the lab protocol) and the real build's experiments."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

# pg_server / pg_url: a throwaway PostgreSQL server for the session.
pytest_plugins = ["pgserver"]

FINGERPRINT = {
    "cpu_model": "Test CPU", "vendor": "AuthenticAMD", "family": 25, "model": 17, "stepping": 1,
    "microcode": "0xa0", "kernel": "6.1.0", "glibc": "2.36",
    "isa": {"sse2": 1, "avx2": 1, "avx512f": 1, "avx512bw": 1, "avx512vl": 1, "erms": 1, "fsrm": 1,
            "os_avx": 1, "os_avx512": 1},
    "cache": {"l1d": 32768, "l2": 1048576, "l3": 33554432, "line": 64},
    "cpus_online": 2, "thp": "always [madvise] never", "governor": "unknown",
    "memkit_version": "0.1.0", "memkit_commit": "abc123", "tunables": "threads=0", "profile": "",
    "variants": {"memset": "avx512", "memcpy": "avx512", "memmove": "avx512"},
}

# A fake experiment: behaves per its name (ok, crash, fail, slow, garbage).
FAKE = '''#!{python}
import json, os, signal, sys, time
name = os.path.basename(sys.argv[0])[len("memkit-exp-"):]
fp = {fp}
args = sys.argv[1:]
if "--describe" in args:
    print(json.dumps({{"name": name, "seed": "seed-of-" + name, "description": "fake " + name}}))
    sys.exit(0)
if "--fingerprint" in args:
    print(json.dumps(dict(fp, type="fingerprint")))
    sys.exit(0)
if "--check-args" in args:
    bad = [a for a in args if a.startswith("bad=")]
    if bad:
        sys.stderr.write("error: " + name + ": refused " + bad[0] + "\\n")
    sys.exit(2 if bad else 0)
out = open(args[args.index("--jsonl") + 1], "w")
def emit(rec):
    out.write(json.dumps(rec) + "\\n"); out.flush()
emit(dict(fp, type="fingerprint"))
quick = "--quick" in args
sizes = [1024, 65536, 4 << 20, 64 << 20]
for i, size in enumerate(sizes):
    sys.stderr.write(f"progress: {{name}} {{i}}/{{len(sizes)}} {{0.1 * i:.1f}}s {{size}} B\\n"); sys.stderr.flush()
    if name == "slow":
        time.sleep(60)
    for series in ("a", "b"):
        v = 10.0 * (i + 1) + (1 if series == "b" else 0)
        emit({{"type": "measurement", "experiment": name, "series": series,
              "params": {{"size": size, "quick": quick}}, "metric": "fill_throughput", "unit": "GB/s",
              "stat": "median", "value": v, "min": v * 0.98, "median": v, "max": v * 1.02, "samples": 5}})
print("table of " + name)
if name == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
if name == "fail":
    sys.stderr.write("error: the fake experiment failed on purpose\\n")
    sys.exit(3)
emit({{"type": "verdict", "experiment": name, "text": name + " verdict"}})
given = [a for a in args if "=" in a]
if given:
    emit({{"type": "verdict", "experiment": name, "kind": "note", "text": "arguments: " + " ".join(given)}})
if name == "loser":
    emit({{"type": "verdict", "experiment": name, "kind": "fastest", "text": "glibc fastest from 1 KiB to 4 KiB"}})
    emit({{"type": "verdict", "experiment": name, "kind": "loss", "text": "memkit 1.30x slower than glibc at 2 KiB"}})
if name != "truncated":
    emit({{"type": "end", "experiment": name, "seconds": 0.1}})
'''


def make_fake_build(root: Path, names, fingerprint=None) -> Path:
    bench = root / "bench"
    bench.mkdir(parents=True, exist_ok=True)
    for n in names:
        p = bench / f"memkit-exp-{n}"
        p.write_text(FAKE.format(python=sys.executable, fp=repr(fingerprint or FINGERPRINT)))
        p.chmod(0o755)
    return root


@pytest.fixture
def fake_build(tmp_path):
    return make_fake_build(tmp_path / "build", ["ok", "zeta", "crash", "fail", "slow", "truncated"])


# The user's data directory (memkit's default database outside a checkout)
# is never the tests': a command that falls back to it writes here.
TEST_DATA_HOME = tempfile.mkdtemp(prefix="memkit-tests-data-")
atexit.register(shutil.rmtree, TEST_DATA_HOME, True)


def cli_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MEMKIT_DB", None)
    env.pop("MEMKIT_HOST", None)
    env["XDG_DATA_HOME"] = TEST_DATA_HOME
    env.update(extra)
    return env


def run_cli(*args, cwd=None, env=None, timeout=300):
    """Runs `python -m memkit ARGS`; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "memkit", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env or cli_env(), timeout=timeout)


@pytest.fixture
def cli():
    return run_cli


def running_glibc():
    """This process's glibc version as (major, minor), None if not glibc."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (AttributeError, ValueError, OSError):
        return None
    return tuple(int(x) for x in version.split(".")[:2]) if name == "glibc" else None


def real_bench_dir():
    """The real build's experiments: $MEMKIT_BUILD (must have them: `make
    test` sets it), else the checkout's build/, else skip."""
    given = os.environ.get("MEMKIT_BUILD")
    for cand in ([Path(given)] if given else [REPO / "build"]):
        for d in (cand / "bench", cand):
            if (d / "memkit-exp-fill-regions").exists():
                return d
    if given:
        pytest.fail(f"MEMKIT_BUILD={given} has no memkit-exp-fill-regions")
    pytest.skip("nothing built: run `make` (or set MEMKIT_BUILD)")
