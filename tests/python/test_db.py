"""The results database: schema, round trip, errors, and a killed writer."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import FINGERPRINT, REPO
from memkit import db as dbmod
from memkit.db import Database
from memkit.errors import MemkitError
from memkit.lab import Result


def result(name="exp", n=4, verdicts=("v1", "v2"), status="ok"):
    ms = [{"series": "s", "params": {"size": 1024 << i, "value": 0}, "metric": "fill_throughput",
           "unit": "GB/s", "stat": "median", "value": 1.0 + i, "min": 0.9 + i, "median": 1.0 + i,
           "max": 1.1 + i, "samples": 7, "ratio_to": "s value=90", "ratio": 2.0, "ratio_min": 1.5,
           "ratio_max": 2.5} for i in range(n)]
    return Result(name, "seed", "desc", status, 1.5, ["max=1M"], dict(FINGERPRINT), ms, list(verdicts),
                  "table\n", "" if status == "ok" else "it broke")


def store(d, fp=None, results=None, quick=False):
    return d.store_run(started_at="2024-01-01T00:00:00+00:00", finished_at="2024-01-01T00:01:00+00:00",
                       quick=quick, fingerprint=fp or dict(FINGERPRINT), results=results or [result()])


def test_schema_tables_columns_and_version(tmp_path):
    with Database(tmp_path / "m.db", create=True) as d:
        c = d.conn
        assert c.execute("PRAGMA user_version").fetchone()[0] == dbmod.SCHEMA_VERSION
        cols = {t: {r[1] for r in c.execute(f"PRAGMA table_info({t})")} for t in dbmod.TABLES}
    assert {"microcode", "kernel", "glibc", "tunables", "profile", "json"} <= cols["fingerprints"]
    assert {"started_at", "quick", "fingerprint_id", "profile"} <= cols["runs"]
    assert {"value", "unit", "min", "median", "max", "samples", "ratio", "ratio_min", "ratio_max",
            "params", "stat"} <= cols["measurements"]
    assert {"status", "seconds", "error", "output"} <= cols["experiments"]
    assert {"text"} <= cols["verdicts"]
    # The documented schema names every table and column.
    for t, names in cols.items():
        assert t in dbmod.__doc__
        for n in names - {"id", "run_id", "seq", "name", "digest"}:
            assert n in dbmod.__doc__, (t, n)


def test_round_trip(tmp_path):
    path = tmp_path / "m.db"
    with Database(path, create=True) as d:
        r1 = store(d, results=[result("a"), result("b", n=2, verdicts=["only"])])
        prof = dict(FINGERPRINT, profile="/etc/memkit/profile")
        r2 = store(d, fp=prof, results=[result("a", status="crashed")], quick=True)
    with Database(path) as d:
        runs = d.runs()
        assert [r["id"] for r in runs] == [r1, r2]
        assert runs[0]["fingerprint"] == FINGERPRINT
        assert runs[1]["profile"] == "/etc/memkit/profile" and runs[1]["quick"] == 1
        ms = d.measurements(r1, "a")
        assert len(ms) == 4 and len(d.measurements(r1)) == 6
        assert ms[2]["params"] == {"size": 4096, "value": 0}
        assert (ms[2]["value"], ms[2]["min"], ms[2]["max"], ms[2]["samples"]) == (3.0, 2.9, 3.1, 7)
        assert (ms[2]["ratio"], ms[2]["ratio_to"], ms[2]["unit"]) == (2.0, "s value=90", "GB/s")
        assert d.verdicts(r1, "b") == ["only"]
        assert d.verdicts(r1) == ["v1", "v2", "only"]
        ex = d.run(r2)["experiments"]
        assert ex[0]["status"] == "crashed" and ex[0]["error"] == "it broke"
        assert json.loads(ex[0]["args"]) == ["max=1M"]


def test_same_fingerprint_stored_once(tmp_path):
    with Database(tmp_path / "m.db", create=True) as d:
        store(d)
        store(d)
        store(d, fp=dict(FINGERPRINT, microcode="0xa1"))
        assert d.conn.execute("SELECT COUNT(*) FROM fingerprints").fetchone()[0] == 2


def test_failed_store_leaves_nothing(tmp_path):
    bad = result()
    bad.measurements.append({"series": None, "params": {}, "metric": "m"})   # NOT NULL violated
    with Database(tmp_path / "m.db", create=True) as d:
        store(d)
        with pytest.raises(MemkitError, match="NOT NULL constraint failed"):
            store(d, results=[result("x"), bad])
        assert len(d.runs()) == 1
        assert d.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 4


def test_missing_corrupt_and_foreign_databases(tmp_path):
    with pytest.raises(MemkitError, match="no database"):
        Database(tmp_path / "missing.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(MemkitError, match="junk.db"):
        Database(junk)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(MemkitError, match="not a memkit results database"):
        Database(other, create=True)


def test_truncated_database_is_an_error(tmp_path):
    path = tmp_path / "m.db"
    with Database(path, create=True) as d:
        for _ in range(20):
            store(d, results=[result(n=200)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(MemkitError):
        with Database(path) as d:
            d.measurements(20)


# The writer is stopped for good inside its transaction, after some rows.
KILLED_WRITER = r'''
import sys, time
sys.path.insert(0, sys.argv[2])
sys.path.insert(0, sys.argv[3])
from memkit.db import Database
from test_db import result, store
class Stalling(list):
    def __iter__(self):
        for i, m in enumerate(list.__iter__(self)):
            if i == 500:
                print("inside", flush=True)
                time.sleep(600)
            yield m
d = Database(sys.argv[1], create=True)
big = result("big", n=1000)
big.measurements = Stalling(big.measurements)
store(d, results=[result("first"), big])
'''


def kill_writer_inside(target):
    """Starts a writer on target and kills it (SIGKILL) inside its transaction."""
    p = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target), str(REPO / "python"),
                          str(REPO / "tests" / "python")], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "inside"
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    assert p.returncode == -signal.SIGKILL


def test_writer_killed_mid_transaction_leaves_earlier_runs(tmp_path):
    path = tmp_path / "m.db"
    with Database(path, create=True) as d:
        earlier = store(d, results=[result("earlier", n=10)])
    kill_writer_inside(path)
    with Database(path, create=True) as d:
        assert [r["id"] for r in d.runs()] == [earlier]
        assert len(d.measurements(earlier)) == 10
        assert d.conn.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == 10
        assert d.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        later = store(d)   # and it is still writable
        assert [r["id"] for r in d.runs()] == [earlier, later]
