# SPDX-License-Identifier: Apache-2.0
"""The default suite's time is bounded on any machine: copy-read's grid, the
one that scales with the L3, stays within its bound however large the L3
($MEMKIT_LAB_L3 stands in for it); `memkit run` states its estimate first,
derived from this host's earlier runs, else the reference machine's times
scaled by the grid.  No assertion on how long anything takes."""

import json
import os
import sqlite3
import subprocess

import pytest

from conftest import FINGERPRINT, make_fake_build, real_bench_dir, run_cli
from memkit.lab import estimate
from memkit.lab.experiments import Experiment

MiB = 1 << 20
CAP = 512 * MiB


def describe_copy_read(l3: str) -> dict:
    exe = real_bench_dir() / "memkit-exp-copy-read"
    out = subprocess.run([exe, "--describe"], capture_output=True, text=True, check=True,
                         env=dict(os.environ, MEMKIT_LAB_L3=l3)).stdout
    return json.loads(out)


@pytest.mark.parametrize("l3", [1 * MiB, 32 * MiB, 100 * MiB, 260 * MiB, 1024 * MiB])
def test_copy_read_stops_at_512_mib_but_beyond_the_l3(l3):
    d = describe_copy_read(str(l3))
    largest = d["grid"]["largest"]
    assert largest == max(min(4 * l3, CAP), 2 * l3)
    assert largest > l3                          # what it is for: beyond the L3
    assert "512 MiB" in d["description"] and any("512 MiB" in a["help"] for a in d["args"] if a["key"] == "max")


def test_copy_read_work_on_a_huge_l3_is_bounded():
    """The Xeon's 260 MiB L3 took 4x = 1 GiB and 13 minutes; the grid's work
    there is now within 2.5x a 32 MiB L3's; from a 128 MiB L3 on, the cap."""
    small = describe_copy_read(str(32 * MiB))["grid"]["work"]
    xeon = describe_copy_read(str(260 * MiB))["grid"]["work"]
    assert xeon <= 2.5 * small
    assert describe_copy_read(str(128 * MiB))["grid"]["largest"] == CAP


def test_copy_read_runs_the_grid_it_describes(tmp_path):
    """The run takes the same largest size --describe states (one rule)."""
    exe = real_bench_dir() / "memkit-exp-copy-read"
    env = dict(os.environ, MEMKIT_LAB_L3="1M")
    largest = describe_copy_read("1M")["grid"]["largest"]
    jsonl = tmp_path / "o.jsonl"
    subprocess.run([exe, "--jsonl", jsonl, "min=1M", "per_octave=1", "rounds=1", "processes=1",
                    "then=none"], capture_output=True, text=True, check=True, env=env)
    sizes = {json.loads(l)["params"]["size"] for l in jsonl.read_text().splitlines()
             if json.loads(l).get("type") == "measurement"}
    assert max(sizes) == largest == 4 * MiB


def exp(name, grid=None):
    return Experiment(name, "", "", None, grid)


def test_the_estimate_falls_back_to_the_reference_scaled_by_the_grid():
    fp = dict(FINGERPRINT, cache=dict(FINGERPRINT["cache"], l3=260 * MiB))
    grid = {"largest": 520 * MiB, "work": 2 * estimate.REFERENCE_WORK["copy-read"]}
    e = estimate.estimate([exp("memset-sizes"), exp("copy-read", grid), exp("new-one")], False, {}, fp, [])
    want = (estimate.REFERENCE_SECONDS["memset-sizes"] + 2 * estimate.REFERENCE_SECONDS["copy-read"]
            + estimate.UNKNOWN_SECONDS)
    assert e.seconds == pytest.approx(want)
    line = e.line()
    assert line.startswith(f"the suite: about {want:.0f} seconds on this machine (from the reference machine")
    assert estimate.REFERENCE_MACHINE in line and "copy-read: sizes to 520 MiB here" in line
    assert "new-one" in line


def test_the_estimate_takes_this_hosts_earlier_runs_of_the_same_grid():
    h = lambda s, **kw: dict(dict(name="ok", seconds=s, args=[], quick=False, l3=32 * MiB), **kw)
    earlier = [h(100), h(300), h(200), h(1000),                  # newest first: the last three's median
               h(5, quick=True), h(7, args=["max=1M"]), h(9, l3=260 * MiB)]
    e = estimate.estimate([exp("ok")], False, {}, FINGERPRINT, earlier)
    assert e.seconds == 200 and e.guesses["ok"].source == "history"
    assert estimate.estimate([exp("ok")], True, {}, FINGERPRINT, earlier).seconds == 5
    assert estimate.estimate([exp("ok")], False, {"ok": ["max=1M"]}, FINGERPRINT, earlier).seconds == 7
    # another L3: another grid; the history does not hold
    fp = dict(FINGERPRINT, cache=dict(FINGERPRINT["cache"], l3=260 * MiB))
    assert estimate.estimate([exp("ok")], False, {}, fp, earlier[:4]).guesses["ok"].source == "unknown"


def test_memkit_run_states_its_estimate_first(tmp_path):
    build = make_fake_build(tmp_path / "build", ["ok", "zeta"])
    db = tmp_path / "m.db"
    first = run_cli("run", "--build", build, "--db", db, "--host", "h")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0].startswith("the suite: about ")
    # what the earlier run took is what the next one expects: 10 + 5 minutes
    with sqlite3.connect(db) as c:
        c.execute("UPDATE experiments SET seconds = CASE name WHEN 'ok' THEN 600 ELSE 300 END")
    again = run_cli("run", "--build", build, "--db", db, "--host", "h")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == ("the suite: about 15 minutes on this machine "
                                            "(from this host's earlier runs for 2 experiments)")
    # another host has no history here
    other = run_cli("run", "--build", build, "--db", db, "--host", "other", "ok")
    assert other.stdout.splitlines()[0].startswith("this run: about 30 seconds on this machine (from 30 s")
