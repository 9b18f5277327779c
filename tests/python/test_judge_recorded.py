# SPDX-License-Identifier: Apache-2.0
"""One judge per question, held to recorded samples: on every run in
tests/data/runs/*/lab.db, the lab's rule for a ranking point (C,
lab_point_verdict, asked through tests/c/lab/lab_judge_probe.c) gives, from
the raw per-round samples stored there, the verdicts the lab wrote then; and
Python's interval of a median speed-up (`memkit try`'s, stats.median_interval)
parts from it only where it is the more cautious, on few rounds."""

import json
import subprocess
import sqlite3
from pathlib import Path

import pytest

from conftest import real_bench_dir
from memkit.judging import stats

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
LABS = sorted(RUNS.glob("*/lab.db"))


def verdict(lo: float, hi: float, loss_min: float) -> int:
    """docs/judging.md's reading of an interval of speed-ups: 1 faster, -1
    slower beyond the noise and by loss_min, 0 neither."""
    if lo > 1:
        return 1
    return -1 if hi < 1 / loss_min else 0


def in_ranking(experiment: str, what: str, params: dict, metric: str) -> bool:
    """Whether a measurement is one of the ranking's points (its grid, in order)."""
    if experiment == "copy-sweep":
        return metric == "gb_per_s" and params.get("dst_offset") == 0
    if experiment == "memset-sizes":
        return metric == "ns_per_call"
    if experiment == "fill-regions":
        return params["value"] == (0 if what.endswith(" 0") else 0x5a)
    if experiment == "memset-random":
        return what.endswith("ws=" + params["ws"])
    raise AssertionError(f"no ranking known for {experiment}")


def ranked_points(db: Path):
    """(the ranking point, memkit's speed-ups over its rival round by round,
    the ranking's loss_min) for every point with a rival."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    measurements = con.execute("SELECT * FROM measurements ORDER BY id").fetchall()
    for experiment, data in con.execute("SELECT experiment, data FROM verdicts WHERE kind = 'fastest'"):
        rk = json.loads(data)
        grid: dict[str, dict] = {}
        for m in measurements:
            if m["experiment"] == experiment and in_ranking(experiment, rk["what"], json.loads(m["params"]),
                                                             m["metric"]):
                grid.setdefault(m["params"], {})[m["series"]] = m
        assert len(grid) == len(rk["points"]), (db, rk["what"])
        for series, point in zip(grid.values(), rk["points"]):
            if not point["rival"]:
                continue
            mine, rival = series[rk["memkit"]], series[point["rival"]]
            higher = mine["better"] == "higher"
            pairs = zip(json.loads(mine["sample_values"]), json.loads(rival["sample_values"]))
            yield point, [a / b if higher else b / a for a, b in pairs], rk["loss_min"]
    con.close()


def lab_verdicts(points: list) -> list[int]:
    """What the lab's C rule says of each (point, speed-up samples) now."""
    probe = real_bench_dir().parent / "tests" / "lab_judge_probe"
    if not probe.is_file():
        pytest.skip(f"{probe} not built (the C tests are off in this build)")
    lines = "".join(f"1 {len(up)} {' '.join(map(repr, up))} {' '.join(['1.0'] * len(up))}\n"
                    for _, up, _ in points)
    out = subprocess.run([str(probe)], input=lines, capture_output=True, text=True, check=True).stdout
    return [int(v) for v in out.split()]


@pytest.mark.parametrize("db", LABS, ids=lambda p: p.parent.name)
def test_the_lab_judges_recorded_samples_as_it_did(db):
    points = list(ranked_points(db))
    assert len(points) > 300
    got = lab_verdicts(points)
    assert [(p["at"], v) for (p, _, _), v in zip(points, got) if v != p["verdict"]] == []


@pytest.mark.parametrize("db", LABS, ids=lambda p: p.parent.name)
def test_pythons_median_interval_parts_from_the_lab_only_on_few_rounds(db):
    """stats.median_interval is exact (binomial, at least 95%); the lab's rule
    approximates it, a little narrower: on 5 to 11 rounds it can call a point
    the exact interval leaves open, never the other way round or the opposite
    way.  (On the recorded runs: 5 of 733 points, all at 5 or 11 rounds.)"""
    for point, up, loss_min in ranked_points(db):
        exact = verdict(*stats.median_interval(up, 0.95), loss_min)
        if exact != point["verdict"]:
            assert exact == 0 and len(up) <= 11, (point, len(up))
