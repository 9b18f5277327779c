# SPDX-License-Identifier: Apache-2.0
"""runs, export, run's arguments and summary, env's load,
with fake experiments."""

import csv
import io
import json
import os

import pytest

from conftest import FINGERPRINT, make_fake_build, run_cli
from memkit.results.result import Result
from memkit.lab import load
from memkit.store.db import Database


@pytest.fixture
def build(tmp_path):
    return make_fake_build(tmp_path / "b", ["ok", "zeta", "loser"])


def test_run_passes_arguments_to_the_experiment(build, tmp_path):
    db = tmp_path / "m.db"
    for argv in (["ok", "--", "min=4K", "max=1M"], ["ok", "min=4K", "max=1M"]):
        p = run_cli("run", "--build", build, "--db", db, "--quick", *argv)
        assert p.returncode == 0, p.stderr
        assert "arguments: min=4K max=1M" in p.stdout
    with Database(db) as d:
        assert json.loads(d.experiments(2)[0]["args"]) == ["min=4K", "max=1M"]
    p = run_cli("run", "--build", build, "--db", db, "ok", "zeta", "--", "min=4K")
    assert p.returncode == 2 and "go to one experiment" in p.stderr
    p = run_cli("run", "--build", build, "--db", db, "ok", "zeta", "zeta:min=4K", "zeta:max=8K")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("arguments:") == 1 and "arguments: min=4K max=8K" in p.stdout
    p = run_cli("run", "--build", build, "--db", db, "ok", "loser:min=4K")
    assert p.returncode == 2 and "not among the experiments" in p.stderr


def test_summary_starts_with_losses_then_fastest(build, tmp_path):
    p = run_cli("run", "--build", build, "--db", tmp_path / "m.db", "ok", "loser")
    assert p.returncode == 0, p.stderr
    summary = p.stdout[p.stdout.index("== summary"):].splitlines()
    assert summary[1].startswith("memkit's losses")
    assert summary[2] == "  loser: memkit 1.30x slower than glibc at 2 KiB"
    assert summary[3] == "fastest where:" and summary[4] == "  loser: glibc fastest from 1 KiB to 4 KiB"
    assert summary.index("  ok verdict".replace("  ", "      ", 1)) > 5


def test_runs_and_export(build, tmp_path):
    db = tmp_path / "m.db"
    assert run_cli("runs", "--db", db).returncode == 1      # no database yet
    for quick in ([], ["--quick"]):
        assert run_cli("run", "--build", build, "--db", db, *quick, "ok", "zeta").returncode == 0
    p = run_cli("runs", "--db", db)
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l.strip() and not l.strip().startswith("busy")]
    assert lines[1].split()[0] == "1" and "default" in lines[1] and "ok, zeta" in lines[1]
    assert lines[2].split()[0] == "2" and "quick" in lines[2]
    rows = [json.loads(l) for l in run_cli("runs", "--db", db, "--json").stdout.splitlines()]
    assert [r["id"] for r in rows] == [1, 2] and rows[1]["quick"] and rows[0]["experiments"] == ["ok", "zeta"]

    p = run_cli("export", "--db", db, "--format", "csv")      # the last run
    assert p.returncode == 0, p.stderr
    table = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(table) == 16 and {r["run"] for r in table} == {"2"}
    assert json.loads(table[0]["params"]) == {"size": 1024, "quick": True}
    assert float(table[0]["value"]) == 10.0 and table[0]["unit"] == "GB/s"
    p = run_cli("export", "1", "--db", db, "--format", "json")
    j = json.loads(p.stdout)
    assert j["run"]["id"] == 1 and len(j["measurements"]) == 16
    assert j["measurements"][0]["params"] == {"size": 1024, "quick": False}
    assert {"text": "ok verdict", "kind": None, "experiment": "ok"} in j["verdicts"]
    assert j["fingerprint"]["microcode"] == "0xa0"
    assert run_cli("export", "9", "--db", db).returncode == 1


def test_load_is_measured_and_judged(tmp_path):
    before = load.parse_cpu_times("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3\n")
    after = load.parse_cpu_times("cpu  150 0 150 850 0 0 0 50 0 0\n")
    assert load.steal_pct(before, after) == 25.0
    assert load.Load(0.1, 0.0, 2).busy == ""
    busy = load.Load(3.0, 25.0, 2).busy
    assert "load average 3.00 on 2 CPUs" in busy and "25.0% of CPU time stolen" in busy
    # The load average after a build (make bench: compile, then run) stays
    # high for a minute while the CPUs are idle: what other processes use,
    # measured, is what counts.
    assert load.Load(1.36, 0.0, 2, others_pct=3.0).busy == ""
    assert load.Load(0.2, 0.0, 2, others_pct=60.0).busy == "other processes used 60% of the CPUs"
    assert load.parse_cpu_times("intr 1 2\n") is None and load.parse_cpu_times("cpu  1 x\n") is None


def test_env_and_run_record_the_load(build, tmp_path):
    p = run_cli("env", "--build", build)
    assert p.returncode == 0 and "load average" in p.stdout
    assert "load" in json.loads(run_cli("env", "--build", build, "--json").stdout)
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", build, "--db", db, "ok").returncode == 0
    with Database(db) as d:
        (r,) = d.runs()
        assert r["load_avg"] is not None and r["steal_pct"] is not None and r["busy"] is not None


def test_the_start_of_a_run_measures_the_cpus_not_the_load_average():
    now = load.settle(most_seconds=0.2, window=0.1)
    assert now.others_pct is not None and "load average" not in now.busy


def test_compare_is_suggested_only_with_an_earlier_run(build, tmp_path):
    db = tmp_path / "m.db"
    first = run_cli("run", "--build", build, "--db", db, "ok")
    assert first.returncode == 0 and "memkit compare" not in first.stdout
    second = run_cli("run", "--build", build, "--db", db, "ok")
    assert second.returncode == 0 and "`memkit compare` compares it with run 1, the latest that shares measurements with it" in second.stdout


def store_try(db, argv):
    """A `memkit try` of argv as the database keeps one (its experiment `try`)."""
    from memkit.programs import whole_program as wp
    params = {"program": wp.program_name(argv), "argv": argv}
    m = wp.measurement(wp.WITHOUT, params, "wall_s", "s", [1.0, 1.1, 0.9, 1.0, 1.05, 0.95], None)
    with Database(db, create=True) as d:
        return d.store_run(started_at="2026-11-28T10:00:00+00:00", finished_at="2026-11-28T10:01:00+00:00",
                           quick=False, fingerprint=FINGERPRINT, hostname="box", command="memkit try",
                           results=[Result(wp.EXPERIMENT, "", "try", "ok", 60.0, args=argv, measurements=[m])])


def said(p) -> list[str]:
    """compare's lines, but the notes of a busy machine (this one may be)."""
    return [line for line in p.stdout.splitlines() if "ran on a busy machine" not in line]


def test_compare_and_the_run_summary_take_runs_that_share_measurements(build, tmp_path):
    # The README's order: a try, then the lab; compare once took the two and said only
    # "no measurement is in both runs", and run named the try as the run it compares with.
    db = tmp_path / "m.db"
    store_try(db, ["python3", "copy.py"])                                              # run 1
    lab = run_cli("run", "--build", build, "--db", db, "--quick", "ok")                # run 2
    assert lab.returncode == 0 and "memkit compare" not in lab.stdout, lab.stdout
    c = run_cli("compare", "--db", db)
    assert c.returncode == 0, c.stderr
    assert said(c)[1:] == [
        "note: no two runs share a measurement; these are the last two",
        "no measurement is in both runs: run 1 tried `python3 copy.py`; run 2 ran the lab's experiments (quick grid)"]
    lab = run_cli("run", "--build", build, "--db", db, "--quick", "ok")                # run 3
    assert "`memkit compare` compares it with run 2, the latest that shares measurements with it" in lab.stdout
    store_try(db, ["python3", "other.py"])                                             # run 4
    assert run_cli("run", "--build", build, "--db", db, "--quick", "zeta").returncode == 0   # run 5
    c = run_cli("compare", "--db", db)
    lines = said(c)
    assert lines[0].startswith("run 2 of ") and " -> run 3 of " in lines[0], lines
    assert lines[1] == ("note: runs 4, 5 share no measurement with any earlier run; these are the last two that "
                        "do (`memkit compare A B` compares any two)")
    assert "ok: 8 measurements in both" in c.stdout
    assert json.loads(run_cli("compare", "--db", db, "--json").stdout)["run_a"] == 2
    # two lab runs of other experiments: said so
    c = run_cli("compare", "--db", db, "3", "5")
    assert c.stdout.splitlines()[-1] == "no measurement is in both runs: run 3 ran ok; run 5 ran zeta"
    # report and fleet take the same run as compare's default
    with Database(db) as d:
        from memkit.programs.whole_program import previous_comparable
        runs = d.runs()
        assert [(previous_comparable(d, runs, r) or {}).get("id") for r in runs] == [None, None, 2, None, None]


def test_the_run_summary_states_the_trade_per_working_set():
    from memkit.orchestration.suite import _trade_lines
    from memkit.results.result import Result
    ups = {"hot": 2.0, "l3": 1.2, "dram": 0.8}
    ms = [{"series": f"memkit {fn}", "metric": "ns_per_call", "params": {"ws": ws, "distribution": d}, "ratio": r}
          for fn in ("memset", "memcpy", "memmove") for ws, r in ups.items() for d in ("A", "B")]
    lines = _trade_lines([Result("size-distributions", "", "", "ok", 1.0, measurements=ms)])
    assert lines[1] == "  hot 2.00 / 2.00 / 2.00; l3 1.20 / 1.20 / 1.20; dram 0.80 / 0.80 / 0.80"
    assert "gives up up to 1.25x" in lines[2] and "in the caches: up to 2.00x" in lines[2]
    assert _trade_lines([Result("memset-sizes", "", "", "ok", 1.0, measurements=ms)]) == []
