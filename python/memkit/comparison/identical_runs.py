# SPDX-License-Identifier: Apache-2.0
"""How far identical runs moved: the floor under what counts as a change
where a pair of runs alone cannot tell (docs/judging.md, "What identical
runs moved").

One reading for every source, moves() of two runs, on the medians of the
paired speed-ups (no bootstrap: it is read for every earlier pair of a
history): per series, the largest move of a measurement judged alone, of a
band of adjacent sizes (of long calls; of short calls) and of the whole
series, as compare judges them (net of the baseline's own move, the
Hodges-Lehmann estimate over the sizes).  The sources, in order:

- the host's history: its earlier runs of the grid, where they hold
  HISTORY_MIN_PAIRS pairs: a whole series must move beyond its own largest
  move there (measurements and bands are judged against the history's
  scale, compare step 3);
- else the reference shipped with memkit (judging/identical-runs.json):
  the largest moves between the identical pairs recorded on every CPU
  memkit has seen (tests/data/runs/), by experiment and series name;
  scripts/identical_runs.py derives it, tests/python/test_identical_runs.py
  fails when it and the recordings disagree.

A change must exceed NOISE_MARGIN times the largest move (in logs), and the
constant of its scope at least (judge.py).
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from memkit.comparison.samples import (baseline_key, between_run_effect, headline, min_effect, paired_log_change,
                                       paired_samples, samples_of)
from memkit.judging import stats
from memkit.judging.judge import BAND_MIN, HISTORY_MIN_PAIRS, LOCAL_MIN, NOISE_MARGIN, NULL_CLIP, NULL_MIN, SERIES_MIN
from memkit.results import records

REFERENCE = Path(__file__).resolve().parents[1] / "judging" / "identical-runs.json"


def series_key(m: dict) -> tuple:
    """(experiment, series, the params but the axis): a series, whatever its
    sizes; the measurements of a series without an axis are one series
    (memset-random's rows), params "null", as compare judges them."""
    axis = (m.get("axis") or {}).get("name")
    if axis not in m["params"]:
        return (m["experiment"], m["series"], "null")
    rest = {k: v for k, v in m["params"].items() if k != axis}
    return (m["experiment"], m["series"], json.dumps(rest, sort_keys=True))


@dataclass(frozen=True)
class _Change:
    a: dict            # the record in run A
    log: float         # log of the median paired speed-up B/A, the metric's direction (> 0: grew)
    alone: bool        # judged alone by compare (not a short call timed in too few processes)
    lean: float        # what it must exceed to lean in a band (compare.between_run_effect)


def _changes(a_by: dict, b_by: dict) -> dict:
    out = {}
    for k, a in a_by.items():
        b = b_by.get(k)
        change = paired_log_change(a, b)
        if change is None:
            continue
        basis_a, basis_b = samples_of(a)[1], samples_of(b)[1]
        basis = basis_a if basis_a == basis_b else "round"
        out[k] = _Change(a, change, not math.isinf(min_effect(a, basis)), between_run_effect(a))
    return out


def _absolute_moves(a_by: dict, b_by: dict) -> dict:
    """series_key -> the largest |log move| of its measurements without
    paired speed-ups judged alone, on their samples' medians, beyond the
    shift they are judged against (compare._absolute_verdict: between the
    experiment's shift and that of the measurements timed with them)."""
    logs, basis = {}, {}
    for k, a in a_by.items():
        b = b_by.get(k)
        if b is None or b["metric"] != a["metric"]:
            continue
        (sa, basis_a), (sb, basis_b) = samples_of(a), samples_of(b)
        if not sa or not sb or min(sa) <= 0 or min(sb) <= 0:
            continue
        logs[k] = math.log(statistics.median(sb) / statistics.median(sa))
        basis[k] = basis_a if basis_a == basis_b else "round"
    out: dict = {}
    for experiment in {k[0] for k in logs}:
        keys = [k for k in logs if k[0] == experiment]
        if len(keys) < NULL_MIN:
            continue
        center = stats.clipped_null([logs[k] for k in keys], None, NULL_CLIP, NULL_MIN)[0]
        for k in keys:
            a = a_by[k]
            if paired_samples(a) is not None or math.isinf(min_effect(a, basis[k])):
                continue
            others = [logs[o] for o in keys if o != k and o[2] == k[2]]
            local = statistics.median(others) if len(others) >= LOCAL_MIN else center
            low, high = sorted((local, center))
            dev = logs[k] - min(max(logs[k], low), high)
            key = series_key(a)
            out[key] = max(out.get(key, 0.0), abs(dev))
    return out


def _net_of_baseline(changes: dict) -> dict:
    """thing key -> its change net of what its baseline's own move explains:
    the median of the other series paired with the same baseline at the same
    params (two at least, else 0), as compare._baseline_shifts."""
    together: dict = {}
    for k, c in changes.items():
        together.setdefault((baseline_key(c.a), json.dumps(c.a["params"], sort_keys=True)), []).append(k)
    out = {}
    for keys in together.values():
        for k in keys:
            others = [changes[o].log for o in keys if o != k]
            out[k] = changes[k].log - (statistics.median(others) if len(others) >= 2 else 0.0)
    return out


def _largest_band(run: list, net: dict, short: bool) -> float:
    """The largest |median| of a window of BAND_MIN or more adjacent sizes
    whose changes all lean one way beyond their lean, mostly short calls or
    mostly not (compare._bands_of's windows)."""
    largest = 0.0
    for s in range(len(run)):
        for e in range(s + BAND_MIN, len(run) + 1):
            window = run[s:e]
            logs = [net[k] for k, _ in window]
            if not (all(x > math.log1p(c.lean) for x, (_, c) in zip(logs, window))
                    or all(x < -math.log1p(c.lean) for x, (_, c) in zip(logs, window))):
                break
            if (sum(not c.alone for _, c in window) > len(window) / 2) == short:
                largest = max(largest, abs(statistics.median(logs)))
    return largest


def _by_thing(ms: Sequence[dict]) -> dict:
    return headline([records.normalized(m) for m in ms])


def moves(ma: Sequence[dict], mb: Sequence[dict]) -> dict:
    """series_key -> {scope: the largest |log move| of that scope between
    two runs} ("series" for series of SERIES_MIN sizes or more)."""
    return _moves(_by_thing(ma), _by_thing(mb))


def _moves(a_by: dict, b_by: dict) -> dict:
    changes = _changes(a_by, b_by)
    net = _net_of_baseline(changes)
    by: dict = {}
    for k, c in changes.items():
        by.setdefault(series_key(c.a), []).append((k, c))
    out = {k: {"point": x} for k, x in _absolute_moves(a_by, b_by).items()}
    for key, run in by.items():
        axis = (run[0][1].a.get("axis") or {}).get("name")
        if key[2] != "null":
            run.sort(key=lambda kc: kc[1].a["params"][axis])
        seen = {"point": max([abs(c.log) for _, c in run if c.alone] + [out.get(key, {}).get("point", 0.0)])}
        if key[2] != "null":
            seen["band"] = _largest_band(run, net, short=False)
            seen["short band"] = _largest_band(run, net, short=True)
        if len(run) >= SERIES_MIN:
            seen["series"] = abs(stats.walsh_median([net[k] for k, _ in run]))
        out[key] = seen
    return out


@dataclass(frozen=True)
class Floor:
    """What a change of one scope must exceed, and where that was read."""
    effect: float          # the smallest change that counts (the scope's constant at least)
    largest: float         # the largest |log move| identical runs showed (0: none read)
    pairs: int             # how many identical pairs showed it
    source: str            # "history", "reference" or "none"

    @property
    def text(self) -> str:
        if self.source == "none":
            return "no identical runs of it recorded"
        return (f"identical runs moved it up to x{math.exp(self.largest):.2f} in {self.pairs} "
                f"pair{'s' if self.pairs != 1 else ''} ({self.source})")


def floor_effect(constant: float, largest: float) -> float:
    return max(constant, math.expm1(NOISE_MARGIN * largest))


@functools.lru_cache(maxsize=1)
def reference() -> dict:
    return json.loads(REFERENCE.read_text())["experiments"]


@dataclass(frozen=True)
class Floors:
    """The floors of one comparison: history, key -> {scope: [moves]} of its
    earlier identical pairs; pairs, how many there were; reference, whether
    the reference applies (it was recorded on the quick grid: a default
    grid's more rounds and processes move less, and are judged on their
    constants and history alone)."""
    history: dict
    pairs: int
    reference: bool = True

    @classmethod
    def of(cls, history: Sequence[list[dict]], reference: bool = True) -> "Floors":
        pairs = max(0, len(history) - 1)
        out: dict = {}
        if pairs >= HISTORY_MIN_PAIRS:   # else floor() reads the reference, not the history
            runs = [_by_thing(ms) for ms in history]   # each run once, though in two pairs
            for older, newer in zip(runs, runs[1:]):
                for k, seen in _moves(older, newer).items():
                    for scope, x in seen.items():
                        out.setdefault(k, {}).setdefault(scope, []).append(x)
        return cls(out, pairs, reference)

    def floor(self, scope: str, key: tuple, constant: float) -> Floor:
        """The floor of a change of `scope` in the series `key`: from the
        history where it holds HISTORY_MIN_PAIRS pairs (the whole series'
        own moves; measurements and bands, none: the history's scale judges
        them), else the reference's largest move of the series' name in its
        experiment (a series it lacks, and a band of short calls: its
        experiment's largest), else none."""
        if self.pairs >= HISTORY_MIN_PAIRS:
            seen = self.history.get(key, {}).get(scope, ()) if scope == "series" else ()
            largest = max(seen, default=0.0)
            return Floor(floor_effect(constant, largest), largest, len(seen), "history")
        experiment, series, _ = key
        known = reference().get(experiment, {}) if self.reference else {}
        # Bands of short calls move by where each process's code lands,
        # whatever the series: the experiment's largest (Zen 4, busy: sse2 at
        # 32-64 B x1.61 where its own recordings showed x1.30).
        pooled = scope == "short band" or series not in known
        entries = list(known.values()) if pooled else [known[series]]
        entries = [e for e in entries if scope in e["largest"]]
        if not entries:
            return Floor(constant, 0.0, 0, "none")
        entry = max(entries, key=lambda e: e["largest"][scope])
        largest = entry["largest"][scope]
        source = "reference, its experiment's largest" if pooled else "reference"
        pairs = len({(m["cpu"], m["db"], tuple(m["runs"])) for m in entry["moves"]})
        return Floor(floor_effect(constant, largest), largest, pairs, source)


def recorded_pairs(folder: Path) -> list[tuple[str, int, int]]:
    """(database, run A, run B) of every identical pair one CPU's folder
    records (its runs.json: "identical" in judge-three-runs.db, the band
    database's "identical", and "identical_pairs": [{"db", "runs"}])."""
    meta = json.loads((folder / "runs.json").read_text())
    out = [("judge-three-runs.db", *meta["identical"])]
    if "band" in meta:
        out.append((meta["band"]["db"], *meta["band"]["identical"]))
    return out + [(p["db"], *p["runs"]) for p in meta.get("identical_pairs", ())]


def recorded_moves(runs_dir: Path) -> list[tuple[str, str, int, int, dict]]:
    """(CPU, database, run A, run B, moves()) of every identical pair
    recorded under runs_dir."""
    from memkit.store.db import Database
    out = []
    for folder in sorted(p for p in runs_dir.iterdir() if (p / "runs.json").is_file()):
        for db, a, b in recorded_pairs(folder):
            with Database(folder / db) as d:
                out.append((folder.name, db, a, b, moves(d.measurements(a), d.measurements(b))))
    return out


def derive(runs_dir: Path) -> dict:
    """The reference from every identical pair recorded under runs_dir."""
    return reference_of(recorded_moves(runs_dir))


def reference_of(recorded: Sequence[tuple]) -> dict:
    """The reference from recorded_moves' rows."""
    out: dict = {}
    for cpu, db, a, b, seen in recorded:
        for (experiment, series, params), scopes in sorted(seen.items()):
            entry = out.setdefault(experiment, {}).setdefault(series, {"largest": {}, "moves": []})
            scopes = {s: round(x, 5) for s, x in scopes.items()}
            entry["moves"].append({"cpu": cpu, "db": db, "runs": [a, b], "params": json.loads(params), **scopes})
            for s, x in scopes.items():
                entry["largest"][s] = max(entry["largest"].get(s, 0.0), x)
    return {"what": "the largest |log move| of each series between the identical runs recorded in "
                    "tests/data/runs/, of a measurement judged alone, a band of adjacent sizes (of long "
                    "calls, of short calls) and the whole series (scripts/identical_runs.py writes it; "
                    "memkit.comparison.identical_runs reads it)",
            "experiments": out}
