# SPDX-License-Identifier: Apache-2.0
"""What identical runs moved (memkit.comparison.identical_runs): the shipped
reference is what the recordings in tests/data/runs/ say, a change must
exceed the largest move of its series there (or in the host's history), and
the floor it sets decides a verdict."""

import json
import math
from pathlib import Path

from memkit.comparison import compare as cmp
from memkit.comparison import identical_runs
from memkit.judging.judge import HISTORY_MIN_PAIRS, NOISE_MARGIN, SERIES_EFFECT
from memkit.store.db import Database
from regressions import slowed

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
ZEN4 = RUNS / "amd-zen4-25-17"


def zen4_pair(n: int) -> tuple[list, list]:
    with Database(ZEN4 / "identical-pairs" / f"pair-{n}.db") as d:
        return d.measurements(1), d.measurements(2)


def test_the_shipped_reference_is_what_the_recordings_say():
    # scripts/identical_runs.py rewrites it after a recording is added
    assert json.loads(identical_runs.REFERENCE.read_text()) == identical_runs.derive(RUNS)


def test_every_recorded_identical_pair_is_in_the_reference():
    listed = set()
    for folder in RUNS.iterdir():
        if (folder / "runs.json").is_file():
            meta = json.loads((folder / "runs.json").read_text())
            listed |= {(folder.name, p["db"]) for p in meta.get("identical_pairs", ())}
    assert ("amd-zen4-25-17", "identical-pairs/pair-1.db") in listed
    seen = {(m["cpu"], m["db"]) for s in identical_runs.reference().values() for e in s.values() for m in e["moves"]}
    assert listed <= seen


def test_a_floor_lies_beyond_the_largest_move_and_never_below_the_constant():
    floors = identical_runs.Floors.of(())
    for experiment, series in identical_runs.reference().items():
        for name, entry in series.items():
            for scope, largest in entry["largest"].items():
                f = floors.floor(scope, (experiment, name, "{}"), 0.1)
                # a band of short calls: every series' of the experiment (placement moves them alike)
                pooled = max(e["largest"].get(scope, 0.0) for e in series.values())
                assert f.largest == (pooled if scope == "short band" else largest)
                assert f.source == ("reference, its experiment's largest" if scope == "short band" else "reference")
                assert math.log1p(f.effect) >= NOISE_MARGIN * f.largest - 1e-12 and f.effect >= 0.1


def test_a_series_the_reference_lacks_takes_its_experiments_largest_and_an_unknown_experiment_none():
    floors = identical_runs.Floors.of(())
    known = identical_runs.reference()["memset-sizes"]
    f = floors.floor("series", ("memset-sizes", "a-new-variant", "{}"), SERIES_EFFECT)
    assert f.largest == max(e["largest"]["series"] for e in known.values() if "series" in e["largest"])
    assert f.source == "reference, its experiment's largest"
    f = floors.floor("series", ("no-such-experiment", "x", "{}"), SERIES_EFFECT)
    assert (f.effect, f.source) == (SERIES_EFFECT, "none")


def test_moves_reads_a_whole_series_move_as_put_in():
    ma, mb = zen4_pair(1)
    before = identical_runs.moves(ma, mb)[("memset-sizes", "sse2", '{"value": 0}')]["series"]
    after = identical_runs.moves(ma, slowed(mb, "memset-sizes", "sse2", 1.4))[("memset-sizes", "sse2", '{"value": 0}')]
    assert abs(after["series"] - math.log(1.4)) <= before + 0.03
    assert after["band"] >= math.log(1.4) - 0.05


def test_a_history_of_enough_pairs_replaces_the_reference_for_a_whole_series():
    # four runs, the second and fourth with sse2 1.3x slower: the host's own
    # identical runs moved it that far, so a 1.3x move between the next two is noise there
    ma, mb = zen4_pair(2)
    history = [ma, slowed(mb, "memset-sizes", "sse2", 1.3), ma, slowed(mb, "memset-sizes", "sse2", 1.3)]
    floors = identical_runs.Floors.of(history)
    assert floors.pairs == HISTORY_MIN_PAIRS
    key = ("memset-sizes", "sse2", '{"value": 0}')
    f = floors.floor("series", key, SERIES_EFFECT)
    assert f.source == "history" and f.pairs == 3 and f.effect > 0.3
    assert floors.floor("band", key, 0.2).effect == 0.2   # bands: the history's scale judges them
    res = cmp.compare_measurements(ma, slowed(mb, "memset-sizes", "sse2", 1.3), history=history)
    (s,) = [s for s in res.series if s.series == "sse2"]
    assert not s.flagged and s.floor.source == "history"
    # without that history the same move is a regression of the series
    res = cmp.compare_measurements(ma, slowed(mb, "memset-sizes", "sse2", 1.3))
    (s,) = [s for s in res.series if s.series == "sse2"]
    assert s.flagged and s.direction == "worse" and s.floor.source == "reference"


def test_a_whole_move_within_what_identical_runs_showed_is_not_flagged():
    # nt-stores' zero fills moved x1.17 as a whole between identical runs on
    # Zen 4 (pair 3): beyond SERIES_EFFECT, within the series' floor
    ma, mb = zen4_pair(3)
    res = cmp.compare_measurements(ma, mb)
    (s,) = [s for s in res.series if s.series == "nt-stores"]
    assert s.ratio > 1 + SERIES_EFFECT and s.q < cmp.FDR and not s.flagged
    assert s.min_effect > s.ratio - 1 and s.floor.largest >= math.log(s.ratio) - 1e-9
