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
3. The runs' own noise between them (an empirical null): on a shared
   machine a whole run can be 20% slower than the one before, and each
   measurement scatters around that by more than its rounds suggest.  Over
   the measurements of one experiment (at least NULL_MIN of them), the
   median log-ratio is the experiment's shift and 1.4826 x their median
   absolute deviation its scatter; a measurement's p-value is also taken
   against that null, a Student t with 3 degrees of freedom (a busy
   machine's noise has heavy tails: one descheduled round moves a RAM-size
   fill 10x), and the larger of the two p-values counts.  A record without
   raw samples (the old format) must also leave its own min..max range, and
   its p-value is at least that of all its rounds falling apart by chance
   (3 rounds against 3: 0.1, so an old quick run flags nothing).
   Measurements are judged against the shift (a machine-wide slowdown is
   reported once, per experiment, not as hundreds of changes).
4. A minimum effect on the ratio against the shift: MIN_EFFECT on
   per-process samples (SHORT_CALL_PROCESS_EFFECT for times under
   SHORT_CALL_NS, which move by up to 15% between processes);
   PLACEMENT_EFFECT on per-round samples, which cannot
   see the placement noise between processes and so are read conservatively.
   A time under SHORT_CALL_NS (by the record's unit) with per-round samples
   only is not judged at all: two processes of one binary were seen 1.8x
   apart there (memset-sizes avx2, 32 bytes, 1.35 vs 2.44 ns, AMD EPYC Zen 4,
   busy machine), more than any change memkit could make.
   When either run recorded a busy machine (memkit.load), every minimum
   effect is multiplied by BUSY_FACTOR: on a 2-CPU VM with other work
   running, identical runs were seen 22% apart on 68 ns calls.

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
SHORT_CALL_NS = 50.0
SHORT_CALL_PROCESS_EFFECT = 0.15
PROCESSES_MIN = 3
BUSY_FACTOR = 2.0
TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "ns/call": 1.0}
SEED = 20240601
NULL_MIN = 8


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


def min_effect(m: dict, basis: str) -> float:
    """The smallest change called for a measurement (see the module's step 4)."""
    scale = TIME_UNITS_NS.get((m.get("unit") or "").strip())
    short = scale is not None and m.get("value") is not None and m["value"] * scale < SHORT_CALL_NS
    if basis == "process":
        return SHORT_CALL_PROCESS_EFFECT if short else MIN_EFFECT
    if short:
        return math.inf   # not judged: placement noise between processes
    return PLACEMENT_EFFECT


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


def separation_p(n: int, m: int) -> float:
    """Two-sided p of n and m samples falling completely apart by chance."""
    return min(1.0, 2 / math.comb(n + m, n))


def t3_two_sided(t: float) -> float:
    """P(|T| >= t) for Student's t with 3 degrees of freedom (closed form)."""
    u = abs(t) / math.sqrt(3)
    return max(0.0, 1 - (2 / math.pi) * (u / (1 + u * u) + math.atan(u)))


def _median(sorted_xs: list[float]) -> float:
    n = len(sorted_xs)
    return (sorted_xs[n // 2] + sorted_xs[(n - 1) // 2]) / 2


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
    shift: float = 1.0     # the experiment's shift (median ratio over its measurements)
    q: float = 1.0         # p corrected (Benjamini-Hochberg)
    basis: str = "round"   # what the samples were: "process", "round", "range"
    better: Optional[str] = None   # "lower" or "higher" (the record's)
    min_effect: float = PLACEMENT_EFFECT
    flagged: bool = False
    direction: str = "same"        # "better", "worse", "changed", "same"
    ranges: tuple = ()             # ((min A, max A), (min B, max B))
    disjoint: bool = True          # for records without samples: B's range is clear of A's

    def as_json(self) -> dict:
        def num(x):
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else x
        return {"experiment": self.experiment, "series": self.series, "params": self.params,
                "metric": self.metric, "unit": self.unit, "direction": self.direction,
                "a": num(self.a), "b": num(self.b), "ratio": num(self.ratio),
                "interval": [num(self.low), num(self.high)], "change_pct": num(100 * (self.ratio - 1)),
                "experiment_shift": num(self.shift), "vs_shift": num(self.ratio / self.shift), "q": self.q, "samples": self.basis,
                "min_effect": num(self.min_effect) if self.judged else None}

    @property
    def judged(self) -> bool:
        return not math.isinf(self.min_effect)


@dataclass
class Comparison:
    changes: list[Change] = field(default_factory=list)   # every headline measurement in both runs
    only_a: int = 0
    only_b: int = 0
    shifts: dict = field(default_factory=dict)             # experiment -> its shift (B/A)
    scatter: dict = field(default_factory=dict)            # experiment -> its scatter (robust SD of log B/A)

    @property
    def flagged(self) -> list[Change]:
        return [c for c in self.changes if c.flagged]


def compare_measurements(ma: list[dict], mb: list[dict], busy: bool = False) -> Comparison:
    """Every headline measurement in both runs, judged; `busy`: either run
    was made on a busy machine."""
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
        if basis == "range":
            # No raw samples: at best the rounds were all apart, whose
            # chance is the exact Mann-Whitney p of complete separation.
            p = max(p, separation_p(a.get("samples") or 3, b.get("samples") or 3))
        out.changes.append(Change(a["experiment"], a["series"], a["params"], a["metric"], a.get("unit") or "",
                                  a["value"], b["value"], ratio, lo, hi, p, basis=basis,
                                  better=records.better_direction(a),
                                  min_effect=min_effect(a, basis) * (BUSY_FACTOR if busy else 1.0),
                                  ranges=((min(sa), max(sa)), (min(sb), max(sb)))))
    for c in out.changes:
        if c.basis == "range":
            a, b = c.ranges
            c.disjoint = b[0] > a[1] * c.shift or b[1] < a[0] * c.shift
    for exp in dict.fromkeys(c.experiment for c in out.changes):
        cs = [c for c in out.changes if c.experiment == exp]
        if len(cs) < NULL_MIN:
            continue
        logs = sorted(math.log(c.ratio) for c in cs)
        center = _median(logs)
        scale = 1.4826 * _median(sorted(abs(x - center) for x in logs))
        out.shifts[exp] = math.exp(center)
        out.scatter[exp] = scale
        for c in cs:
            c.shift = math.exp(center)
            dev = abs(math.log(c.ratio) - center)
            p_null = t3_two_sided(dev / scale) if scale > 0 else (1.0 if dev == 0 else 0.0)
            c.p = max(c.p, p_null)
            if c.basis == "range":
                a, b = c.ranges
                c.disjoint = b[0] > a[1] * c.shift or b[1] < a[0] * c.shift
    judged = [c for c in out.changes if c.judged]
    for c, q in zip(judged, benjamini_hochberg([c.p for c in judged])):
        c.q = q
        c.flagged = q < FDR and abs(math.log(c.ratio / c.shift)) > math.log1p(c.min_effect) and c.disjoint
        if c.flagged:
            if c.better is None:
                c.direction = "changed"
            else:
                c.direction = "better" if (c.ratio < c.shift) == (c.better == "lower") else "worse"
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
