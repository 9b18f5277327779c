# SPDX-License-Identifier: Apache-2.0
"""Nothing measured is lost: an interrupted or terminated `memkit run` keeps
the experiments that finished (marked incomplete, as `memkit runs` shows);
a run the database will not take (locked beyond the busy timeout) is
spilled to a file that `memkit import` stores."""

import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import FINGERPRINT, cli_env, make_fake_build, run_cli
from memkit.results.result import Result
from memkit.store import spill
from memkit.store.db import Database
from test_cli import one_line_error, wait_for_line

# An experiment that finishes normally but leaves a process holding the
# database ($LOCK_DB) locked for a few seconds: the run cannot store it.
LOCKER = '''#!{python}
import json, os, sqlite3, subprocess, sys, time
args = sys.argv[1:]
if "--describe" in args:
    print(json.dumps({{"name": "locker", "seed": "s", "description": "locks the database"}})); sys.exit(0)
if "--fingerprint" in args:
    print(json.dumps(dict({fp}, type="fingerprint"))); sys.exit(0)
if "--check-args" in args:
    sys.exit(0)
holder = subprocess.Popen([sys.executable, "-c", """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
""", os.environ["LOCK_DB"], os.environ.get("LOCK_SECONDS", "4")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    start_new_session=True)
assert holder.stdout.readline().strip() == "locked"
with open(args[args.index("--jsonl") + 1], "w") as out:
    out.write(json.dumps({{"type": "measurement", "experiment": "locker", "series": "a", "params": {{"size": 1}},
                           "metric": "fill_throughput", "unit": "GB/s", "stat": "median", "value": 1.0,
                           "samples": 1}}) + "\\n")
    out.write(json.dumps({{"type": "end", "experiment": "locker", "seconds": 0.1}}) + "\\n")
'''


def start_run(build, db, *names):
    # SIG_DFL: started from a background job, SIGINT would arrive ignored.
    return subprocess.Popen([sys.executable, "-m", "memkit", "run", "--build", str(build), "--db", str(db), *names],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_keeps_what_finished(fake_build, tmp_path, sig, status):
    db = tmp_path / "m.db"
    p = start_run(fake_build, db, "ok", "slow")
    wait_for_line(p, "slow: 0/4")
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == status and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == ("memkit: interrupted; run 1 keeps the 1 of 2 experiments that "
                                            "finished, marked incomplete (`memkit runs` shows it)")
    with Database(db) as d:
        (run,) = d.runs()
        assert run["incomplete"] == "interrupted after 1 of 2 experiments"
        assert [e["name"] for e in d.experiments(1)] == ["ok"] and len(d.measurements(1)) == 8
    shown = run_cli("runs", "--db", db)
    assert shown.returncode == 0 and "incomplete: interrupted after 1 of 2 experiments" in shown.stdout
    # the run of an uninterrupted run is not marked
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    with Database(db) as d:
        assert [r["incomplete"] for r in d.runs()] == ["interrupted after 1 of 2 experiments", None]


def test_a_run_the_database_will_not_take_is_spilled_and_imported(tmp_path):
    build = make_fake_build(tmp_path / "build", ["ok"])
    locker = build / "bench" / "memkit-exp-locker"
    locker.write_text(LOCKER.format(python=sys.executable, fp=repr(FINGERPRINT)))
    locker.chmod(0o755)
    db = tmp_path / "m.db"
    env = cli_env(LOCK_DB=str(db), MEMKIT_DB_TIMEOUT="0.5", LOCK_SECONDS="4")
    p = run_cli("run", "--build", build, "--db", db, "ok", "locker", env=env)
    line = one_line_error(p)
    m = re.search(r"the run's 2 experiment\(s\) are kept in (\S+): `memkit import \1` stores them", line)
    assert m and "database is locked" in line, line
    spilled = m.group(1)
    assert spilled.startswith(str(tmp_path)) and open(spilled).read().startswith('{"memkit_spill": 1')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:   # the lock holder ends
        try:
            with Database(db) as d:
                partial = d.runs()
            break
        except Exception:
            time.sleep(0.2)
    # "ok" was stored before the lock: that part of the run is there, incomplete
    assert [r["incomplete"] for r in partial] == ["stopped before it ended (killed, or still running)"]
    p = run_cli("import", spilled, "--db", db)
    assert p.returncode == 0, p.stderr
    with Database(db) as d:
        (run,) = d.runs()   # the partial run replaced by the whole one
        assert run["incomplete"] is None
        assert [e["name"] for e in d.experiments(run["id"])] == ["ok", "locker"]
        assert len(d.measurements(run["id"])) == 9 and run["fingerprint"]["cpu_model"] == "Test CPU"
    assert p.stdout.startswith(f"stored {spilled} as run {run['id']} in {db} (2 experiment(s))")


def test_import_takes_only_a_spill_file(tmp_path):
    mine = tmp_path / "notes.json"
    mine.write_text('{"mine": 1}\n')
    line = one_line_error(run_cli("import", mine, "--db", tmp_path / "m.db"))
    assert line.startswith(f"memkit: error: cannot import {mine}: not a run memkit spilled to a file"), line
    line = one_line_error(run_cli("import", tmp_path / "nope.json", "--db", tmp_path / "m.db"))
    assert line == f"memkit: error: cannot import {tmp_path / 'nope.json'}: no such file"


def test_a_spill_file_imported_twice_is_stored_once(tmp_path):
    db = tmp_path / "m.db"
    m = {"experiment": "ok", "series": "a", "params": {"size": 1}, "metric": "fill_throughput", "unit": "GB/s",
         "stat": "median", "value": 1.0, "samples": 1}
    run = dict(started_at="2026-11-28T10:00:00+00:00", finished_at="2026-11-28T10:00:05+00:00", quick=False,
               hostname="box", command="memkit run ok", load=None, incomplete=None)
    spilled = spill.write_spill(str(db), run, FINGERPRINT, [Result("ok", "s", "fake ok", "ok", 0.1, measurements=[m])],
                                None)
    first = run_cli("import", spilled, "--db", db)
    assert first.returncode == 0, first.stderr
    line = one_line_error(run_cli("import", spilled, "--db", db))
    assert line == (f"memkit: error: {spilled} is stored already: run 1 in {db} has its start, end, host and "
                    f"command; nothing was imported (the file may be deleted)")
    with Database(db) as d:
        assert [r["id"] for r in d.runs()] == [1]
    # another run of the same command is another run
    other = spill.write_spill(str(db), dict(run, finished_at="2026-11-28T10:00:06+00:00"), FINGERPRINT,
                              [Result("ok", "s", "fake ok", "ok", 0.1, measurements=[m])], None)
    assert run_cli("import", other, "--db", db).returncode == 0
