# SPDX-License-Identifier: Apache-2.0
"""The ipc-copy experiment's processes: small grids that run in seconds.
Messages arrive (the experiment fails on a damaged one), the named copiers
and an MT adapter are measured and stored, and however the run ends (done,
Ctrl-C, either process killed) no process is left and nothing in /dev/shm."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import real_bench_dir, run_cli
from memkit.store.db import Database

TINY = ["min=4K", "max=64K", "slots=2", "only=libc,memkit", "mt=memkit"]
LONG = ["min=1M", "max=16M", "slots=4", "only=libc", "mt=none"]


def experiment() -> Path:
    path = real_bench_dir() / "memkit-exp-ipc-copy"
    if not path.exists():
        pytest.fail(f"{path} was not built")
    return path


def shm_names() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("memkit")}


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def wait_gone(pgid: int, seconds: float = 20) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def default_sigint():
    """Ctrl-C as at a terminal, even where the tests run with SIGINT ignored
    (a background job of a non-interactive shell)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args: list[str], tmp_path: Path) -> subprocess.Popen:
    """The experiment in a process group of its own (its pgid is its pid),
    once both processes are up; the grid lasts seconds, the kill comes at once."""
    p = subprocess.Popen([str(experiment()), "--jsonl", str(tmp_path / "r.jsonl"), *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, preexec_fn=default_sigint)
    for line in p.stderr:
        if line.startswith("progress: ipc-copy 1/"):   # forked, the first size under way
            return p
    pytest.fail(f"the experiment ended early (status {p.wait()})")


@pytest.fixture
def shm_before():
    before = shm_names()
    yield before
    assert shm_names() <= before, "memkit names left in /dev/shm"


@pytest.mark.parametrize("backing", ["memfd", "shm"])
def test_tiny_grid_delivers_every_copier(tmp_path, shm_before, backing):
    out = tmp_path / "r.jsonl"
    p = subprocess.run([str(experiment()), "--quick", "--jsonl", str(out), *TINY,
                        "backing=" + backing], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    records = [json.loads(l) for l in out.read_text().splitlines()]
    ms = [r for r in records if r["type"] == "measurement" and r["metric"] == "gb_per_s"]
    assert {m["series"] for m in ms} == {"libc", "memkit", "mt:memkit"}
    assert {m["params"]["size"] for m in ms} == {4096, 65536}
    for m in ms:
        # Format 2 (bench/lab/lab.h): the per-round samples themselves, and
        # every copier but libc carries its speed-ups over libc.
        assert m["value"] > 0 and m["min"] <= m["value"] <= m["max"] and len(m["samples"]) == 3
        assert all(s > 0 for s in m["samples"])
        if m["series"] == "libc":
            assert not m.get("baseline")
        else:
            assert m["baseline"]["series"] == "libc" and len(m["ratios"]) == 3
    assert any("the ring was on" in r["text"] for r in records if r["type"] == "verdict")
    assert records[-1]["type"] == "end"


def test_ctrl_c_leaves_nothing(tmp_path, shm_before):
    p = start(["backing=shm", *LONG], tmp_path)
    os.killpg(p.pid, signal.SIGINT)
    assert p.wait(timeout=20) == -signal.SIGINT
    assert not wait_gone(p.pid), "a process of the run outlived Ctrl-C"


def test_killed_publisher_takes_its_subscriber(tmp_path, shm_before):
    p = start(LONG, tmp_path)
    p.kill()                                   # the publisher alone
    assert p.wait(timeout=20) == -signal.SIGKILL
    assert not wait_gone(p.pid), "the subscriber outlived its publisher"


def test_killed_subscriber_stops_the_publisher(tmp_path, shm_before):
    p = start(LONG, tmp_path)
    children = [m for m in group_members(p.pid) if m != p.pid]
    assert len(children) == 1
    os.kill(children[0], signal.SIGKILL)
    assert p.wait(timeout=30) != 0             # an error, not a hang
    assert "subscriber" in p.stderr.read()
    assert not wait_gone(p.pid)


def test_memkit_run_quick_names_libc_memkit_and_mt(tmp_path, shm_before):
    build = real_bench_dir().parent
    db = tmp_path / "m.db"
    p = run_cli("run", "--quick", "--build", build, "--db", db, "ipc-copy", timeout=180)
    assert p.returncode == 0, p.stderr
    assert "ipc-copy: ok" in p.stdout and "libc" in p.stdout and "mt:memkit" in p.stdout
    with Database(db) as d:
        (run,) = d.runs()
        series = {m["series"] for m in d.measurements(run["id"], "ipc-copy")}
        assert {"libc", "memkit", "mt:memkit"} <= series
        assert any("512 KiB..2 MiB" in v for v in d.verdicts(run["id"]))
