# SPDX-License-Identifier: Apache-2.0
"""Evidence files: what `memkit tune` measured, as one JSON document
(docs/evidence.md has the format), and the row defaults it implies,
re-derived with tune's own deciders (tune.DECIDERS): a row of the strategy
table and its evidence file cannot drift apart unseen
(tests/python/test_evidence.py).

Also the one decision whether this CPU runs a measured row (unmeasured_note),
which `memkit env`, `memkit try` and the report print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError
from memkit.store.outdir import write_file
from memkit.tuning import catalogue, level_choice, tune

FORMAT = "memkit-tune-evidence"
VERSION = 1
MEASURED = "memkit tune"                  # source: written by tune from its timings
TRANSCRIBED = "transcribed from text"     # source: picks and decisions copied from tune's printout


class EvidenceError(MemkitError):
    pass


# ---- writing, from a tune run ----

def cpu_of(fp: dict) -> dict:
    """The CPU as the fingerprint describes it, and the row it ran."""
    keys = ("vendor", "family", "model", "stepping", "microcode", "cpu_model", "cache", "isa",
            "strategy", "strategy_matched", "variants", "tunables", "profile", "kernel", "glibc",
            "memkit_version", "memkit_commit", "cpus_online")
    return {k: fp.get(k) for k in keys}


def _opt(v):
    return None if v is None else int(v)


def family_record(grid: list[int], times: tune.Times, made: dict) -> dict:
    """One family's grid, every cell's per-round times per strategy, every pick."""
    by_cell: dict = {}
    for cand, cells in times.items():
        strategy = cand.split(":", 1)[1]
        for (op, size), ns in cells.items():
            by_cell.setdefault((op, size), {})[strategy] = [float(x) for x in ns]
    return {
        "grid": list(grid),
        "strategies": sorted({c.split(":", 1)[1] for c in times}),
        "cells": [{"op": op, "size": size, "ns": ns} for (op, size), ns in sorted(by_cell.items())],
        "picks": [pick_record(ops, p) for (ops, _), p in made.items()],
    }


def pick_record(ops, p: tune.Pick) -> dict:
    ev = p.evidence
    return {"ops": list(ops), "size": p.size, "default": p.default, "chosen": p.chosen,
            "evidence": None if ev is None else {
                "challenger": ev.challenger, "incumbent": ev.incumbent, "speedups": ev.speedups,
                "median": ev.median, "wins": ev.wins, "rounds": ev.rounds, "p": ev.p_faster}}


def decision_record(family: str, c: tune.Choice) -> dict:
    return {"family": family, "tunable": c.name, "default": c.default, "value": c.value,
            "moved": c.moved, "why": c.why}


def document(fp: dict, rule: dict, defaults: dict, families: dict, decisions: list,
             paths: catalogue.Paths, source: str = MEASURED, note: str = "",
             variants: list = (), levels: Optional[dict] = None) -> dict:
    return {
        "format": FORMAT, "version": VERSION, "source": source, "note": note,
        "cpu": cpu_of(fp),
        "rule": dict(rule, alpha=tune.ALPHA, margin=tune.MARGIN),
        "defaults": {k: _opt(v) for k, v in defaults.items()},
        "families": families,
        "decisions": decisions,
        "paths": paths_record(paths),
        "variants": {"levels": list(level_choice.VARIANT_LEVELS), "floor": level_choice.VARIANT_FLOOR,
                     "defaults": {fn: (fp.get("variants") or {}).get(fn) for fn in level_choice.VARIANT_FUNCTIONS},
                     "scores": [{"variant": sc.candidate, "function": sc.function, "levels": sc.levels}
                                for sc in variants]},
        # level_choice.LEVEL_TUNABLES: each threshold's candidates, scored with the chosen variants
        "levels": {name: [{"candidate": sc.candidate, "function": sc.function, "levels": sc.levels}
                          for sc in scores] for name, scores in (levels or {}).items()},
    }


def paths_record(paths: catalogue.Paths) -> list:
    """The library's answers: which strategy a cell runs under a set of
    tunables (catalogue.Paths), so the file re-derives without the library."""
    return [{"tunables": spec, "op": op, "size": size, "path": path}
            for (spec, op, size), path in sorted(paths.known.items())]


def is_ours(path: Path) -> bool:
    """An evidence file (memkit.store.outdir's rule: tune replaces only its own)."""
    try:
        load(path)
        return True
    except EvidenceError:
        return False


def write(path: Path, doc: dict) -> None:
    write_file(path, json.dumps(doc, indent=1) + "\n", "the evidence", is_ours)


def load(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise EvidenceError(f"{path}: not an evidence file ({e})")
    if doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise EvidenceError(f"{path}: not a {FORMAT} file of version {VERSION}")
    return doc


# ---- re-deriving the defaults, with tune's own deciders ----

class RecordedPaths(catalogue.Paths):
    """The library's answers as the evidence recorded them."""

    def __init__(self, doc: dict):
        super().__init__(None)
        self.known = {(p["tunables"], p["op"], p["size"]): p["path"] for p in doc["paths"]}

    def ask(self, spec, op, sizes):
        raise EvidenceError(f"the evidence does not say which path {op} takes at {sizes[0]} B "
                            f"under {spec}")


class RecordedPicks:
    """The picks a transcribed file recorded (it has no per-round times).
    A confident pick's per-round speed-ups are not in the text: each round
    is taken at the rule's floor, 1 + MARGIN, which only weighs windows by
    how many sizes they move (tune.place)."""

    def __init__(self, fam: dict):
        self.fam = fam
        self.by = {(tuple(p["ops"]), p["size"]): p for p in fam["picks"]}

    def names(self, family: str) -> list[str]:
        return list(self.fam["strategies"])

    def __call__(self, family, names, ops, size, default) -> tune.Pick:
        p = self.by.get((tuple(ops), size))
        if p is None:
            raise EvidenceError(f"the evidence has no pick for {'+'.join(ops)} at {size} B")
        if p["default"] != default:
            raise EvidenceError(f"{'+'.join(ops)} at {size} B: the evidence's default ran {p['default']}, "
                                f"its recorded paths say {default}")
        if p["chosen"] == default:
            return tune.Pick(size, default, default, None)
        e = p.get("evidence") or {}
        rounds = int(e.get("rounds") or 0)
        speedups = e.get("speedups") or [1 + tune.MARGIN] * rounds
        ev = tune.Evidence(f"{family}:{p['chosen']}", f"{family}:{default}", size, list(speedups))
        return tune.Pick(size, default, p["chosen"], ev)


def times_of(family: str, fam: dict) -> tune.Times:
    times: dict = {}
    for c in fam["cells"]:
        for strategy, ns in (c.get("ns") or {}).items():
            times.setdefault(f"{family}:{strategy}", {})[(c["op"], c["size"])] = ns
    return times


def derive(doc: dict, paths: Optional[catalogue.Paths] = None) -> list[tuple[str, tune.Choice]]:
    """(family, Choice) for every tunable tune decides, from the evidence
    alone: its times through tune's pick where it has them, else its
    recorded picks; then tune's windows.  paths: the library's answers
    (default: the ones the file recorded)."""
    defaults = dict(doc["defaults"])
    paths = paths or RecordedPaths(doc)
    out = []
    for family, decide in tune.DECIDERS.items():
        fam = doc["families"].get(family)
        if not fam:
            continue
        times = times_of(family, fam)
        picks_of = tune.TimedPicks(times) if times else RecordedPicks(fam)
        got, _ = decide(picks_of, fam["grid"], defaults, paths)
        out += [(family, c) for c in got]
    var = doc.get("variants") or {}
    if var.get("scores"):
        scores = [level_choice.LevelScore(sc["variant"], sc["function"], sc["levels"]) for sc in var["scores"]]
        out += [("variant", c) for c in level_choice.decide_variants(scores, var["defaults"])]
    lv = {name: [level_choice.LevelScore(sc["candidate"], sc["function"], sc["levels"]) for sc in scores]
          for name, scores in (doc.get("levels") or {}).items()}
    if lv:
        decided, _ = level_choice.decide_levels(lv, [c for _, c in out], defaults)
        out += [("levels", c) for c in decided]
    return out


def derived_values(doc: dict) -> dict:
    """tunable -> (value, family): what the evidence implies (a later stage's
    decision over an earlier one's)."""
    return {c.name: (c.value, family) for family, c in derive(doc)}


# ---- a row against its evidence ----

CACHE_RULES = ("L2", "L3", "V/16")


def neighbours(grid: list[int], value: int) -> set:
    """The grid points either side of value (itself if it is one)."""
    below = [g for g in grid if g <= value]
    above = [g for g in grid if g >= value]
    return {x for x in (below[-1] if below else None, above[0] if above else None) if x is not None}


def agrees(implied: Optional[int], row_value: Optional[int], rule_text: str, grid: list[int]) -> bool:
    """A fixed size must equal what the evidence implies.  A rule of the
    caches (L3/2, L2, ...) evaluated on the evidence's CPU agrees when the
    evidence's value is one of the grid points either side of it: the grid
    cannot place a threshold closer than that."""
    if implied == row_value:
        return True
    if implied is None or row_value is None or not any(r in rule_text for r in CACHE_RULES):
        return False
    return implied in neighbours(grid, row_value)


def row_mismatches(doc: dict, row: dict, rules: dict) -> list[str]:
    """How a row (memkit-tunables --cpu on the evidence's CPU: its
    defaults there and variant per function; rules: the row's rule texts)
    differs from what the evidence implies; [] when it does not."""
    out = []
    derived = derived_values(doc)
    for name, (value, family) in derived.items():
        if family == "variant" or name not in row["defaults"]:
            continue   # the variants below; not a per-CPU tunable (the pool's)
        grid = ((doc["families"].get(family) or {}).get("grid")
                or list(level_choice.LEVEL_TUNABLES.get(name, (None, ()))[1]))
        if not agrees(value, row["defaults"][name], rules.get(name, ""), grid):
            out.append(f"{name}: the row gives {row['defaults'][name]} ({rules.get(name, '?')}), "
                       f"the evidence implies {value}")
    chosen = {name: value for name, (value, family) in derived.items() if family == "variant"}
    # tune chose each function's variant: the row's must be that one; else the one measured
    implied, how = (chosen, "implies") if chosen else (doc["cpu"].get("variants") or {}, "measured")
    for fn, runs in (row.get("variants") or {}).items():
        if runs and fn in implied and implied[fn] != runs:
            out.append(f"variant: the row runs {fn} {runs}, the evidence {how} {implied[fn]}")
    return out


# ---- is this CPU's row measured: the one place that decides ----

def unmeasured_note(fp: dict) -> Optional[str]:
    """One line when the CPU ran a row without an evidence file and no
    profile tuned on it; None when measured (or the fingerprint predates
    the flag)."""
    if fp.get("strategy_measured") is not False or fp.get("profile"):
        return None
    return (f"this CPU runs strategy row {fp.get('strategy', '?')}, which is unmeasured (no evidence file, "
            "docs/evidence.md): `memkit tune` (about a minute) measures its thresholds here")
