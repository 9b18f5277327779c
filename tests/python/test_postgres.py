# SPDX-License-Identifier: Apache-2.0
"""The results database on a PostgreSQL server (started by the tests, see
pgserver.py): the same behaviour as the SQLite file, several machines
writing at once, killed writers, migrations, and the connection errors."""

import os
import signal
import subprocess
import sys

import pytest

from conftest import REPO, cli_env, make_fake_build, run_cli
from memkit import cli
from memkit.errors import MemkitError
from memkit.store import db as dbmod
from memkit.store.backends import open_backend
from memkit.store.db import Database
from pgserver import _free_port
from test_cli import one_line_error, wait_for_line
from test_db import V1_SCHEMA_ROWS, kill_writer_inside, result, store
from test_db_safety import WRITERS, create_at_once


@pytest.fixture
def one_build(tmp_path):
    """A build with the experiments these tests run (each is asked --describe first)."""
    return make_fake_build(tmp_path / "b1", ["ok", "slow"])


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "m.db")
    return request.getfixturevalue("pg_url")


def test_round_trip_on_both(target):
    fp2 = dict(result().fingerprint, microcode="0xa1")
    with Database(target, create=True) as d:
        r1 = store(d, results=[result("b", n=3), result("a", n=2, verdicts=["only"])])
        r2 = d.store_run(started_at="s", finished_at="f", quick=True, fingerprint=fp2,
                         results=[result("a", status="crashed")], hostname="beta", command="memkit run")
        store(d)
    with Database(target) as d:
        runs = d.runs()
        assert [r["id"] for r in runs] == [r1, r2, r2 + 1]
        assert runs[1]["fingerprint"]["microcode"] == "0xa1" and runs[1]["hostname"] == "beta"
        assert runs[1]["quick"] == 1 and runs[0]["quick"] == 0
        assert [r["id"] for r in d.runs(host="beta")] == [r2]
        assert [e["name"] for e in d.experiments(r1)] == ["b", "a"]      # the order they ran in
        ms = d.measurements(r1, "b")
        assert [m["params"] for m in ms] == [{"size": 1024 << i, "value": 0} for i in range(3)]
        assert (ms[2]["value"], ms[2]["min"], ms[2]["max"], ms[2]["samples"]) == (3.0, 2.9, 3.1, 7)
        assert isinstance(ms[2]["value"], float) and ms[2]["ratio_to"] == "s value=90"
        assert d.verdicts(r1) == ["only", "v1", "v2"]
        assert d.run(r2)["experiments"][0]["status"] == "crashed"
        n_fp = d.backend.execute("SELECT COUNT(*) AS n FROM fingerprints").fetchone()["n"]
        assert n_fp == 2   # the same fingerprint is stored once


def test_failed_store_leaves_nothing_on_both(target):
    bad = result()
    bad.measurements.append({"series": None, "params": {}, "metric": "m"})   # NOT NULL violated
    with Database(target, create=True) as d:
        store(d)
        with pytest.raises(MemkitError, match="(?i)cannot store the run in database .*null"):
            store(d, results=[result("x"), bad])
        assert len(d.runs()) == 1
        assert d.backend.execute("SELECT COUNT(*) AS n FROM measurements").fetchone()["n"] == 4
        store(d)   # the connection is still usable
        assert len(d.runs()) == 2


def test_older_schema_is_migrated_by_reader_and_writer(target, monkeypatch):
    with Database(target, create=True) as d:
        store(d)
    new = dbmod.SCHEMA_VERSION + 1
    monkeypatch.setattr(dbmod, "SCHEMA_VERSION", new)
    monkeypatch.setattr(dbmod, "MIGRATIONS", {**dbmod.MIGRATIONS, new: [
        "ALTER TABLE runs ADD COLUMN note TEXT", "ALTER TABLE measurements ADD COLUMN spread REAL"]})
    with Database(target) as d:   # a reader: migrates, keeps the run
        assert d.backend.schema_version() == new
        (run,) = d.runs()
        assert "note" in run and run["note"] is None
        d.backend.execute("BEGIN")
        d.backend.execute("UPDATE measurements SET spread = 0.125")
        d.backend.execute("COMMIT")
        assert d.measurements(run["id"])[0]["spread"] == 0.125   # a double, not a 4-byte float
    with Database(target, create=True) as d:   # already there: nothing applied twice
        assert d.backend.schema_version() == new and len(d.runs()) == 1
    monkeypatch.setattr(dbmod, "SCHEMA_VERSION", new - 1)
    with pytest.raises(MemkitError, match=f"has schema version {new}, newer than this memkit's {new - 1}"):
        Database(target)


def test_version_1_database_is_migrated_on_both(target):
    b = open_backend(target, create=True)
    b.begin(write=True)
    for stmt in dbmod.SCHEMA.split(";"):
        if stmt.strip():
            b.execute(b.ddl(stmt))
    for row in V1_SCHEMA_ROWS:
        b.execute(row)
    b.set_schema_version(1)
    b.execute("COMMIT")
    b.close()
    with Database(target) as d:
        assert d.backend.schema_version() == dbmod.SCHEMA_VERSION
        (m,) = d.measurements(1)
        assert (m["value"], m["samples"], m["ratio"], m["format"]) == (3.5, 7, 0.9, 1)
        assert d.verdict_records(1) == [{"experiment": "old", "text": "an old verdict", "kind": None}]


def test_machines_creating_the_schema_at_once(pg_server):
    for _ in range(2):
        url = pg_server.new_database()
        assert create_at_once(url) == []
        with Database(url) as d:
            assert len(d.runs()) == WRITERS
            assert d.backend.execute("SELECT COUNT(*) AS n FROM fingerprints").fetchone()["n"] == 1


def test_two_hosts_run_at_once_through_the_cli(one_build, pg_url):
    procs = [subprocess.Popen([sys.executable, "-m", "memkit", "run", "--quick", "--build", str(one_build),
                               "--db", pg_url, "ok"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=cli_env(MEMKIT_HOST=host))
             for host in ("alpha", "beta")]
    procs.append(subprocess.Popen([sys.executable, "-m", "memkit", "run", "--quick", "--host", "gamma",
                                   "--build", str(one_build), "ok"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=cli_env(MEMKIT_DB=pg_url)))
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "(stored in postgresql://memkit@127.0.0.1:" in out
    with Database(pg_url) as d:
        runs = d.runs()
        assert sorted(r["hostname"] for r in runs) == ["alpha", "beta", "gamma"]
        for r in runs:
            assert len(d.measurements(r["id"])) == 8


def test_killed_writer_leaves_nothing(pg_url):
    with Database(pg_url, create=True) as d:
        earlier = store(d, results=[result("earlier", n=10)])
    kill_writer_inside(pg_url)
    with Database(pg_url, create=True) as d:
        assert [r["id"] for r in d.runs()] == [earlier]
        assert d.backend.execute("SELECT COUNT(*) AS n FROM measurements").fetchone()["n"] == 10
        assert d.backend.execute("SELECT COUNT(*) AS n FROM experiments").fetchone()["n"] == 1
        later = store(d)
        assert [r["id"] for r in d.runs()] == [earlier, later]


def test_killed_run_keeps_what_finished(one_build, pg_url):
    with Database(pg_url, create=True) as d:
        store(d)
    p = subprocess.Popen([sys.executable, "-m", "memkit", "run", "--build", str(one_build), "--db", pg_url,
                          "ok", "slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=cli_env(MEMKIT_HOST="doomed"), start_new_session=True)
    wait_for_line(p, "slow: 0/4")
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    with Database(pg_url) as d:
        # "ok" had finished: kept, its run marked incomplete; "slow" had not
        assert [(r["hostname"], r["incomplete"]) for r in d.runs()] == [("", None), ("doomed", dbmod.UNFINISHED)]
        doomed = d.runs()[1]["id"]
        assert [e["name"] for e in d.experiments(doomed)] == ["ok"]


def test_connection_errors_are_one_line(pg_server, one_build, capsys):
    port = pg_server.port
    free = _free_port()
    cases = [
        (f"postgresql://memkit@127.0.0.1:{port}/nosuchdb",
         f"memkit: error: cannot connect to postgresql://memkit@127.0.0.1:{port}/nosuchdb: the server has no "
         f'database "nosuchdb" (create it: createdb nosuchdb)'),
        (f"postgresql://memkit@127.0.0.1:{free}/memkit",
         f"memkit: error: cannot connect to postgresql://memkit@127.0.0.1:{free}/memkit: connection refused "
         "(is the server running, on that host and port?)"),
        ("postgresql://memkit@127.0.0.1:port/memkit",
         "memkit: error: invalid database URL postgresql://memkit@127.0.0.1:port/memkit: "),
        ("postgresql://memkit:secret@127.0.0.1:port/memkit",
         "memkit: error: invalid database URL postgresql://memkit:***@127.0.0.1"),
        ("mysql://memkit@127.0.0.1/memkit",
         "memkit: error: unsupported database URL mysql://memkit@127.0.0.1/memkit: use a file path or "
         "postgresql://USER@HOST:PORT/DB"),
    ]
    for url, start in cases:
        # run says so before running anything.
        assert cli.main(["run", "--build", str(one_build), "--db", url, "ok"]) == 1
        out, err = capsys.readouterr()
        assert err.startswith(start) and err.count("\n") == 1 and "table of ok" not in out, (url, err)
        assert "secret" not in err
    # The same from a separate process, through $MEMKIT_DB, for a reader.
    line = one_line_error(run_cli("fleet", env=cli_env(MEMKIT_DB=cases[0][0])))
    assert line == cases[0][1]
    # An existing database without memkit's tables: readers say so and create nothing.
    empty = pg_server.new_database()
    line = one_line_error(run_cli("compare", "--db", empty))
    assert line == f"memkit: error: {empty} holds no memkit results yet (`memkit run --db {empty}` creates them)"
    with pytest.raises(MemkitError, match="holds no memkit results"):
        Database(empty)


# An experiment that ends every memkit connection to the server, as a
# server restart would, then finishes normally.
CUTTER = '''#!{python}
import json, os, sys
import psycopg
args = sys.argv[1:]
if "--describe" in args:
    print(json.dumps({{"name": "cutter", "seed": "s", "description": "drops memkit's connection"}})); sys.exit(0)
if "--fingerprint" in args or "--check-args" in args:
    sys.exit(0)
with psycopg.connect(os.environ["CUT_URL"], autocommit=True) as c:
    c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'memkit'")
with open(args[args.index("--jsonl") + 1], "w") as out:
    out.write(json.dumps({{"type": "end", "experiment": "cutter", "seconds": 0.1}}) + "\\n")
'''


def test_a_lost_connection_spills_the_run_and_import_brings_it_back(one_build, pg_url, tmp_path):
    cutter = one_build / "bench" / "memkit-exp-cutter"
    cutter.write_text(CUTTER.format(python=sys.executable))
    cutter.chmod(0o755)
    # outside a checkout: the spill file goes to the (tests') data directory
    p = run_cli("run", "--build", one_build, "--db", pg_url, "ok", "cutter", env=cli_env(CUT_URL=pg_url),
                cwd=tmp_path)
    line = one_line_error(p)
    assert "lost the connection" in line and "`memkit import " in line, line
    spilled = line.split("are kept in ", 1)[1].split(":", 1)[0]
    p = run_cli("import", spilled, "--db", pg_url)
    assert p.returncode == 0, p.stderr
    with Database(pg_url) as d:
        (run,) = d.runs()   # the part stored before the cut, replaced by the whole run
        assert run["incomplete"] is None
        assert [e["name"] for e in d.experiments(run["id"])] == ["ok", "cutter"]
        assert len(d.measurement_keys(run["id"])) == 8   # what compare's choice of runs reads
    # imported again: refused, the run stored once
    line = one_line_error(run_cli("import", spilled, "--db", pg_url))
    assert line.startswith(f"memkit: error: {spilled} is stored already: run {run['id']} in "), line
    with Database(pg_url) as d:
        assert len(d.runs()) == 1
    os.unlink(spilled)
