"""memkit tune: the crossover logic on synthetic curves, the profile it
writes, and the library's reading of profiles (good, corrupt, missing,
overridden by MEMKIT_TUNABLES) through a real experiment's --fingerprint."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import real_bench_dir
from memkit import tune


def m(series, size, v, metric="fill_throughput", **params):
    return {"type": "measurement", "series": series, "metric": metric, "value": v,
            "params": dict(size=size, **params)}


def test_crossover_needs_a_consistent_win():
    inc = tune.Curve("a", {1: 10, 2: 10, 4: 10, 8: 10, 16: 10})
    # wins at 2, loses at 4, wins from 8 on: the threshold is 8
    ch = tune.Curve("b", {1: 9, 2: 12, 4: 9, 8: 12, 16: 13})
    assert tune.crossover(ch, inc) == 8
    # within the margin is not a win
    assert tune.crossover(tune.Curve("c", {s: 10.2 for s in inc.points}), inc) is None
    # `below` ignores sizes where another method takes over
    assert tune.crossover(tune.Curve("d", {1: 9, 2: 12, 4: 12, 8: 9, 16: 9}), inc, below=8) == 2


def test_memset_choices_from_fill_regions():
    ms = []
    for size in (4096, 65536, 1 << 20, 64 << 20, 256 << 20):
        for value in (0, 90):
            ms.append(m("vector-loop", size, 50, value=value))
            ms.append(m("rep-stosb", size, 40 if size < 65536 else 60, value=value))
            nt = 30 if size < (64 << 20) else (90 if value == 0 else 61)   # > vector's 50
            ms.append(m("nt-stores", size, nt, value=value))
    got = {c.name: c for c in tune.choose_memset(ms)}
    # against the vector loop memkit would otherwise run (50), not against rep stosb
    assert got["nt_threshold_zero"].value == 64 << 20
    assert got["nt_threshold"].value == 64 << 20
    assert got["rep_stosb_threshold"].value == 65536
    assert "rep stosb" in got["rep_stosb_threshold"].why


def test_memset_never_when_nothing_wins():
    ms = [m(s, size, v, value=val) for size in (4096, 1 << 20, 1 << 28) for val in (0, 7)
          for s, v in (("vector-loop", 50), ("rep-stosb", 51), ("nt-stores", 30))]
    got = {c.name: c.value for c in tune.choose_memset(ms)}
    assert got == {"nt_threshold_zero": None, "nt_threshold": None, "rep_stosb_threshold": None}


def test_memset_nt_threshold_when_it_wins():
    ms = [m(s, size, v, value=1) for size in (1 << 20, 1 << 28)
          for s, v in (("vector-loop", 50), ("rep-stosb", 50), ("nt-stores", 40 if size < 1 << 28 else 80))]
    got = {c.name: c.value for c in tune.choose_memset(ms)}
    assert got["nt_threshold"] == 1 << 28


def test_parallel_choices():
    ms = []
    for size in (1 << 20, 16 << 20, 256 << 20):
        ms.append(m("threads=1", size, 20, metric="copy_throughput"))
        ms.append(m("threads=2", size, 18 if size == 1 << 20 else 32, metric="copy_throughput"))
        ms.append(m("threads=4", size, 17 if size == 1 << 20 else 32.5, metric="copy_throughput"))
    got = {c.name: c.value for c in tune.choose_parallel(ms)}
    assert got["threads"] == 2
    assert got["parallel_threshold"] == 16 << 20


def test_profile_file(tmp_path):
    path = tmp_path / "sub" / "profile"
    tune.write_profile(path, [tune.Choice("nt_threshold", 64 << 20, "because"),
                              tune.Choice("rep_stosb_threshold", None, "never wins")],
                       {"cpu_model": "X", "microcode": "0x1", "vendor": "AuthenticAMD", "family": 26,
                        "model": 2})
    text = path.read_text()
    assert "\ncpu=AuthenticAMD family=26 model=2 microcode=0x1\n" in text
    assert "nt_threshold=67108864\n" in text
    assert "rep_stosb_threshold=never\n" in text
    assert "# because" in text
    assert not (tmp_path / "sub" / "profile.tmp").exists()


def test_default_profile_path():
    assert str(tune.default_profile_path({"MEMKIT_PROFILE": "/x/p"})) == "/x/p"
    assert str(tune.default_profile_path({"XDG_CONFIG_HOME": "/c", "HOME": "/h"})) == "/c/memkit/profile"
    assert str(tune.default_profile_path({"HOME": "/h"})) == "/h/.config/memkit/profile"


# ---- the library reading profiles (real build) ----

def fingerprint(env_extra, tmp_path):
    exe = real_bench_dir() / "memkit-exp-fill-regions"
    env = {k: v for k, v in os.environ.items() if k not in ("MEMKIT_TUNABLES", "MEMKIT_PROFILE")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"), **env_extra)
    p = subprocess.run([str(exe), "--fingerprint"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    fp = json.loads(p.stdout)
    tun = dict(item.split("=", 1) for item in fp["tunables"].split(":"))
    return fp, tun, p.stderr


def test_library_loads_profile(tmp_path):
    prof = tmp_path / "xdg" / "memkit" / "profile"
    prof.parent.mkdir(parents=True)
    prof.write_text("# comment\n\nnt_threshold=12345\n  rep_stosb_threshold = 8192\n".replace(" = ", "="))
    fp, tun, err = fingerprint({}, tmp_path)          # found at the default path
    assert fp["profile"] == str(prof)
    assert tun["nt_threshold"] == "12345" and tun["rep_stosb_threshold"] == "8192"
    assert err == ""
    # MEMKIT_TUNABLES overrides the profile
    fp, tun, _ = fingerprint({"MEMKIT_TUNABLES": "nt_threshold=4096"}, tmp_path)
    assert tun["nt_threshold"] == "4096" and tun["rep_stosb_threshold"] == "8192"
    # MEMKIT_PROFILE=none: no profile
    fp, tun, _ = fingerprint({"MEMKIT_PROFILE": "none"}, tmp_path)
    assert fp["profile"] == "" and tun["nt_threshold"] != "12345"


def test_library_ignores_corrupt_profile(tmp_path):
    prof = tmp_path / "bad"
    prof.write_text("nt_threshold=12345\nthis is not a setting\n")
    fp, tun, err = fingerprint({"MEMKIT_PROFILE": str(prof)}, tmp_path)
    assert fp["profile"] == ""
    assert tun["nt_threshold"] != "12345"              # the good line is ignored too
    assert err.count("\n") == 1 and "corrupt" in err and str(prof) in err


def test_library_reports_missing_named_profile(tmp_path):
    fp, _, err = fingerprint({"MEMKIT_PROFILE": str(tmp_path / "nope")}, tmp_path)
    assert fp["profile"] == "" and "cannot be read" in err and err.count("\n") == 1
    # but a missing profile at the default path is normal and silent
    _, _, err = fingerprint({}, tmp_path)
    assert err == ""


def test_tune_end_to_end_quick(tmp_path, cli):
    bench = real_bench_dir()
    out = tmp_path / "profile"
    p = cli("tune", "--quick", "--build", bench.parent, "--out", out, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "tunable" in p.stdout and "why" in p.stdout
    assert out.exists() and "memkit tune" in out.read_text()
    fp, _, err = fingerprint({"MEMKIT_PROFILE": str(out)}, tmp_path)
    assert fp["profile"] == str(out) and err == ""
