# SPDX-License-Identifier: Apache-2.0
"""memkit fleet and compare --machine over a small simulated fleet: hosts of
two CPU models, two of them taking a microcode update that slows zero fills
at 4 MiB (the Downs seed), one a tunables change, one unchanged."""

import json

import pytest

from conftest import FINGERPRINT, run_cli
from memkit import cli
from memkit.comparison import fleet
from memkit.results.result import Result
from memkit.store.db import Database
from test_cli import one_line_error

SIZES = (4096, 65536, 4 << 20)


def fill_result(slow_zero_at=None, faster=1.0):
    """fill-regions: zero and non-zero fills at three sizes, five rounds
    within ±2%; the zero fill at slow_zero_at bytes at 0.6x."""
    ms = []
    for size in SIZES:
        for value in (0, 90):
            v = 20.0 * faster * (0.6 if value == 0 and size == slow_zero_at else 1.0)
            ms.append({"series": "memkit", "params": {"size": size, "value": value}, "metric": "fill_throughput",
                       "unit": "GB/s", "better": "higher", "axis": {"name": "size", "unit": "B"},
                       "stat": "median", "value": v, "min": v * 0.98, "median": v, "max": v * 1.02,
                       "samples": [v * f for f in (0.98, 1.0, 1.02, 0.99, 1.01)]})
    return Result("fill-regions", "downs", "fills", "ok", 1.0, [], None, ms, [], "", "")


# host -> (cpu, [(fingerprint changes, fill_result kwargs)] for its runs, oldest first)
ZEN4, ZEN5 = "AMD EPYC 9R14 (Zen 4)", "AMD EPYC 9R45 (Zen 5)"
FLEET = {
    "alpha": (ZEN5, [({}, {}), ({"microcode": "0xb1"}, {"slow_zero_at": 4 << 20})]),
    "beta": (ZEN5, [({}, {}), ({}, {}), ({"microcode": "0xb1"}, {"slow_zero_at": 4 << 20})]),
    "gamma": (ZEN5, [({}, {}), ({}, {})]),
    "delta": (ZEN4, [({}, {}), ({"tunables": "nt_threshold=1M"}, {"faster": 1.3})]),
    "eps": (ZEN4, [({}, {})]),
}


def simulate(target):
    with Database(target, create=True) as d:
        # Interleaved as a fleet writes: run k of every host, then run k+1.
        for k in range(3):
            for host, (cpu, runs) in FLEET.items():
                if k < len(runs):
                    change, kw = runs[k]
                    fp = {**FINGERPRINT, "cpu_model": cpu, "microcode": "0xb0", **change}
                    d.store_run(started_at=f"2026-11-2{k}T10:00:00+00:00", finished_at="x", quick=False,
                                fingerprint=fp, results=[fill_result(**kw)], hostname=host)
    return target


@pytest.fixture(params=["sqlite", "postgresql"])
def fleet_db(request, tmp_path):
    if request.param == "sqlite":
        return simulate(str(tmp_path / "m.db"))
    return simulate(request.getfixturevalue("pg_url"))


def test_fleet_finds_who_changed_and_what_moved(fleet_db):
    with Database(fleet_db) as d:
        st = {s.host: s for s in fleet.host_statuses(d)}
    assert st["alpha"].changes == {"microcode": ["0xb0", "0xb1"]}
    assert [(fleet.measurement_name(c), c.direction) for c in st["alpha"].moved] == \
        [("fill-regions memkit size=4 MiB value=0 fill_throughput", "worse")]
    # beta's previous run is its second, not its first.
    assert st["beta"].previous["id"] < st["beta"].latest["id"] and st["beta"].runs == 3
    assert st["beta"].changes == {"microcode": ["0xb0", "0xb1"]} and st["beta"].count("worse") == 1
    assert st["gamma"].changes == {} and st["gamma"].moved == [] and st["gamma"].compared == 6
    assert st["delta"].changes == {"tunables": ["threads=0", "nt_threshold=1M"]}
    assert st["delta"].count("better") == 6 and st["delta"].count("worse") == 0
    assert st["eps"].previous is None


def test_fleet_command_text_and_json(fleet_db, capsys):
    assert cli.main(["fleet", "--db", fleet_db]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("5 hosts in ")
    # Grouped by CPU model, a line per host.
    zen4, zen5 = out.index(f"== {ZEN4} (2 hosts)"), out.index(f"== {ZEN5} (3 hosts)")
    assert zen4 < zen5
    body = {l.split(":")[0].strip(): l for l in out if l.startswith("  ") and not l.startswith("  =>")}
    assert set(body) == set(FLEET)
    assert "CHANGED microcode: 0xb0 -> 0xb1" in body["alpha"]
    assert "moved: 1 worse of 6: fill-regions memkit size=4 MiB value=0 fill_throughput x0.60" in body["alpha"]
    assert "same machine state; nothing moved beyond the noise (6 compared)" in body["gamma"]
    assert "its first run" in body["eps"]
    assert "moved: 6 better of 6" in body["delta"]
    pattern = [l for l in out if l.startswith("  => 2 hosts (alpha, beta)")]
    assert pattern == ["  => 2 hosts (alpha, beta) took microcode: 0xb0 -> 0xb1 (not taken by gamma): 1 measurement "
                       "moved the same way on all: fill-regions memkit size=4 MiB value=0 fill_throughput worse "
                       "(x0.60..x0.60)"]
    assert len([l for l in out if l.startswith("  =>")]) == 1   # delta's change is its own line

    assert cli.main(["fleet", "--db", fleet_db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["hosts"] == 5 and [g["cpu_model"] for g in doc["groups"]] == [ZEN4, ZEN5]
    z5 = doc["groups"][1]
    alpha = next(h for h in z5["hosts"] if h["host"] == "alpha")
    assert alpha["fingerprint_changes"] == {"microcode": ["0xb0", "0xb1"]} and alpha["worse"] == 1
    (moved,) = alpha["moved"]
    assert moved["params"] == {"size": 4 << 20, "value": 0} and moved["direction"] == "worse"
    assert moved["ratio"] == pytest.approx(0.6)
    (p,) = z5["patterns"]
    assert p["hosts"] == ["alpha", "beta"] and p["without_change"] == ["gamma"]
    assert p["moved_on_all"][0]["direction"] == "worse"


def test_compare_two_machines(fleet_db, capsys):
    assert cli.main(["compare", "--db", fleet_db, "--machine", "gamma", "--machine", "alpha"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("run ") and " of gamma (" in first and " of alpha (" in first
    assert "microcode: 0xb0 -> 0xb1" in out
    assert "size=4 MiB value=0" in out and "WORSE" in out
    # a usage error (2), and a host the database does not hold (1: refused input)
    for bad, msg, status in ((["--machine", "alpha"], "--machine takes two hosts", 2),
                             (["--machine", "alpha", "--machine", "zed"], "no runs of host 'zed' (hosts: alpha, "
                                                                          "beta, delta, eps, gamma)", 1)):
        assert cli.main(["compare", "--db", fleet_db, *bad]) == status
        assert msg in capsys.readouterr().err


def test_runs_names_the_hosts(fleet_db, capsys):
    assert cli.main(["runs", "--db", fleet_db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["run", "started", "(UTC)", "host"]
    hosts = [l.split()[2] for l in lines[1:] if l[:4].strip().isdigit()]
    assert sorted(set(hosts)) == sorted(FLEET) and hosts.count("beta") == 3


def test_fleet_on_a_database_without_runs(tmp_path):
    with Database(tmp_path / "e.db", create=True):
        pass
    line = one_line_error(run_cli("fleet", "--db", tmp_path / "e.db"))
    assert line == f"memkit: error: no runs in {tmp_path / 'e.db'}; `memkit run` first"


def test_fleet_report_page(fleet_db, tmp_path, capsys):
    out = tmp_path / "fleet"
    assert cli.main(["report", "--fleet", "--db", fleet_db, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"report: {out / 'index.html'}"
    page = (out / "index.html").read_text()
    assert page.index(f"<h2>{ZEN4} &middot; 2 hosts</h2>") < page.index(f"<h2>{ZEN5} &middot; 3 hosts</h2>")
    for host in FLEET:
        assert f"<td><b>{host}</b></td>" in page
    # alpha's microcode cell is marked changed, with what it was.
    assert "<td class='changed'><b>0xb1</b><br><span class='meta'>was 0xb0</span></td>" in page
    assert page.count("class='changed'") == 3   # alpha, beta microcode; delta tunables
    assert "2 hosts (alpha, beta) took microcode: 0xb0 -&gt; 0xb1 (not taken by gamma)" in page
    assert "delta: all 6 moved measurements" in page
    assert cli.main(["report", "--fleet", "--run", "1", "--db", fleet_db, "--out", str(out)]) == 2   # usage
