"""Comparing two runs, measurement by measurement, on their raw samples.

One headline metric per measurement: an experiment that reports the same
thing twice (ns per call and GB/s of one size) is compared on the metric it
wrote first, so a change is never counted twice through its reciprocal.

A change is decided in three steps:

1. The samples: one value per process where the measurement ran in several
   processes (that spread includes code and data placement, which moves
   small sizes by up to ±15% between processes of one binary), else one per
   round.  A record of the old format has no samples: its min, median and
   max stand in for them.
2. A bootstrap interval of the ratio of medians B/A (BOOTSTRAP resamples,
   fixed seed) and its two-sided p-value, corrected for the number of
   measurements compared by Benjamini-Hochberg (false discovery rate
   FDR).
3. A minimum effect: MIN_EFFECT on per-process samples; PLACEMENT_EFFECT on
   per-round samples, which cannot see the placement noise between
   processes and so are read conservatively.

A change is flagged when its corrected p-value is below FDR and its ratio is
beyond the minimum effect; it is "better" or "worse" by the record's own
`better` field ("changed" where an old record does not say).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Optional

from memkit import records

BOOTSTRAP = 2000
FDR = 0.05
MIN_EFFECT = 0.05
PLACEMENT_EFFECT = 0.20
SEED = 20240601


def params_text(params: dict) -> str:
    from memkit.fingerprint import fmt_size
    parts = []
    for k, v in sorted(params.items()):
        parts.append(f"{k}={fmt_size(v)}" if k in ("size", "bytes", "region") and isinstance(v, (int, float))
                     else f"{k}={v}")
    return " ".join(parts)


def thing_key(m: dict) -> tuple:
    """What was measured: experiment, series, params (not the metric)."""
    return (m["experiment"], m["series"], json.dumps(m["params"], sort_keys=True))


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
    """(samples, "process" | "round" | "range")."""
    if m.get("process_samples") and len(m["process_samples"]) >= 2:
        return list(m["process_samples"]), "process"
    if m.get("sample_values"):
        return list(m["sample_values"]), "round"
    vals = [v for v in (m.get("min"), m.get("median") if m.get("median") is not None else m.get("value"),
                        m.get("max")) if v is not None]
    return vals, "range"


def bootstrap_ratio(a: list[float], b: list[float], rng) -> tuple[float, float, float, float]:
    """(median(b)/median(a), interval low, high (95%), two-sided p of ratio = 1)."""
    import numpy as np
    a_arr, b_arr = np.asarray(a, float), np.asarray(b, float)
    point = float(np.median(b_arr) / np.median(a_arr))
    ia = rng.integers(0, len(a_arr), (BOOTSTRAP, len(a_arr)))
    ib = rng.integers(0, len(b_arr), (BOOTSTRAP, len(b_arr)))
    ma = np.median(a_arr[ia], axis=1)
    mb = np.median(b_arr[ib], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = mb / ma
    r = r[np.isfinite(r)]
    if len(r) == 0:
        return point, math.nan, math.nan, 1.0
    lo, hi = (float(x) for x in np.quantile(r, [0.025, 0.975]))
    below, above = float(np.mean(r <= 1.0)), float(np.mean(r >= 1.0))
    p = min(1.0, 2 * max(min(below, above), 1.0 / (BOOTSTRAP + 1)))
    return point, lo, hi, p


def benjamini_hochberg(ps: list[float]) -> list[float]:
    """Adjusted p-values (q-values), same order as ps."""
    n = len(ps)
    order = sorted(range(n), key=lambda i: ps[i])
    q = [1.0] * n
    running = 1.0
    for rank in range(n, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * n / rank)
        q[i] = running
    return q


@dataclass
class Change:
    experiment: str
    series: str
    params: dict
    metric: str
    unit: str
    a: float               # the headline value in run A and B
    b: float
    ratio: float           # median of B's samples / median of A's
    low: float             # 95% bootstrap interval of ratio
    high: float
    p: float
    q: float = 1.0         # p corrected (Benjamini-Hochberg)
    basis: str = "round"   # what the samples were: "process", "round", "range"
    better: Optional[str] = None   # "lower" or "higher" (the record's)
    min_effect: float = PLACEMENT_EFFECT
    flagged: bool = False
    direction: str = "same"        # "better", "worse", "changed", "same"

    def as_json(self) -> dict:
        def num(x):
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else x
        return {"experiment": self.experiment, "series": self.series, "params": self.params,
                "metric": self.metric, "unit": self.unit, "direction": self.direction,
                "a": num(self.a), "b": num(self.b), "ratio": num(self.ratio),
                "interval": [num(self.low), num(self.high)], "change_pct": num(100 * (self.ratio - 1)), "q": self.q, "samples": self.basis,
                "min_effect": self.min_effect}


@dataclass
class Comparison:
    changes: list[Change] = field(default_factory=list)   # every headline measurement in both runs
    only_a: int = 0
    only_b: int = 0

    @property
    def flagged(self) -> list[Change]:
        return [c for c in self.changes if c.flagged]


def compare_measurements(ma: list[dict], mb: list[dict]) -> Comparison:
    import numpy as np
    rng = np.random.default_rng(SEED)
    a_by = headline([records.normalized(m) for m in ma])
    b_by = headline([records.normalized(m) for m in mb])
    out = Comparison(only_a=sum(1 for k in a_by if k not in b_by), only_b=sum(1 for k in b_by if k not in a_by))
    for k, a in a_by.items():
        b = b_by.get(k)
        if b is None or b["metric"] != a["metric"]:
            continue
        sa, basis_a = samples_of(a)
        sb, basis_b = samples_of(b)
        if not sa or not sb or min(sa) <= 0 or min(sb) <= 0:
            continue
        ratio, lo, hi, p = bootstrap_ratio(sa, sb, rng)
        basis = basis_a if basis_a == basis_b else "range" if "range" in (basis_a, basis_b) else "round"
        out.changes.append(Change(a["experiment"], a["series"], a["params"], a["metric"], a.get("unit") or "",
                                  a["value"], b["value"], ratio, lo, hi, p, basis=basis,
                                  better=records.better_direction(a),
                                  min_effect=MIN_EFFECT if basis == "process" else PLACEMENT_EFFECT))
    for c, q in zip(out.changes, benjamini_hochberg([c.p for c in out.changes])):
        c.q = q
        c.flagged = q < FDR and abs(math.log(c.ratio)) > math.log1p(c.min_effect)
        if c.flagged:
            if c.better is None:
                c.direction = "changed"
            else:
                c.direction = "better" if (c.ratio < 1) == (c.better == "lower") else "worse"
    return out


@dataclass
class ExperimentSummary:
    experiment: str
    compared: int
    better: int
    worse: int
    changed: int
    geomean_ratio: float   # of the headline metrics, each turned so that > 1 = faster in B


def speedup_of(c: Change) -> Optional[float]:
    """The change as a speed-up of B over A (> 1: B is faster)."""
    if c.better is None or not c.ratio:
        return None
    return 1 / c.ratio if c.better == "lower" else c.ratio


def summarize(changes: list[Change]) -> list[ExperimentSummary]:
    out = []
    for exp in dict.fromkeys(c.experiment for c in changes):
        cs = [c for c in changes if c.experiment == exp]
        logs = [math.log(s) for s in map(speedup_of, cs) if s and s > 0]
        out.append(ExperimentSummary(
            exp, len(cs), sum(c.direction == "better" for c in cs), sum(c.direction == "worse" for c in cs),
            sum(c.direction == "changed" for c in cs), math.exp(sum(logs) / len(logs)) if logs else math.nan))
    return out
