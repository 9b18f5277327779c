# SPDX-License-Identifier: Apache-2.0
"""The SQLite database under hostile conditions: many processes creating it
at once, a read-only file system, hand-edited contents, an empty file."""

import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import cli_env, make_fake_build, run_cli
from memkit import cli
from memkit.store.db import Database
from test_cli import one_line_error
from test_db import result, store

WRITERS = 6
ROUNDS = 5


def _create_and_store(path, barrier, errors):
    try:
        barrier.wait()
        with Database(path, create=True) as d:
            store(d, results=[result(n=3)])
    except BaseException as e:   # reported to the parent, which asserts on them
        errors.put(f"{type(e).__name__}: {e}")


def create_at_once(target, n: int = WRITERS) -> list:
    """n processes open target (creating it) at the same moment and store a
    run each; returns what went wrong."""
    ctx = multiprocessing.get_context("fork")
    barrier, errors = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_create_and_store, args=(target, barrier, errors)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    got = []
    while not errors.empty():
        got.append(errors.get())
    return got + [f"exit status {p.exitcode}" for p in procs if p.exitcode]


def test_many_processes_create_one_database_at_once(tmp_path):
    # Before creation was one locked transaction, about half of these rounds
    # failed with "table fingerprints already exists" or "schema version 0".
    for rnd in range(ROUNDS):
        path = tmp_path / f"r{rnd}.db"
        assert create_at_once(path) == [], f"round {rnd}"
        with Database(path) as d:
            assert len(d.runs()) == WRITERS


def _ro_mount_works(tmp_path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    p = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs t {probe} && mount -o remount,ro {probe}"],
                       capture_output=True)
    return p.returncode == 0


def test_read_only_file_system_is_refused_before_running(tmp_path):
    fake_build = make_fake_build(tmp_path / "b1", ["ok"])
    if not _ro_mount_works(tmp_path):
        pytest.skip("cannot mount a file system here (needs a private mount namespace)")
    with Database(tmp_path / "m.db", create=True) as d:
        store(d)
    ro = tmp_path / "ro"
    ro.mkdir()
    memkit = " ".join([sys.executable, "-m", "memkit", "run", "--build", str(fake_build), "--db", f"{ro}/m.db",
                       "ok"])
    # Inside a private mount namespace: a tmpfs holding the database, made read-only.
    script = (f"mount -t tmpfs t {ro} && cp {tmp_path}/m.db {ro}/ && mount -o remount,ro {ro} && "
              f"{memkit}; rc=$?; echo rc=$rc >&2; exit 0")
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=cli_env(),
                       timeout=120)
    err = [l for l in p.stderr.splitlines() if l.strip()]
    assert err[-1] == "rc=1", p.stderr
    assert err[-2].startswith(f"memkit: error: database {ro}/m.db is read-only"), p.stderr
    assert "== ok" not in p.stdout and "table of ok" not in p.stdout, "an experiment ran"


@pytest.mark.parametrize("edit", [
    "UPDATE measurements SET params = 'size=4096' WHERE id = (SELECT MAX(id) FROM measurements)",
    "UPDATE measurements SET value = 'fast' WHERE id = (SELECT MAX(id) FROM measurements)",
    "UPDATE measurements SET max = x'00ff' WHERE id = (SELECT MAX(id) FROM measurements)",
])
def test_hand_edited_contents_are_a_corrupt_database(tmp_path, capsys, edit):
    db = tmp_path / "m.db"
    with Database(db, create=True) as d:
        store(d)
        store(d)
    con = sqlite3.connect(db)
    con.execute(edit)
    con.commit()
    con.close()
    for cmd in (["compare"], ["report", "--out", str(tmp_path / "rep")]):
        capsys.readouterr()
        assert cli.main([*cmd, "--db", str(db)]) == 1, cmd
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"memkit: error: cannot use database {db}: it is corrupt ("), (cmd, err)
        assert "\n" not in err


def test_report_on_an_empty_file_writes_nothing(tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    for cmd in (["report", "--out", tmp_path / "rep"], ["compare"]):
        line = one_line_error(run_cli(*cmd, "--db", empty))
        assert line == f"memkit: error: {empty} holds no memkit results yet (`memkit run --db {empty}` creates them)"
        assert empty.stat().st_size == 0
    assert not os.path.exists(f"{empty}-journal")
