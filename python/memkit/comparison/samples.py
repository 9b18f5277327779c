# SPDX-License-Identifier: Apache-2.0
"""A measurement's numbers as compare reads them: what was measured (its key,
a thing's headline metric, its baseline's key, its params as text), its
samples (per process, per round or a range) and its paired speed-ups over a
baseline; the smallest change its samples can show.  Deciding which changes
count is memkit.comparison.compare's."""

from __future__ import annotations

import json
import math
import statistics
from typing import Optional

from memkit.judging.judge import (MIN_EFFECT, PLACEMENT_EFFECT, PROCESSES_MIN, SHORT_CALL_NS,
                                  SHORT_CALL_PROCESS_EFFECT)
from memkit.results import records


def params_text(params: dict) -> str:
    from memkit.lab.sizes import fmt_size
    parts = []
    for k, v in sorted(params.items()):
        parts.append(f"{k}={fmt_size(v)}" if k in ("size", "bytes", "region", "grain", "ws_bytes") and isinstance(v, (int, float))
                     else f"{k}={v}")
    return " ".join(parts)


def _key(experiment, series, params) -> tuple:
    return (experiment, series, json.dumps(params, sort_keys=True))


def thing_key(m: dict) -> tuple:
    """What was measured: experiment, series, params (not the metric)."""
    return _key(m["experiment"], m["series"], m["params"])


def headline(ms: list[dict]) -> dict:
    """{thing_key: measurement}: each thing's first metric, preferring its
    series' first metric so a series keeps one headline across sizes."""
    by_thing: dict = {}
    series_first: dict = {}
    for m in ms:
        series_first.setdefault((m["experiment"], m["series"]), m["metric"])
        by_thing.setdefault(thing_key(m), []).append(m)
    out = {}
    for k, cands in by_thing.items():
        pref = series_first[(k[0], k[1])]
        out[k] = next((m for m in cands if m["metric"] == pref), cands[0])
    return out


def samples_of(m: dict) -> tuple[list[float], str]:
    """(samples, "process" | "round" | "range"): one value per process where
    there are at least PROCESSES_MIN (two say nothing about the spread
    between processes), else the rounds (of every process, pooled)."""
    if m.get("process_samples") and len(m["process_samples"]) >= PROCESSES_MIN:
        return list(m["process_samples"]), "process"
    if m.get("sample_values"):
        return list(m["sample_values"]), "round"
    vals = [v for v in (m.get("min"), m.get("median") if m.get("median") is not None else m.get("value"),
                        m.get("max")) if v is not None]
    return vals, "range"


def paired_speedups(m: dict) -> Optional[list[float]]:
    """The record's per-round speed-ups over another measurement, or None:
    no baseline, the baseline is the measurement itself, or every speed-up
    is 1 (the series is the baseline)."""
    ratios, base = m.get("ratios"), m.get("baseline")
    if not ratios or not base or min(ratios) <= 0 or all(r == 1.0 for r in ratios):
        return None
    if base["series"] == m["series"] and base["params"] == m["params"]:
        return None
    return list(ratios)


def paired_samples(m: dict) -> Optional[list[float]]:
    """The paired speed-ups as samples_of takes values: one per process (the
    median of its rounds, as the record's process_ratios gives it)
    where there are at least PROCESSES_MIN, else the rounds.  Pooled rounds
    would hide that code placement can flip a short call between two speeds
    for a whole process: 1.33x glibc in two processes of three, 0.89x in the
    third, and one process more or less of each sort moves the median 1.5x."""
    ratios = paired_speedups(m)
    if ratios is not None and m.get("process_ratios") and len(m["process_ratios"]) >= PROCESSES_MIN:
        return list(m["process_ratios"])
    # Records written before process_ratios: the lab pools each process's
    # rounds in one block, in process order.
    processes = len(m.get("process_samples") or ())
    if ratios is None or processes < PROCESSES_MIN or len(ratios) % processes:
        return ratios
    n = len(ratios) // processes
    return [statistics.median(ratios[i * n:(i + 1) * n]) for i in range(processes)]


def baseline_key(m: dict) -> tuple:
    return _key(m["experiment"], m["baseline"]["series"], m["baseline"]["params"])


# ---- the smallest change that counts, by what the samples can show ----

TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "ns/call": 1.0}


def _short_call(m: dict) -> bool:
    scale = TIME_UNITS_NS.get((m.get("unit") or "").strip())
    return scale is not None and m.get("value") is not None and m["value"] * scale < SHORT_CALL_NS


def min_effect(m: dict, basis: str) -> float:
    """The smallest change called for a measurement alone (docs/judging.md, step 5)."""
    short = _short_call(m)
    if basis == "process":
        return SHORT_CALL_PROCESS_EFFECT if short else MIN_EFFECT
    if short:
        return math.inf   # not judged alone: placement noise between processes
    return PLACEMENT_EFFECT


def between_run_effect(m: dict) -> float:
    """The smallest change of one measurement that counts where its noise is
    read from between runs (a band, step 7): what placement moves a process
    by, which that noise includes."""
    return SHORT_CALL_PROCESS_EFFECT if _short_call(m) else MIN_EFFECT


def paired_log_change(a: dict, b: Optional[dict]) -> Optional[float]:
    """The log of b's median paired speed-up over a's, in the metric's
    better direction (> 0: b better); None where the two cannot be paired
    (no b, no paired samples, other baselines, a sample not positive)."""
    if b is None:
        return None
    sa, sb = paired_samples(a), paired_samples(b)
    better = records.better_direction(a)
    if sa is None or sb is None or better is None or a["baseline"] != b["baseline"] \
            or min(sa) <= 0 or min(sb) <= 0:
        return None
    change = math.log(statistics.median(sb) / statistics.median(sa))
    return -change if better == "lower" else change
