# SPDX-License-Identifier: Apache-2.0
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
from memkit.errors import MemkitError
from memkit.store import schema
from memkit.results.result import Result
from memkit.store import db as dbmod
from memkit.store.db import Database


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
    # The documented schema (memkit.store.schema's) names every table and column.
    for t, names in cols.items():
        assert t in schema.__doc__
        for n in names - {"id", "run_id", "seq", "name", "digest"}:
            assert n in schema.__doc__, (t, n)


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
from memkit.store.db import Database
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


def v2_record(series="memkit", size=4096, base=10.0):
    return {"type": "measurement", "experiment": "memset-sizes", "series": series, "params": {"size": size},
            "axis": {"name": "size", "unit": "B"}, "metric": "ns_per_call", "unit": "ns", "better": "lower",
            "stat": "median", "value": base, "min": base - 1, "median": base, "max": base + 1,
            "samples": [base - 1, base, base + 1], "process_samples": [base, base * 1.1],
            "baseline": {"series": "glibc", "params": {"size": size}},
            "ratios": [1.2, 1.3, 1.25], "ratio": 1.25, "ratio_min": 1.2, "ratio_max": 1.3}


def test_format_2_records_round_trip(tmp_path):
    from memkit.lab.experiments import parse_jsonl
    lines = [json.dumps(dict(FINGERPRINT, type="fingerprint", format=2)), json.dumps(v2_record()),
             json.dumps({"type": "verdict", "experiment": "memset-sizes", "kind": "loss", "text": "memkit lost"}),
             json.dumps({"type": "verdict", "experiment": "memset-sizes", "text": "plain"}),
             json.dumps({"type": "end"})]
    fp, ms, vs, ended = parse_jsonl("\n".join(lines))
    assert ended and "format" not in fp and fp == FINGERPRINT
    r = Result("memset-sizes", "seed", "desc", "ok", 1.0, [], fp, ms, vs, "", "")
    with Database(tmp_path / "m.db", create=True) as d:
        run = store(d, results=[r], fp=fp)
        (m,) = d.measurements(run)
        assert m["format"] == 2 and m["samples"] == 3 and m["sample_values"] == [9.0, 10.0, 11.0]
        assert m["process_samples"] == [10.0, 11.0] and m["ratios"] == [1.2, 1.3, 1.25]
        assert m["axis"] == {"name": "size", "unit": "B"} and m["better"] == "lower"
        assert m["baseline"] == {"series": "glibc", "params": {"size": 4096}}
        assert m["ratio_to"] == "glibc" and m["contract"] is None
        assert d.verdict_records(run) == [{"experiment": "memset-sizes", "text": "memkit lost", "kind": "loss"},
                                          {"experiment": "memset-sizes", "text": "plain", "kind": None}]


def test_a_methods_contract_is_stored(tmp_path):
    from memkit.lab.experiments import parse_jsonl
    restricted = dict(v2_record(), series="avx_aligned", contract="buffers aligned to 32 B, sizes a multiple of it")
    lines = [json.dumps(dict(FINGERPRINT, type="fingerprint", format=2)), json.dumps(v2_record()),
             json.dumps(restricted), json.dumps({"type": "end"})]
    fp, ms, vs, _ = parse_jsonl("\n".join(lines))
    r = Result("copy-sweep", "seed", "desc", "ok", 1.0, [], fp, ms, vs, "", "")
    with Database(tmp_path / "m.db", create=True) as d:
        run = store(d, results=[r], fp=fp)
        got = {m["series"]: m["contract"] for m in d.measurements(run)}
    assert got == {"memkit": None, "avx_aligned": "buffers aligned to 32 B, sizes a multiple of it"}


def test_baseline_is_named_by_what_differs():
    from memkit.results.records import baseline_text
    own = {"series": "vector-loop", "params": {"size": 4096, "value": 0}}
    assert baseline_text({"series": "vector-loop", "params": {"size": 4096, "value": 90}}, own) == "value=90"
    assert baseline_text({"series": "glibc", "params": {"size": 4096, "value": 0}}, own) == "glibc"
    assert baseline_text({"series": "glibc", "params": {"size": 64}}) == "glibc size=64"


def test_old_format_records_have_no_speedup():
    from memkit.results import records
    old = records.measurement({"series": "a", "params": {}, "metric": "ns_per_call", "unit": "ns",
                               "value": 2.0, "samples": 5, "ratio_to": "glibc", "ratio": 0.8})
    assert old["format"] == 1 and old["samples"] == 5 and old["sample_values"] is None
    assert records.speedup(old) is None and records.better_direction(old) == "lower"
    new = records.measurement(v2_record(), 2)
    assert records.speedup(new) == 1.25
    # The record's own direction wins over what its unit suggests.
    assert records.better_direction(dict(new, unit="GB/s", better="lower")) == "lower"


V1_SCHEMA_ROWS = [
    "INSERT INTO fingerprints (id, digest, json) VALUES (1, 'd', '{}')",
    "INSERT INTO runs (id, started_at, finished_at, quick, fingerprint_id) VALUES (1, 't0', 't1', 1, 1)",
    "INSERT INTO experiments (run_id, name, status) VALUES (1, 'old', 'ok')",
    "INSERT INTO measurements (run_id, experiment, series, params, metric, unit, value, samples, ratio_to, ratio)"
    " VALUES (1, 'old', 's', '{\"size\":64}', 'ns_per_call', 'ns', 3.5, 7, 'glibc', 0.9)",
    "INSERT INTO verdicts (run_id, experiment, seq, text) VALUES (1, 'old', 0, 'an old verdict')",
]


def test_version_1_database_is_migrated(tmp_path):
    path = tmp_path / "v1.db"
    c = sqlite3.connect(path)
    c.executescript(dbmod.SCHEMA + ";".join(V1_SCHEMA_ROWS) + "; PRAGMA user_version = 1;")
    c.commit()
    c.close()
    with Database(path) as d:   # a read-only command's open migrates too
        assert d.conn.execute("PRAGMA user_version").fetchone()[0] == dbmod.SCHEMA_VERSION == 7
        (m,) = d.measurements(1)
        assert (m["value"], m["samples"], m["ratio"], m["format"]) == (3.5, 7, 0.9, 1)
        assert m["sample_values"] is None and m["baseline"] is None and m["axis"] is None
        assert m["contract"] is None and m["tuned"] is None
        assert d.verdict_records(1) == [{"experiment": "old", "text": "an old verdict", "kind": None}]
        new = store(d)
        assert [r["id"] for r in d.runs()] == [1, new]
        assert d.run(1)["incomplete"] is None   # runs of before version 6 had finished
    # The migrated database has exactly a new database's columns.
    with Database(tmp_path / "new.db", create=True) as fresh, Database(path) as old:
        for t in dbmod.TABLES:
            cols = lambda db: [r[1] for r in db.conn.execute(f"PRAGMA table_info({t})")]
            assert cols(fresh) == cols(old), t


def test_newer_database_is_refused(tmp_path):
    path = tmp_path / "m.db"
    with Database(path, create=True) as d:
        d.conn.execute("PRAGMA user_version = 99")
    with pytest.raises(MemkitError, match="newer than this memkit"):
        Database(path)
