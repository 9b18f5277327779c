"""Comparing two runs, measurement by measurement, against the noise those
runs themselves measured.

Noise: every measurement carries the spread of its samples (min and max
around its value).  A change from run A to run B is *beyond the noise* when
the two sample ranges do not overlap ([minA, maxA] vs [minB, maxB]) and the
change is larger than both NOISE_FLOOR and the larger relative half-spread
of the two — so a measurement with one sample (min = max) still needs a
real difference, and a noisy one a large one.  Interleaved ratios (e.g. zero vs
non-zero fill, a variant vs glibc) are compared the same way with their
ratio_min/ratio_max: a ratio is immune to the machine's drift between the
runs, which makes it the sharper test.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Optional

NOISE_FLOOR = 0.03   # 3%: below this, no change is called, whatever the spread says

HIGHER_IS_BETTER_HINTS = ("/s", "per_s", "per_cpu", "throughput", "improvement", "speedup")
LOWER_IS_BETTER_UNITS = ("ns", "us", "µs", "ms", "s", "cycles", "cycles/byte", "µs/MB", "us/MB", "ns/call")


def higher_is_better(metric: str, unit: str) -> Optional[bool]:
    text = f"{metric} {unit}".lower()
    if any(h in text for h in HIGHER_IS_BETTER_HINTS):
        return True
    if (unit or "") in LOWER_IS_BETTER_UNITS or (unit or "").startswith(("ns", "us", "µs", "ms", "cycles")):
        return False
    return None


def key_of(m: dict) -> tuple:
    return (m["experiment"], m["series"], json.dumps(m["params"], sort_keys=True), m["metric"])


def params_text(params: dict) -> str:
    from memkit.fingerprint import fmt_size
    parts = []
    for k, v in sorted(params.items()):
        parts.append(f"{k}={fmt_size(v)}" if k in ("size", "bytes", "region") and isinstance(v, (int, float))
                     else f"{k}={v}")
    return " ".join(parts)


@dataclass
class Change:
    experiment: str
    series: str
    params: dict
    metric: str        # the metric, or "ratio to X" for an interleaved ratio
    unit: str
    a: float
    b: float
    ratio: float       # b / a
    spread: float      # the larger relative half-spread of the two (the noise seen)
    beyond: bool       # beyond the noise
    verdict: str       # "better", "worse", "changed", "same"


def _rel_halfspread(value, lo, hi) -> float:
    if not value or lo is None or hi is None:
        return 0.0
    return abs(hi - lo) / (2 * abs(value))


def judge(a, a_lo, a_hi, b, b_lo, b_hi, better_up: Optional[bool]) -> tuple[float, float, bool, str]:
    """(ratio b/a, noise, beyond the noise, verdict) for one pair of numbers."""
    if a is None or b is None or a == 0:
        return math.nan, 0.0, False, "same"
    ratio = b / a
    a_lo, a_hi = (a if a_lo is None else a_lo), (a if a_hi is None else a_hi)
    b_lo, b_hi = (b if b_lo is None else b_lo), (b if b_hi is None else b_hi)
    noise = max(_rel_halfspread(a, a_lo, a_hi), _rel_halfspread(b, b_lo, b_hi))
    overlap = not (b_lo > a_hi or b_hi < a_lo)
    beyond = not overlap and abs(ratio - 1) > max(NOISE_FLOOR, noise)
    if not beyond:
        return ratio, noise, False, "same"
    if better_up is None:
        return ratio, noise, True, "changed"
    return ratio, noise, True, "better" if (ratio > 1) == better_up else "worse"


def compare_measurements(ma: list[dict], mb: list[dict]) -> tuple[list[Change], int, int]:
    """(changes for every measurement in both runs, count only in A, count only in B)."""
    a_by = {key_of(m): m for m in ma}
    b_by = {key_of(m): m for m in mb}
    changes = []
    for k, a in a_by.items():
        b = b_by.get(k)
        if b is None:
            continue
        up = higher_is_better(a["metric"], a.get("unit") or "")
        r, noise, beyond, verdict = judge(a["value"], a.get("min"), a.get("max"),
                                          b["value"], b.get("min"), b.get("max"), up)
        changes.append(Change(a["experiment"], a["series"], a["params"], a["metric"], a.get("unit") or "",
                              a["value"], b["value"], r, noise, beyond, verdict))
        if a.get("ratio") is not None and b.get("ratio") is not None:
            # A higher ratio means: this series gained on what it is compared against.
            r, noise, beyond, verdict = judge(a["ratio"], a.get("ratio_min"), a.get("ratio_max"),
                                              b["ratio"], b.get("ratio_min"), b.get("ratio_max"), None)
            changes.append(Change(a["experiment"], a["series"], a["params"], f"ratio to {a.get('ratio_to')}",
                                  "x", a["ratio"], b["ratio"], r, noise, beyond, verdict))
    only_a = sum(1 for k in a_by if k not in b_by)
    only_b = sum(1 for k in b_by if k not in a_by)
    return changes, only_a, only_b


@dataclass
class ExperimentSummary:
    experiment: str
    compared: int
    better: int
    worse: int
    changed: int
    median_noise: float
    geomean_ratio: float


def summarize(changes: list[Change]) -> list[ExperimentSummary]:
    out = []
    for exp in dict.fromkeys(c.experiment for c in changes):
        cs = [c for c in changes if c.experiment == exp and not c.metric.startswith("ratio to ")]
        all_cs = [c for c in changes if c.experiment == exp]
        noises = sorted(c.spread for c in all_cs)
        logs = [math.log(c.ratio) for c in cs if c.ratio and c.ratio > 0 and not math.isnan(c.ratio)]
        out.append(ExperimentSummary(
            exp, len(cs),
            sum(c.verdict == "better" for c in all_cs), sum(c.verdict == "worse" for c in all_cs),
            sum(c.verdict == "changed" for c in all_cs),
            noises[len(noises) // 2] if noises else 0.0,
            math.exp(sum(logs) / len(logs)) if logs else math.nan))
    return out
