# SPDX-License-Identifier: Apache-2.0
"""`memkit tune`'s small-size design: each function's variant, and where
memset's rep stosb starts, chosen by their speed-ups over glibc at each cache
level on the production size distributions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import geometric_mean
from typing import Optional

from memkit.judging.judge import TUNE_MARGIN as MARGIN
from memkit.judging.judge import VARIANT_FLOOR, VARIANT_LEVELS
from memkit.programs.count_files import OPS
from memkit.tuning.tune import Choice, fmt_candidate


# ---- the small-size design: the variant of each function, and where memset's rep stosb starts ----
#
# Timed on the production size distributions (memkit-exp-size-distributions,
# its calls unlearnable by a branch predictor), each call at a random line of
# an arena sized to each cache level and beyond, against glibc in the same
# rounds: a candidate's score at a level is the geometric mean of its
# speed-ups over the distributions.  The rule (memkit.judge): the best
# geometric mean over the levels weighed equally, among the candidates that
# keep every level at VARIANT_FLOOR x glibc or better (all of them where none
# does, said so); the default stays unless that beats it by MARGIN.

VARIANT_FUNCTIONS = OPS   # the functions memkit replaces, each with its variant tunable

# Thresholds chosen by the same rule, after the variant and with it forced:
# rep stosb stores whole lines without reading them first, so from a few KiB
# it fills lines that come from DRAM up to 2x faster than vector stores,
# which are faster in L1 and L2 (Zen 5, 16 KiB: 381 vs 768 ns from DRAM, 103
# vs 91 ns in L2; docs/strategy.md, memset from DRAM).  The timed stage finds
# where rep stosb wins in cache; these candidates below it are weighed over
# the levels.  tunable -> (function, candidate sizes).
LEVEL_TUNABLES = {"rep_stosb_threshold": ("memset", (2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10))}


@dataclass
class LevelScore:
    candidate: object   # a variant's name, or a threshold's size
    function: str
    levels: dict        # level -> geometric mean speed-up over glibc
    over: tuple = VARIANT_LEVELS   # the levels that count, weighed equally
    weights: Optional[dict] = None  # unless weighed so (a program's share of time at each)

    @property
    def geomean(self) -> float:
        w = self.weights or {lv: 1.0 for lv in self.over}
        return math.exp(sum(w[lv] * math.log(self.levels[lv]) for lv in self.over) / sum(w[lv] for lv in self.over))

    @property
    def worst(self) -> tuple[str, float]:
        lv = min(self.over, key=lambda k: self.levels[k])
        return lv, self.levels[lv]

    def label(self) -> str:
        return fmt_candidate(self.candidate)

    def text(self) -> str:
        mean = "weighed by the time there" if self.weights else "geomean"
        return (f"{self.label()} " + " ".join(f"{lv} {self.levels[lv]:.2f}" for lv in self.over)
                + (f", {mean} {self.geomean:.2f}" if len(self.over) > 1 else ""))


def level_scores(measurements: list[dict], series: str = "memkit", key: str = "ratio") -> dict:
    """function -> {working set: geometric mean over the distributions of
    memkit's speed-up over glibc}, from size-distributions' records ("memkit
    FUNCTION" series, their median paired speed-up over glibc); with
    series="glibc", key="value": glibc's ns per call there."""
    ups: dict = {}
    for m in measurements:
        who, _, fn = m.get("series", "").partition(" ")
        lv = (m.get("params") or {}).get("ws")
        if who == series and fn in VARIANT_FUNCTIONS and m.get(key) and m["metric"] == "ns_per_call":
            ups.setdefault(fn, {}).setdefault(lv, []).append(m[key])
    return {fn: {lv: geometric_mean(xs) for lv, xs in by.items()} for fn, by in ups.items()}


def candidate_scores(candidate, measurements: list[dict], over: Optional[dict] = None,
                     functions=VARIANT_FUNCTIONS) -> list[LevelScore]:
    """A candidate's scores, one per function of `functions`, from
    size-distributions' records of one run with it in force.  over:
    function -> the levels that count for it (default: VARIANT_LEVELS,
    weighed equally), or {level: the share of its calls there} (a
    recording's: weighed by the time those calls take on glibc's routines)."""
    out = []
    glibc = level_scores(measurements, "glibc", "value")
    for fn, by in level_scores(measurements).items():
        levels = tuple(over[fn]) if over and fn in over else VARIANT_LEVELS
        if fn not in functions or not set(by) >= set(levels):
            continue
        weights = None
        if over and isinstance(over.get(fn), dict) and len(levels) > 1:
            weights = {lv: over[fn][lv] * glibc.get(fn, {}).get(lv, 1.0) for lv in levels}
        out.append(LevelScore(candidate, fn, {lv: by[lv] for lv in levels}, levels, weights))
    return out


def choose_by_levels(name: str, function: str, scores: list[LevelScore], default) -> Choice:
    """One tunable (a function's variant, or a threshold) by the rule above,
    from its candidates' scores on `function`."""
    mine = [sc for sc in scores if sc.function == function]
    by = {sc.candidate: sc for sc in mine}
    if default not in by:
        return Choice(name, default, default, f"{name}: the default {fmt_candidate(default)} was not measured",
                      False)
    floor_kept = [sc for sc in mine if sc.worst[1] >= VARIANT_FLOOR]
    field = floor_kept or mine
    best = max(field, key=lambda sc: sc.geomean)
    inc = by[default]
    board = "; ".join(sc.text() for sc in sorted(mine, key=lambda sc: -sc.geomean))
    over = ", ".join(best.over)
    floor = (f"every level at {VARIANT_FLOOR:.2f}x glibc or better" if floor_kept else
             f"none keeps every level at {VARIANT_FLOOR:.2f}x glibc (the best's worst: "
             f"{best.worst[0]} {best.worst[1]:.2f}), so the best geometric mean of all")
    what = name if name == function else f"{name} ({function})"
    if best.candidate != default and (best.geomean >= inc.geomean * (1 + MARGIN)
                                      or (floor_kept and inc not in floor_kept)):
        return Choice(name, default, best.candidate,
                      f"{what}: {best.label()} (default {inc.label()}), the best geometric mean over "
                      f"{over} with {floor}: {board}", True)
    return Choice(name, default, default,
                  f"{what}: {inc.label()} kept ({floor}; another must beat it by {MARGIN:.0%}): {board}", False)


def decide_variants(scores: list[LevelScore], defaults: dict) -> list[Choice]:
    """defaults: function -> the variant the library runs by default; the
    functions with scores only."""
    measured = {sc.function for sc in scores}
    return [choose_by_levels(fn, fn, scores, defaults[fn])
            for fn in VARIANT_FUNCTIONS if fn in defaults and fn in measured]


def level_candidates(name: str, incumbent: Optional[int]) -> list:
    """A LEVEL_TUNABLES threshold's candidates: its sizes below the
    incumbent (the value the timed stage left), and the incumbent."""
    below = [c for c in LEVEL_TUNABLES[name][1] if incumbent is None or c < incumbent]
    return below + [incumbent]


def level_incumbents(choices: list[Choice], defaults: dict) -> dict:
    """LEVEL_TUNABLES' values before their stage: the timed stage's choice,
    else the default."""
    out = {name: defaults.get(name) for name in LEVEL_TUNABLES}
    out.update({c.name: c.value for c in choices if c.name in LEVEL_TUNABLES})
    return out


def decide_levels(scores: dict, choices: list[Choice], defaults: dict) -> tuple[list[Choice], list[Choice]]:
    """scores: tunable -> its candidates' LevelScores; choices: the timed
    stages' (a LEVEL_TUNABLES threshold there is the incumbent).  Returns
    (this stage's decisions, the choices with them merged: a threshold it
    moves is replaced, one it keeps says both whys)."""
    incumbents = level_incumbents(choices, defaults)
    decided, merged = [], list(choices)
    for name, (fn, _) in LEVEL_TUNABLES.items():
        if not scores.get(name):
            continue
        c = choose_by_levels(name, fn, scores[name], incumbents[name])
        decided.append(c)
        prev = next((i for i, x in enumerate(merged) if x.name == name), None)
        if prev is not None and not c.moved:
            p = merged[prev]
            merged[prev] = Choice(name, p.default, p.value, f"{p.why}; over the levels, {c.why}", p.moved)
            continue
        row = Choice(name, defaults.get(name), c.value, c.why, c.value != defaults.get(name))
        if prev is None:
            merged.append(row)
        else:
            merged[prev] = row
    return decided, merged
