# SPDX-License-Identifier: Apache-2.0
"""Comparing two runs, measurement by measurement, on their raw samples:
deciding which changes count.  What a measurement's numbers are (its key,
its samples, its paired speed-ups) is memkit.comparison.samples'.

How a change is decided, step by step, and why each step: docs/judging.md,
"How compare decides a change"; the constants are memkit.judging.judge's.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Optional

from memkit.comparison.samples import (_key, baseline_key, headline, paired_samples, paired_speedups,  # noqa: F401
                                       params_text, samples_of, thing_key)
from memkit.judging import stats
from memkit.results import records

from memkit.judging.judge import (BOOTSTRAP, BUSY_FACTOR, COHERENT, EFFECT_SDS, FDR, LOCAL_MIN, MIN_EFFECT,  # noqa: F401
                          NULL_CLIP, NULL_MIN, PLACEMENT_EFFECT, PROCESSES_MIN, SEED, SERIES_EFFECT, SERIES_MIN,
                          SHORT_CALL_NS, SHORT_CALL_PROCESS_EFFECT)
TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "ns/call": 1.0}


def min_effect(m: dict, basis: str) -> float:
    """The smallest change called for a measurement (see the module's step 5)."""
    scale = TIME_UNITS_NS.get((m.get("unit") or "").strip())
    short = scale is not None and m.get("value") is not None and m["value"] * scale < SHORT_CALL_NS
    if basis == "process":
        return SHORT_CALL_PROCESS_EFFECT if short else MIN_EFFECT
    if short:
        return math.inf   # not judged: placement noise between processes
    return PLACEMENT_EFFECT


@dataclass
class Change:
    experiment: str
    series: str
    params: dict
    metric: str
    unit: str
    a: float               # the headline value in run A and B
    b: float
    ratio: float           # the change B/A judged (absolute: of the medians; paired: relative to the baseline)
    low: float             # 95% bootstrap interval of ratio
    high: float
    p: float
    shift: float = 1.0     # what the ratio is judged against (absolute: the experiment's shift)
    q: float = 1.0         # p corrected (Benjamini-Hochberg)
    basis: str = "round"   # what the samples were: "process", "round", "range"
    better: Optional[str] = None   # "lower" or "higher" (the record's)
    min_effect: float = PLACEMENT_EFFECT
    flagged: bool = False
    direction: str = "same"        # "better", "worse", "changed", "same"
    ranges: tuple = ()             # ((min A, max A), (min B, max B))
    disjoint: bool = True          # for records without samples: B's range is clear of A's
    evidence: str = "absolute"     # or "paired": the speed-ups over `baseline`
    baseline: Optional[str] = None     # the paired baseline, named (see records.baseline_text)
    axis: Optional[str] = None     # the params key the series runs along

    def as_json(self) -> dict:
        def num(x):
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else x
        return {"experiment": self.experiment, "series": self.series, "params": self.params,
                "metric": self.metric, "unit": self.unit, "direction": self.direction,
                "a": num(self.a), "b": num(self.b), "ratio": num(self.ratio),
                "interval": [num(self.low), num(self.high)], "change_pct": num(100 * (self.ratio - 1)),
                "experiment_shift": num(self.shift), "vs_shift": num(self.ratio / self.shift),
                "vs_shift_interval": [num(self.low / self.shift), num(self.high / self.shift)], "q": self.q, "samples": self.basis,
                "evidence": self.evidence, "baseline": self.baseline if self.evidence == "paired" else None,
                "min_effect": num(self.min_effect) if self.judged else None}

    @property
    def judged(self) -> bool:
        return not math.isinf(self.min_effect)

    @property
    def deviation(self) -> float:
        """log(ratio / shift): the change judged, signed."""
        return math.log(self.ratio / self.shift)


@dataclass
class SeriesChange:
    """A series judged as a whole: the median over its sizes of the paired
    change relative to the baseline timed in the same rounds (step 6)."""
    experiment: str
    series: str
    params: dict           # the series' params but its axis
    axis: Optional[str]    # None: the series' measurements without an axis, together
    baseline: str
    better: Optional[str]
    ratio: float           # exp(Hodges-Lehmann estimate of the log paired changes), the metric's
    #                        direction (> 1: grew): the centre the signed-rank test judges
    low: float             # its interval, inverted from the same test (stats.hodges_lehmann) at
    high: float            # the level Benjamini-Hochberg held the series to
    p: float               # Wilcoxon signed-rank over the sizes
    members: list = field(default_factory=list)   # the Changes, in the axis' order
    moved: int = 0         # sizes that leaned the series' way
    q: float = 1.0
    min_effect: float = SERIES_EFFECT
    flagged: bool = False
    direction: str = "same"

    @property
    def span(self) -> str:
        from memkit.lab.sizes import fmt_size
        if self.axis is None:
            return f"{len(self.members)} measurements"
        lo, hi = self.members[0].params[self.axis], self.members[-1].params[self.axis]
        show = fmt_size if isinstance(lo, (int, float)) else str
        return f"{self.axis}={show(lo)}..{show(hi)} ({len(self.members)} sizes)"

    def as_json(self) -> dict:
        return {"experiment": self.experiment, "series": self.series, "params": self.params,
                "scope": "series", "span": self.span, "direction": self.direction, "ratio": self.ratio,
                "interval": [self.low, self.high], "change_pct": 100 * (self.ratio - 1), "q": self.q,
                "moved": self.moved, "sizes": len(self.members), "evidence": "paired",
                "baseline": self.baseline, "min_effect": self.min_effect}


@dataclass
class Comparison:
    changes: list[Change] = field(default_factory=list)   # every headline measurement in both runs
    only_a: int = 0
    only_b: int = 0
    shifts: dict = field(default_factory=dict)             # experiment -> its shift (B/A)
    scatter: dict = field(default_factory=dict)            # experiment -> its scatter (robust SD of log B/A)
    paired_scatter: dict = field(default_factory=dict)     # experiment -> the scatter of its paired evidence
    series: list[SeriesChange] = field(default_factory=list)   # every series judged as a whole
    baselines: set = field(default_factory=set)    # keys of the measurements others are paired with:
    # the reference, not the code judged (a slower baseline makes every pair look faster)

    @property
    def flagged(self) -> list[Change]:
        return [c for c in self.changes if c.flagged]

    @property
    def flagged_series(self) -> list[SeriesChange]:
        return [s for s in self.series if s.flagged]

    @property
    def worse(self) -> int:
        """Regressions: measurements and whole series flagged worse."""
        return sum(c.direction == "worse" for c in self.flagged + self.flagged_series)

    @property
    def in_series(self) -> set:
        """id() of every measurement that counts in a series judged as a whole."""
        return {id(c) for s in self.series for c in s.members}

    @property
    def unjudged(self) -> list[Change]:
        """Measurements judged neither alone nor in a series judged as a whole."""
        in_series = self.in_series
        return [c for c in self.changes if not c.judged and id(c) not in in_series
                and _key(c.experiment, c.series, c.params) not in self.baselines]

    @property
    def paired(self) -> int:
        """How many changes were judged on their paired speed-ups."""
        return sum(c.evidence == "paired" for c in self.changes)


def _null_p(c: Change, scale: float) -> float:
    floor = math.log1p(c.min_effect) / EFFECT_SDS
    return stats.t3_two_sided_p(abs(c.deviation) / max(scale, floor))


def _direction(lower: bool, better: Optional[str]) -> str:
    """A flagged change's word: lower says the metric fell against what it
    is judged by (the shift, or 1)."""
    return "changed" if better is None else "better" if lower == (better == "lower") else "worse"


def _decide(cs: list[Change]) -> None:
    """Benjamini-Hochberg over the judged changes, then flags and directions."""
    judged = [c for c in cs if c.judged]
    for c, q in zip(judged, stats.benjamini_hochberg([c.p for c in judged])):
        c.q = q
        c.flagged = (q < FDR and abs(c.deviation) > math.log1p(c.min_effect) and c.disjoint
                     and not c.low <= c.shift <= c.high)
        c.direction = "same"
        if c.flagged:
            c.direction = _direction(c.ratio < c.shift, c.better)


def _absolute_change(a: dict, b: dict, rng, busy: bool) -> Optional[Change]:
    sa, basis_a = samples_of(a)
    sb, basis_b = samples_of(b)
    if not sa or not sb or min(sa) <= 0 or min(sb) <= 0:
        return None
    ratio, lo, hi, p = stats.median_ratio_bootstrap(sa, sb, rng, BOOTSTRAP)
    basis = basis_a if basis_a == basis_b else "range" if "range" in (basis_a, basis_b) else "round"
    if basis == "range":
        # No raw samples: at best the rounds were all apart, whose
        # chance is the exact Mann-Whitney p of complete separation.
        p = max(p, stats.separation_p(a.get("samples") or 3, b.get("samples") or 3))
    axis = (a.get("axis") or {}).get("name")
    return Change(a["experiment"], a["series"], a["params"], a["metric"], a.get("unit") or "",
                  a["value"], b["value"], ratio, lo, hi, p, basis=basis, better=records.better_direction(a),
                  min_effect=min_effect(a, basis) * (BUSY_FACTOR if busy else 1.0),
                  ranges=((min(sa), max(sa)), (min(sb), max(sb))),
                  axis=axis if axis in a["params"] else None)


def _paired_ratio(a: dict, b: dict, better: Optional[str], rng) -> Optional[tuple]:
    """(ratio, low, high, p) of the paired speed-ups, in the metric's
    direction (> 1: the metric grew relative to the baseline), or None."""
    sa, sb = paired_samples(a), paired_samples(b)
    if sa is None or sb is None or better is None or a["baseline"] != b["baseline"]:
        return None
    if min(sa) <= 0 or min(sb) <= 0:   # a speed-up of 0: a broken record
        return None
    ratio, lo, hi, p = stats.median_ratio_bootstrap(sa, sb, rng, BOOTSTRAP)
    if better == "lower":   # a speed-up 2x smaller is a time 2x larger
        return 1 / ratio, 1 / hi, 1 / lo, p
    return ratio, lo, hi, p


def _by_experiment(cs: list[Change]) -> dict:
    out: dict = {}
    for c in cs:
        out.setdefault(c.experiment, []).append(c)
    return out


def _series_runs(cs: list[Change]) -> list[list[Change]]:
    """The changes of each series (same experiment, series and params but
    the axis) in the axis' order; changes without an axis stand alone."""
    runs: dict = {}
    for c in cs:
        if c.axis is None:
            runs[id(c)] = [c]
            continue
        rest = {k: v for k, v in c.params.items() if k != c.axis}
        runs.setdefault(_key(c.experiment, c.series, rest) + (c.axis,), []).append(c)
    return [sorted(r, key=lambda c: c.params[c.axis]) if r[0].axis else r for r in runs.values()]


def _judge_absolute(cs: list[Change], out: Comparison) -> None:
    """Step 3 for absolute evidence: each measurement's shift, each experiment's scatter."""
    for exp, ecs in _by_experiment(cs).items():
        if len(ecs) < NULL_MIN:
            continue
        center = stats.clipped_null([math.log(c.ratio) for c in ecs], None, NULL_CLIP, NULL_MIN)[0]
        together: dict = {}
        for c in ecs:
            together.setdefault(json.dumps(c.params, sort_keys=True), []).append(c)
        local = {}
        for group in together.values():
            for c in group:
                # The others only: a median that holds the measurement itself
                # pulls towards it and hides the scatter.
                others = [math.log(o.ratio) for o in group if o is not c]
                local[id(c)] = statistics.median(others) if len(others) >= LOCAL_MIN else center
        # Each scatter is widened by what the other shift removes (a loaded
        # spell; a local shift taken from others that moved): the smaller.
        scale = min(stats.clipped_null([math.log(c.ratio) - center for c in ecs], 0.0, NULL_CLIP, NULL_MIN)[1],
                    stats.clipped_null([math.log(c.ratio) - local[id(c)] for c in ecs], 0.0, NULL_CLIP,
                                       NULL_MIN)[1])
        out.shifts[exp], out.scatter[exp] = math.exp(center), scale
        for c in ecs:
            low, high = sorted((local[id(c)], center))
            c.shift = math.exp(min(max(math.log(c.ratio), low), high))
            c.p = max(c.p, _null_p(c, scale))
            if c.basis == "range":
                a, b = c.ranges
                c.disjoint = b[0] > a[1] * c.shift or b[1] < a[0] * c.shift


def _coherence(run: list[Change]) -> list[float]:
    """Each change's p-value with its neighbours' evidence (step 4)."""
    out = []
    for i, c in enumerate(run):
        sign = 1.0 if c.deviation > 0 else -1.0
        starts = range(max(0, i - COHERENT + 1), min(i, len(run) - COHERENT) + 1)
        windows = [stats.all_lean_p([stats.one_sided_p(x.p, x.deviation * sign > 0) for x in run[s:s + COHERENT]])
                   for s in starts]
        out.append(stats.bonferroni_min_p([c.p] + windows) if windows else c.p)
    return out


def _judge_paired(cs: list[Change], out: Comparison) -> None:
    """Step 3 for paired evidence: no shift, the neighbours' scatter."""
    for exp, ecs in _by_experiment(cs).items():
        judged = [c for c in ecs if c.judged]
        runs = _series_runs(judged)
        scale = stats.neighbour_scale([[c.deviation for c in r] for r in runs], NULL_MIN)
        if scale is None and len(judged) >= NULL_MIN:
            scale = stats.clipped_null([c.deviation for c in judged], 0.0, NULL_CLIP, NULL_MIN)[1]
        if scale is None:
            continue
        out.paired_scatter[exp] = scale
        for c in judged:
            c.p = max(c.p, _null_p(c, scale))


def _baseline_shifts(cs: list[Change], paired: dict) -> dict:
    """id(change) -> the log change its baseline's own move explains: the
    median of the other series paired with the same baseline at the same
    params (two at least, else 0).  A baseline that ran slower in one run
    makes every pair against it look faster (identical quick runs on Zen 3:
    glibc slower in the second, and mk_memset, avx2, sse2 and old_nt all
    4-15% "better"), and a regression of one series looks smaller by as much;
    the median of the others is that move as long as most of them did not
    change, and a change of the baseline itself is judged on its own
    absolute samples."""
    together: dict = {}
    for c in cs:
        if id(c) in paired:
            together.setdefault((c.experiment, paired[id(c)][1], json.dumps(c.params, sort_keys=True)),
                                []).append(c)
    out = {}
    for group in together.values():
        logs = {id(c): math.log(paired[id(c)][0][0]) for c in group}
        for c in group:
            others = [x for k, x in logs.items() if k != id(c)]
            out[id(c)] = statistics.median(others) if len(others) >= 2 else 0.0
    return out


def _judge_series(cs: list[Change], paired: dict) -> list[SeriesChange]:
    """Step 6: each series of at least SERIES_MIN sizes with paired evidence
    at every size, judged as a whole on its paired changes by the
    signed-rank test and the estimate and interval of that test (the short
    calls included: each is too noisy alone, not together)."""
    out = []
    # A series along an axis (sizes), and the measurements of one series
    # without an axis together (memset-random's rows of size ranges).
    runs = [r for r in _series_runs(cs) if r[0].axis is not None]
    loose: dict = {}
    for c in cs:
        if c.axis is None:
            loose.setdefault((c.experiment, c.series), []).append(c)
    runs += list(loose.values())
    shift = _baseline_shifts(cs, paired)
    logs_of = []
    for run in runs:
        if len(run) < SERIES_MIN or any(id(c) not in paired for c in run):
            continue
        logs = [math.log(paired[id(c)][0][0]) - shift[id(c)] for c in run]
        c0 = run[0]
        common = {k: v for k, v in c0.params.items() if k != c0.axis and all(c.params.get(k) == v for c in run)}
        out.append(SeriesChange(c0.experiment, c0.series, common, c0.axis, c0.baseline, c0.better,
                                1.0, 1.0, 1.0, stats.signed_rank_p(logs), members=run,
                                min_effect=SERIES_EFFECT))
        logs_of.append(logs)
    qs = stats.benjamini_hochberg([sc.p for sc in out])
    # The intervals at the level Benjamini-Hochberg held each rejected series
    # to (R of m rejected: 1 - FDR x R / m, Benjamini and Yekutieli's
    # false-coverage-rate intervals): a series is rejected exactly when its
    # interval leaves out 0, at every m.
    level = 1 - FDR * max(1, sum(q < FDR for q in qs)) / max(1, len(out))
    for sc, q, logs in zip(out, qs, logs_of):
        est, low, high = stats.hodges_lehmann(logs, level)
        sc.ratio, sc.low, sc.high, sc.q = math.exp(est), math.exp(low), math.exp(high), q
        sc.moved = sum((x > 0) == (est > 0) and x != 0 for x in logs)
        sc.flagged = (q < FDR and (sc.low > 1 or sc.high < 1)
                      and abs(est) > math.log1p(sc.min_effect))
        if sc.flagged:
            sc.direction = _direction(sc.ratio < 1, sc.better)
    return out


def compare_measurements(ma: list[dict], mb: list[dict], busy: bool = False) -> Comparison:
    """Every headline measurement in both runs, judged; `busy`: either run
    was made on a busy machine."""
    import numpy as np
    rng = np.random.default_rng(SEED)
    a_by = headline([records.normalized(m) for m in ma])
    b_by = headline([records.normalized(m) for m in mb])
    out = Comparison(only_a=sum(1 for k in a_by if k not in b_by), only_b=sum(1 for k in b_by if k not in a_by))
    paired: dict = {}   # id(change) -> (its paired ratio, low, high, p; its baseline's key)
    for k, a in a_by.items():
        b = b_by.get(k)
        if b is None or b["metric"] != a["metric"]:
            continue
        c = _absolute_change(a, b, rng, busy)
        if c is None:
            continue
        out.changes.append(c)
        pr = _paired_ratio(a, b, c.better, rng)
        if pr is not None:
            c.baseline = records.baseline_text(a["baseline"], a)
            paired[id(c)] = (pr, baseline_key(a))
            out.baselines.add(baseline_key(a))
    # Every measurement on its absolute samples first, to see which baselines strayed.
    _judge_absolute(out.changes, out)
    strayed = {_key(c.experiment, c.series, c.params): abs(c.deviation)
               for c in out.changes if c.experiment in out.shifts}
    pairs = []
    for c in out.changes:
        if id(c) not in paired:
            continue
        (ratio, lo, hi, p), base = paired[id(c)]
        if strayed.get(base, 0.0) > math.log1p(c.min_effect) / 2:
            continue
        c.ratio, c.low, c.high, c.p, c.shift, c.evidence = ratio, lo, hi, p, 1.0, "paired"
        pairs.append(c)
    _judge_paired(pairs, out)
    out.series = _judge_series(out.changes, paired)
    for run in _series_runs([c for c in out.changes if c.judged]):
        for c, p in zip(run, _coherence(run)):
            c.p = p
    _decide(out.changes)
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
    for exp, cs in _by_experiment(changes).items():
        ups = [s for s in map(speedup_of, cs) if s and s > 0]
        out.append(ExperimentSummary(
            exp, len(cs), sum(c.direction == "better" for c in cs), sum(c.direction == "worse" for c in cs),
            sum(c.direction == "changed" for c in cs), statistics.geometric_mean(ups) if ups else math.nan))
    return out
