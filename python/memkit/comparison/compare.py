# SPDX-License-Identifier: Apache-2.0
"""Comparing two runs, measurement by measurement, on their raw samples:
deciding which changes count.  What a measurement's numbers are (its key,
its samples, its paired speed-ups) is memkit.comparison.samples'; how a
comparison is shown is memkit.comparison.two_runs'.

A comparison is computed from inputs it never changes: each step below
returns new values from what the steps before it returned, and the
Change, SeriesChange and Band objects are built once, from the final
values.  How a change is decided, step by step, and why each step:
docs/judging.md, "How compare decides a change"; the constants are
memkit.judging.judge's.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Optional, Sequence

from memkit.comparison.samples import (TIME_UNITS_NS, _key, baseline_key,  # noqa: F401
                                       between_run_effect, headline, min_effect, paired_log_change, paired_samples,
                                       paired_speedups, params_text, samples_of, thing_key)
from memkit.comparison import identical_runs
from memkit.judging import stats
from memkit.results import records

from memkit.judging.judge import (BAND_DF, BAND_EFFECT, BAND_MIN, BOOTSTRAP, BUSY_FACTOR,  # noqa: F401
                                  COHERENT, EFFECT_SDS, FDR, LOCAL_MIN, MIN_EFFECT, NOISE_QUANTILE, NOISE_SPAN,
                                  NULL_CLIP, NULL_MIN, PLACEMENT_EFFECT, PROCESSES_MIN, SEED, SERIES_EFFECT,
                                  SERIES_MIN, SHORT_BAND_EFFECT, SHORT_CALL_NS, SHORT_CALL_PROCESS_EFFECT)
# ---- what the steps return ----

@dataclass(frozen=True)
class Reading:
    """One measurement in both runs as read, before anything is judged."""
    key: tuple
    a: dict                # the normalised records
    b: dict
    absolute: tuple        # (ratio, low, high, p): bootstrap of the medians B/A
    basis: str             # "process", "round", "range"
    ranges: tuple          # ((min A, max A), (min B, max B))
    better: Optional[str]
    min_effect: float      # alone (BUSY_FACTOR applied)
    band_effect: float     # in a band (not: its noise is read from the same machine's runs, load and all)
    axis: Optional[str]
    paired: Optional[tuple] = None        # (ratio, low, high, p) of the paired speed-ups, the metric's direction
    process_var: Optional[float] = None   # the variance of the paired change its processes' scatter implies
    baseline_key: Optional[tuple] = None
    baseline: Optional[str] = None        # named (records.baseline_text)

    @property
    def experiment(self) -> str:
        return self.a["experiment"]

    @property
    def judged(self) -> bool:
        return not math.isinf(self.min_effect)

    @property
    def paired_log(self) -> float:
        return math.log(self.paired[0])


@dataclass(frozen=True)
class AbsoluteNull:
    """An experiment's own noise between the runs, on absolute samples (step 3)."""
    shift: float           # the experiment's shift, log B/A
    scale: float           # the robust SD of the log ratios around the shifts
    local: dict            # thing key -> the log shift of the measurements timed with it


@dataclass(frozen=True)
class Noise:
    """The between-run noise of one measurement's paired change (step 3)."""
    scale: float           # robust SD of the log change between two runs
    source: str            # "history" (earlier runs of the grid) or "this pair"


@dataclass(frozen=True)
class Verdict:
    """A measurement's change as judged, before the run's correction."""
    ratio: float
    low: float
    high: float
    p: float               # the larger of the bootstrap's and the noise's p (steps 2-3)
    shift: float = 1.0
    evidence: str = "absolute"
    scale: Optional[float] = None   # the noise it was judged against (log), if any
    disjoint: bool = True

    @property
    def deviation(self) -> float:
        return math.log(self.ratio / self.shift)


# ---- the results, built once ----

@dataclass(frozen=True)
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
    scale: Optional[float] = None  # the between-run noise it was judged against (robust SD, log)
    band_effect: float = MIN_EFFECT    # the smallest change that counts in a band

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
    def key(self) -> tuple:
        return _key(self.experiment, self.series, self.params)

    @property
    def judged(self) -> bool:
        return not math.isinf(self.min_effect)

    @property
    def deviation(self) -> float:
        """log(ratio / shift): the change judged, signed."""
        return math.log(self.ratio / self.shift)


def _floor_json(floor: Optional[identical_runs.Floor]) -> Optional[dict]:
    if floor is None:
        return None
    return {"largest_move": math.exp(floor.largest), "pairs": floor.pairs, "from": floor.source}


def _span(axis: Optional[str], members: list) -> str:
    from memkit.lab.sizes import fmt_size
    if axis is None:
        return f"{len(members)} measurements"
    lo, hi = members[0].params[axis], members[-1].params[axis]
    show = fmt_size if isinstance(lo, (int, float)) else str
    return f"{axis}={show(lo)}..{show(hi)} ({len(members)} sizes)"


@dataclass(frozen=True)
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
    min_effect: float = SERIES_EFFECT   # or more: what identical runs moved it by (floor)
    flagged: bool = False
    direction: str = "same"
    floor: Optional[identical_runs.Floor] = None

    @property
    def span(self) -> str:
        return _span(self.axis, self.members)

    def as_json(self) -> dict:
        return {"experiment": self.experiment, "series": self.series, "params": self.params,
                "scope": "series", "axis": self.axis, "direction": self.direction, "ratio": self.ratio,
                "interval": [self.low, self.high], "change_pct": 100 * (self.ratio - 1), "q": self.q,
                "moved": self.moved, "sizes": len(self.members), "evidence": "paired",
                "baseline": self.baseline, "min_effect": self.min_effect,
                "floor": _floor_json(self.floor)}


@dataclass(frozen=True)
class Band:
    """Adjacent sizes of one series that moved together (step 7): one
    finding, however many of its points are too short to judge alone."""
    experiment: str
    series: str
    params: dict           # the series' params but its axis
    axis: str
    members: list          # the Changes, in the axis' order
    ratio: float           # the median of the members' changes (vs what each is judged against)
    low: float             # the smallest and largest member change
    high: float
    p: float               # all members leaning that way by chance, for as few independent points as
    #                        their noise's correlation leaves, Bonferroni over the series' windows
    q: float = 1.0
    flagged: bool = False
    direction: str = "same"
    better: Optional[str] = None
    min_effect: float = BAND_EFFECT   # or more: what identical runs moved such a band by (floor)
    floor: Optional[identical_runs.Floor] = None

    @property
    def span(self) -> str:
        return _span(self.axis, self.members)

    @property
    def sizes_text(self) -> str:
        """"768 B-4 KiB": the band's first and last size."""
        from memkit.lab.sizes import fmt_size
        lo, hi = self.members[0].params[self.axis], self.members[-1].params[self.axis]
        show = fmt_size if isinstance(lo, (int, float)) else str
        return f"{show(lo)}-{show(hi)}"

    @property
    def finding(self) -> str:
        """"mk_memset 768 B-4 KiB, 1.3-2.4x slower": the band in one phrase."""
        lo, hi = sorted((self.low, self.high))
        grew = self.ratio > 1
        if self.better is None:
            word = "higher" if grew else "lower"
        else:
            word = "slower" if (grew == (self.better == "lower")) else "faster"
        factors = sorted(x if x >= 1 else 1 / x for x in (lo, hi))
        return f"{self.series} {self.sizes_text}, {factors[0]:.1f}-{factors[1]:.1f}x {word}"

    def as_json(self) -> dict:
        return {"experiment": self.experiment, "series": self.series, "params": self.params,
                "scope": "band", "axis": self.axis, "direction": self.direction, "ratio": self.ratio,
                "range": [self.low, self.high], "change_pct": 100 * (self.ratio - 1), "q": self.q,
                "sizes": len(self.members), "first": self.members[0].params[self.axis],
                "last": self.members[-1].params[self.axis], "finding": self.finding,
                "min_effect": self.min_effect, "floor": _floor_json(self.floor)}


@dataclass(frozen=True)
class Comparison:
    changes: list = field(default_factory=list)   # every headline measurement in both runs (Change)
    only_a: int = 0
    only_b: int = 0
    shifts: dict = field(default_factory=dict)             # experiment -> its shift (B/A)
    scatter: dict = field(default_factory=dict)            # experiment -> its scatter (robust SD of log B/A)
    paired_scatter: dict = field(default_factory=dict)     # experiment -> the median between-run noise of its pairs
    series: list = field(default_factory=list)   # every series judged as a whole (SeriesChange)
    bands: list = field(default_factory=list)    # every band of adjacent sizes that moved together (Band)
    baselines: frozenset = frozenset()   # keys of the measurements others are paired with:
    # the reference, not the code judged (a slower baseline makes every pair look faster)
    noise_source: str = "this pair"      # where the pairs' between-run noise was read (Noise.source)

    @property
    def flagged(self) -> list:
        return [c for c in self.changes if c.flagged]

    @property
    def flagged_series(self) -> list:
        return [s for s in self.series if s.flagged]

    @property
    def flagged_bands(self) -> list:
        return [b for b in self.bands if b.flagged]

    @property
    def worse(self) -> int:
        """Regressions: measurements, bands and whole series flagged worse."""
        return sum(c.direction == "worse" for c in self.flagged + self.flagged_series + self.flagged_bands)

    @property
    def in_series(self) -> set:
        """The key of every measurement that counts in a series judged as a whole."""
        return {c.key for s in self.series for c in s.members}

    @property
    def unjudged(self) -> list:
        """Measurements judged neither alone nor in a series judged as a whole."""
        in_series = self.in_series
        return [c for c in self.changes if not c.judged and c.key not in in_series
                and c.key not in self.baselines]

    @property
    def paired(self) -> int:
        """How many changes were judged on their paired speed-ups."""
        return sum(c.evidence == "paired" for c in self.changes)


# ---- step 1-2: the readings ----

@functools.lru_cache(maxsize=1 << 16)
def _bootstrap(a: tuple, b: tuple) -> tuple:
    """stats.median_ratio_bootstrap with a generator of its own, seeded
    alike for every measurement: a measurement's interval depends on its
    samples alone, never on what was compared before it (and a comparison
    that shares most samples with another, as an injected regression does,
    reuses their intervals)."""
    import numpy as np
    return stats.median_ratio_bootstrap(a, b, np.random.default_rng(SEED), BOOTSTRAP)


def _paired_ratio(a: dict, b: dict, better: Optional[str]) -> Optional[tuple]:
    """(ratio, low, high, p) of the paired speed-ups, in the metric's
    direction (> 1: the metric grew relative to the baseline), or None."""
    sa, sb = paired_samples(a), paired_samples(b)
    if sa is None or sb is None or better is None or a["baseline"] != b["baseline"]:
        return None
    if min(sa) <= 0 or min(sb) <= 0:   # a speed-up of 0: a broken record
        return None
    ratio, lo, hi, p = _bootstrap(tuple(sa), tuple(sb))
    if better == "lower":   # a speed-up 2x smaller is a time 2x larger
        return 1 / ratio, 1 / hi, 1 / lo, p
    return ratio, lo, hi, p


def _process_var(a: dict, b: dict) -> Optional[float]:
    """The variance of the difference of two runs' mean log speed-ups that
    their processes' scatter implies (s_A^2 / n_A + s_B^2 / n_B), where both
    runs timed PROCESSES_MIN processes or more; else None."""
    out = 0.0
    for m in (a, b):
        values = m.get("process_ratios") or ()
        if len(values) < PROCESSES_MIN or min(values) <= 0:
            return None
        out += statistics.variance([math.log(x) for x in values]) / len(values)
    return out


def _read(key: tuple, a: dict, b: dict, busy: bool, floors: identical_runs.Floors) -> Optional[Reading]:
    sa, basis_a = samples_of(a)
    sb, basis_b = samples_of(b)
    if not sa or not sb or min(sa) <= 0 or min(sb) <= 0:
        return None
    ratio, lo, hi, p = _bootstrap(tuple(sa), tuple(sb))
    basis = basis_a if basis_a == basis_b else "range" if "range" in (basis_a, basis_b) else "round"
    if basis == "range":
        # No raw samples: at best the rounds were all apart, whose
        # chance is the exact Mann-Whitney p of complete separation.
        p = max(p, stats.separation_p(a.get("samples") or 3, b.get("samples") or 3))
    axis = (a.get("axis") or {}).get("name")
    better = records.better_direction(a)
    load = BUSY_FACTOR if busy else 1.0
    paired = _paired_ratio(a, b, better)
    alone = min_effect(a, basis) * load
    if not math.isinf(alone):
        alone = floors.floor("point", identical_runs.series_key(a), alone).effect
    return Reading(key, a, b, (ratio, lo, hi, p), basis, ((min(sa), max(sa)), (min(sb), max(sb))), better,
                   alone, between_run_effect(a),
                   axis if axis in a["params"] else None, paired, _process_var(a, b) if paired else None,
                   baseline_key(a) if paired else None,
                   records.baseline_text(a["baseline"], a) if paired else None)


def _by_experiment(items: list) -> dict:
    out: dict = {}
    for x in items:
        out.setdefault(x.experiment, []).append(x)
    return out


def _row_key(r) -> tuple:
    """What a measurement shares with the others of its grid row: experiment
    and params but the axis (the series apart)."""
    rest = {k: v for k, v in (r.a["params"] if isinstance(r, Reading) else r.params).items() if k != r.axis}
    return (r.experiment, json.dumps(rest, sort_keys=True), r.axis)


def _series_runs(items: list) -> list[list]:
    """The readings or changes of each series (same experiment, series and
    params but the axis) in the axis' order; those without an axis stand alone."""
    runs: dict = {}
    for x in items:
        series = x.a["series"] if isinstance(x, Reading) else x.series
        params = x.a["params"] if isinstance(x, Reading) else x.params
        if x.axis is None:
            runs[(x.experiment, series, json.dumps(params, sort_keys=True))] = [x]
            continue
        runs.setdefault(_row_key(x) + (series,), []).append(x)

    def at(x):
        return (x.a["params"] if isinstance(x, Reading) else x.params)[x.axis]
    return [sorted(r, key=at) if r[0].axis else r for r in runs.values()]


# ---- step 3: the noise between the runs ----

def _absolute_nulls(readings: list[Reading]) -> dict:
    """experiment -> AbsoluteNull, for experiments of at least NULL_MIN measurements."""
    out = {}
    for exp, rs in _by_experiment(readings).items():
        if len(rs) < NULL_MIN:
            continue
        logs = {r.key: math.log(r.absolute[0]) for r in rs}
        center = stats.clipped_null(list(logs.values()), None, NULL_CLIP, NULL_MIN)[0]
        together: dict = {}
        for r in rs:
            together.setdefault(json.dumps(r.a["params"], sort_keys=True), []).append(r.key)
        local = {}
        for keys in together.values():
            for k in keys:
                # The others only: a median that holds the measurement itself
                # pulls towards it and hides the scatter.
                others = [logs[o] for o in keys if o != k]
                local[k] = statistics.median(others) if len(others) >= LOCAL_MIN else center
        # Each scatter is widened by what the other shift removes (a loaded
        # spell; a local shift taken from others that moved): the smaller.
        scale = min(stats.clipped_null([x - center for x in logs.values()], 0.0, NULL_CLIP, NULL_MIN)[1],
                    stats.clipped_null([logs[k] - local[k] for k in logs], 0.0, NULL_CLIP, NULL_MIN)[1])
        out[exp] = AbsoluteNull(center, scale, local)
    return out


def _null_p(deviation: float, effect: float, scale: float) -> float:
    floor = math.log1p(effect) / EFFECT_SDS
    return stats.t3_two_sided_p(abs(deviation) / max(scale, floor))


def _absolute_verdict(r: Reading, null: Optional[AbsoluteNull]) -> Verdict:
    ratio, lo, hi, p = r.absolute
    if null is None:
        return Verdict(ratio, lo, hi, p)
    low, high = sorted((null.local[r.key], null.shift))
    shift = math.exp(min(max(math.log(ratio), low), high))
    dev = math.log(ratio / shift)
    disjoint = True
    if r.basis == "range":
        a, b = r.ranges
        disjoint = b[0] > a[1] * shift or b[1] < a[0] * shift
    return Verdict(ratio, lo, hi, max(p, _null_p(dev, r.min_effect, null.scale)), shift, "absolute",
                   null.scale, disjoint)


def history_changes(history: Sequence[list[dict]]) -> dict:
    """thing key -> the log paired changes of each pair of consecutive
    earlier runs (the metric's direction): what identical runs of this grid
    did on this host.  No bootstrap: the medians are all that is read."""
    runs = [headline([records.normalized(m) for m in ms]) for ms in history]
    out: dict = {}
    for older, newer in zip(runs, runs[1:]):
        for k, a in older.items():
            change = paired_log_change(a, newer.get(k))
            if change is not None:
                out.setdefault(k, []).append(change)
    return out


def _rows(readings: list[Reading]) -> dict:
    """row key (_row_key) -> its readings, every series."""
    out: dict = {}
    for r in readings:
        out.setdefault(_row_key(r), []).append(r)
    return out


def _neighbourhood(rows: dict, r: Reading) -> list[Reading]:
    """The paired readings of r's grid row within NOISE_SPAN sizes of it,
    every series: the same call lengths, timed alike."""
    row = rows[_row_key(r)]
    if r.axis is None:
        return row
    at = sorted({x.a["params"][r.axis] for x in row})
    i = at.index(r.a["params"][r.axis])
    near = set(at[max(0, i - NOISE_SPAN):i + NOISE_SPAN + 1])
    return [x for x in row if x.a["params"][r.axis] in near]


def _noise_of(values: dict, near: list[Reading]) -> Optional[float]:
    """The scale of the changes `values` (key -> list of log changes) over
    the neighbourhood, or None below NULL_MIN of them."""
    pooled = [x for r in near for x in values.get(r.key, ())]
    if len(pooled) < NULL_MIN:
        return None
    return stats.quantile_scale(pooled, NOISE_QUANTILE)


def _paired_noise(paired: list[Reading], net: dict, history: dict) -> dict:
    """thing key -> Noise of its paired change, read from what moved where
    nothing changed, the first of: the earlier runs of the grid on this
    host, the series' own changes around the size (a series can be noisier
    than its row: non-temporal stores), then every series' of the row
    around it; else this pair's own changes around it (`net`: net of the
    baseline's own move), every other series of the row.  Around: within
    NOISE_SPAN sizes; NULL_MIN changes at least; the largest 1 -
    NOISE_QUANTILE of them set aside."""
    rows = _rows(paired)
    today = {r.key: [net[r.key]] for r in paired}
    out = {}
    for r in paired:
        near = _neighbourhood(rows, r)
        own = [x for x in near if x.a["series"] == r.a["series"]]
        seen = _noise_of(history, own)
        seen = _noise_of(history, near) if seen is None else seen
        if seen is not None:
            out[r.key] = Noise(seen, "history")
            continue
        # this pair: the other series only, or a change of the series would widen its own noise
        seen = _noise_of(today, [x for x in near if x.a["series"] != r.a["series"]])
        seen = _noise_of(today, [x for x in rows[_row_key(r)] if x.a["series"] != r.a["series"]]) \
            if seen is None else seen
        if seen is not None:
            out[r.key] = Noise(seen, "this pair")
    return out


def _paired_verdict(r: Reading, noise: Optional[Noise]) -> Verdict:
    ratio, lo, hi, p = r.paired
    if noise is None:
        return Verdict(ratio, lo, hi, p, 1.0, "paired")
    return Verdict(ratio, lo, hi, max(p, _null_p(math.log(ratio), r.min_effect, noise.scale)), 1.0, "paired",
                   noise.scale)


def _verdicts(readings: list[Reading], absolute: dict, nulls: dict, noise: dict) -> dict:
    """thing key -> Verdict: on the paired speed-ups where the record has
    them and the baseline did not stray on its own absolute samples beyond
    half the measurement's minimum effect, else on its absolute samples."""
    strayed = {r.key: abs(absolute[r.key].deviation) for r in readings if r.experiment in nulls}
    out = {}
    for r in readings:
        if r.paired is not None and strayed.get(r.baseline_key, 0.0) <= math.log1p(r.min_effect) / 2:
            out[r.key] = _paired_verdict(r, noise.get(r.key))
        else:
            out[r.key] = absolute[r.key]
    return out


# ---- step 4-5: coherence, the run's correction, the flags ----

def _coherent_p(run: list[Reading], verdicts: dict) -> dict:
    """thing key -> its p-value with its neighbours' evidence (step 4)."""
    out = {}
    for i, r in enumerate(run):
        v = verdicts[r.key]
        sign = 1.0 if v.deviation > 0 else -1.0
        starts = range(max(0, i - COHERENT + 1), min(i, len(run) - COHERENT) + 1)
        windows = [stats.all_lean_p([stats.one_sided_p(verdicts[x.key].p, verdicts[x.key].deviation * sign > 0)
                                     for x in run[s:s + COHERENT]]) for s in starts]
        out[r.key] = stats.bonferroni_min_p([v.p] + windows) if windows else v.p
    return out


def _direction(lower: bool, better: Optional[str]) -> str:
    """A flagged change's word: lower says the metric fell against what it
    is judged by (the shift, or 1)."""
    return "changed" if better is None else "better" if lower == (better == "lower") else "worse"


def _change(r: Reading, v: Verdict, p: float, q: float) -> Change:
    flagged = (r.judged and q < FDR and abs(v.deviation) > math.log1p(r.min_effect) and v.disjoint
               and not v.low <= v.shift <= v.high)
    a = r.a
    return Change(a["experiment"], a["series"], a["params"], a["metric"], a.get("unit") or "", a["value"],
                  r.b["value"], v.ratio, v.low, v.high, p, v.shift, q, r.basis, r.better, r.min_effect, flagged,
                  _direction(v.ratio < v.shift, r.better) if flagged else "same", r.ranges, v.disjoint,
                  v.evidence, r.baseline, r.axis, v.scale, r.band_effect)


# ---- step 6: a series as a whole ----

def _baseline_shifts(paired: list[Reading]) -> dict:
    """thing key -> the log change its baseline's own move explains: the
    median of the other series paired with the same baseline at the same
    params (two at least, else 0).  A baseline that ran slower in one run
    makes every pair against it look faster (identical quick runs on Zen 3:
    glibc slower in the second, and mk_memset, avx2, sse2 and old_nt all
    4-15% "better"), and a regression of one series looks smaller by as much;
    the median of the others is that move as long as most of them did not
    change, and a change of the baseline itself is judged on its own
    absolute samples."""
    together: dict = {}
    for r in paired:
        together.setdefault((r.experiment, r.baseline_key, json.dumps(r.a["params"], sort_keys=True)),
                            []).append(r)
    out = {}
    for group in together.values():
        for r in group:
            others = [x.paired_log for x in group if x.key != r.key]
            out[r.key] = statistics.median(others) if len(others) >= 2 else 0.0
    return out


def _judge_series(readings: list[Reading], changes: dict, floors: identical_runs.Floors) -> list[SeriesChange]:
    """Each series of at least SERIES_MIN sizes with paired evidence at
    every size, judged as a whole on its paired changes by the signed-rank
    test and the estimate and interval of that test (the short calls
    included: each is too noisy alone, not together); its estimate must
    exceed what identical runs moved the series by as a whole (its floor)."""
    # A series along an axis (sizes), and the measurements of one series
    # without an axis together (memset-random's rows of size ranges).
    runs = [r for r in _series_runs(readings) if r[0].axis is not None]
    loose: dict = {}
    for r in readings:
        if r.axis is None:
            loose.setdefault((r.experiment, r.a["series"]), []).append(r)
    runs = [run for run in runs + list(loose.values())
            if len(run) >= SERIES_MIN and all(r.paired is not None for r in run)]
    shift = _baseline_shifts([r for r in readings if r.paired is not None])
    logs_of = [[r.paired_log - shift[r.key] for r in run] for run in runs]
    ps = [stats.signed_rank_p(logs) for logs in logs_of]
    qs = stats.benjamini_hochberg(ps)
    # The intervals at the level Benjamini-Hochberg held each rejected series
    # to (R of m rejected: 1 - FDR x R / m, Benjamini and Yekutieli's
    # false-coverage-rate intervals): a series is rejected exactly when its
    # interval leaves out 0, at every m.
    level = 1 - FDR * max(1, sum(q < FDR for q in qs)) / max(1, len(runs))
    out = []
    for run, logs, p, q in zip(runs, logs_of, ps, qs):
        est, low, high = stats.hodges_lehmann(logs, level)
        r0 = run[0]
        common = {k: v for k, v in r0.a["params"].items()
                  if k != r0.axis and all(r.a["params"].get(k) == v for r in run)}
        floor = floors.floor("series", identical_runs.series_key(r0.a), SERIES_EFFECT)
        flagged = q < FDR and (low > 0 or high < 0) and abs(est) > math.log1p(floor.effect)
        out.append(SeriesChange(r0.experiment, r0.a["series"], common, r0.axis, r0.baseline, r0.better,
                                math.exp(est), math.exp(low), math.exp(high), p,
                                [changes[r.key] for r in run],
                                sum((x > 0) == (est > 0) and x != 0 for x in logs), q, floor.effect, flagged,
                                _direction(est < 0, r0.better) if flagged else "same", floor))
    return out


# ---- step 7: bands of adjacent sizes ----

def _baseline_moves(paired: list[Reading], absolute: dict, nulls: dict) -> dict:
    """thing key -> the log change of its pair that its baseline's own move
    explains: the median of the other series paired with it at the same
    params (_baseline_shifts), where the baseline's own absolute samples
    moved the opposite way by at least half as much, else 0.  A threshold
    that moves every series at some sizes (rep_stosb_threshold=0 on Zen 4)
    moves the others' median too, but not the baseline."""
    others = _baseline_shifts(paired)
    out = {}
    for r in paired:
        own = absolute.get(r.baseline_key)
        move = others[r.key]
        if own is None or r.experiment not in nulls or move * own.deviation >= 0 \
                or abs(own.deviation) < abs(move) / 2:
            move = 0.0
        out[r.key] = move
    return out


def _window_scale(values: dict, row: list[list[Reading]], first, length: int) -> Optional[float]:
    """The scale of what windows of `length` adjacent sizes moved by as a
    whole (the mean of their log changes, `values`: key -> one per pair of
    runs) around the size `first`, over every series of the row: the noise
    of a band, however alike neighbouring sizes' noise is (placement moves
    a stretch of sizes together).  None below NULL_MIN windows."""
    means = []
    for run in row:
        at = [r.a["params"][r.axis] for r in run]
        if first not in at:
            continue
        i = at.index(first)
        for s in range(max(0, i - NOISE_SPAN), min(len(run) - length, i + NOISE_SPAN) + 1):
            means += [statistics.fmean(x) for x in zip(*(values.get(r.key, ()) for r in run[s:s + length]))]
    return stats.quantile_scale(means, NOISE_QUANTILE) if len(means) >= NULL_MIN else None


def _band_p(members: list[Reading], net: dict, scale: float, windows: int) -> float:
    """Two-sided p of the members' mean change against the noise of a band
    that long (Student t, BAND_DF), Bonferroni over the series' windows.
    The noise is at least what the members' processes scatter by within
    each run (where each run has PROCESSES_MIN of them), taken as moving the
    whole band alike: a process's placement moves every size it times."""
    floor = math.log1p(min(r.band_effect for r in members)) / EFFECT_SDS
    spread = [r.process_var for r in members if r.process_var is not None]
    if spread:
        floor = max(floor, math.sqrt(statistics.fmean(spread)))
    mean = statistics.fmean(net[r.key] for r in members)
    return min(1.0, windows * stats.t_two_sided_p(mean / max(scale, floor), BAND_DF))


def _band_floor(members: list[Reading], floors: identical_runs.Floors) -> identical_runs.Floor:
    """The change a band's median must exceed: BAND_EFFECT, or
    SHORT_BAND_EFFECT where most of it is short calls timed in too few
    processes to show their placement (beyond what placement moved such a
    band by between identical runs; a history shows such jumps too rarely to
    size them); more where identical runs moved a band of the series further."""
    short = sum(not r.judged for r in members) > len(members) / 2
    return floors.floor("short band" if short else "band", identical_runs.series_key(members[0].a),
                        SHORT_BAND_EFFECT if short else BAND_EFFECT)


def _bands_of(run: list[Reading], net: dict, scale_of, floors: identical_runs.Floors) -> list[tuple]:
    """(members, p, beyond) of every stretch of at least BAND_MIN adjacent
    sizes whose paired changes all lean one way beyond their band effect:
    its p is that of its best window of BAND_MIN sizes or more whose median
    is beyond its band effect (beyond), else of its best window (a stretch
    may hold noise that leans along with a change).  scale_of(first size,
    length): the noise of such a window."""
    n = len(run)
    windows = (n - BAND_MIN + 1) * (n - BAND_MIN + 2) // 2   # of BAND_MIN sizes or more
    lean = [0 if r.paired is None or abs(net[r.key]) <= math.log1p(r.band_effect)
            else 1 if net[r.key] > 0 else -1 for r in run]
    out, start = [], 0
    for i in range(1, n + 1):
        if i < n and lean[i] == lean[start]:
            continue
        if lean[start] and i - start >= BAND_MIN:
            stretch = run[start:i]
            tried = []
            for s in range(len(stretch)):
                for e in range(s + BAND_MIN, len(stretch) + 1):
                    window = stretch[s:e]
                    beyond = abs(statistics.median(net[r.key] for r in window)) > \
                        math.log1p(_band_floor(window, floors).effect)
                    scale = scale_of(window[0].a["params"][window[0].axis], len(window))
                    tried.append((not beyond, _band_p(window, net, scale, windows)))
            missed, p = min(tried)
            out.append((stretch, p, not missed))
        start = i
    return out


def _judge_bands(readings: list[Reading], net: dict, history: dict, changes: dict,
                 floors: identical_runs.Floors) -> list[Band]:
    """Bands in every series along an axis, Benjamini-Hochberg over them;
    flagged when rejected with a window beyond its band effect.  A band's
    noise is read from the history where it has NULL_MIN windows around it
    (the series' own, else every series'), else from this pair's other series."""
    today = {k: [x] for k, x in net.items()}
    found = []
    for row in _rows(readings).values():
        runs = [run for run in _series_runs(row) if run[0].axis is not None]
        by_series = {run[0].a["series"]: run for run in runs}

        @functools.lru_cache(maxsize=None)
        def scale_of(first, length, series, runs=runs):
            seen = _window_scale(history, [by_series[series]], first, length)
            seen = _window_scale(history, runs, first, length) if seen is None else seen
            if seen is not None:
                return seen
            # this pair: the other series only, or a change of the series would widen its own null
            others = [run for run in runs if run[0].a["series"] != series]
            return _window_scale(today, others, first, length) or 0.0
        for run in runs:
            found += _bands_of(run, net, functools.partial(scale_of, series=run[0].a["series"]), floors)
    qs = stats.benjamini_hochberg([p for _, p, _ in found])
    out = []
    for (members, p, beyond), q in zip(found, qs):
        r0 = members[0]
        devs = [net[r.key] for r in members]
        median = statistics.median(devs)
        flagged = q < FDR and beyond
        floor = _band_floor(members, floors)
        common = {k: v for k, v in r0.a["params"].items() if k != r0.axis}
        out.append(Band(r0.experiment, r0.a["series"], common, r0.axis, [changes[r.key] for r in members],
                        math.exp(median), math.exp(min(devs)), math.exp(max(devs)), p, q, flagged,
                        _direction(median < 0, r0.better) if flagged else "same", r0.better,
                        floor.effect, floor))
    return out


def compare_measurements(ma: list[dict], mb: list[dict], busy: bool = False,
                         history: Sequence[list[dict]] = (), quick: bool = True) -> Comparison:
    """Every headline measurement in both runs, judged; `busy`: either run
    was made on a busy machine; `history`: the measurements of earlier runs
    of the same machine, oldest first (run A may be the last of them): what
    identical runs of the grid did there, the noise pairs are judged against;
    `quick`: both runs used the quick grid, on which the reference of
    identical runs was recorded (identical_runs.Floors)."""
    a_by = headline([records.normalized(m) for m in ma])
    b_by = headline([records.normalized(m) for m in mb])
    floors = identical_runs.Floors.of(history, reference=quick)
    readings = [r for r in (_read(k, a, b_by[k], busy, floors) for k, a in a_by.items()
                            if k in b_by and b_by[k]["metric"] == a["metric"]) if r is not None]
    nulls = _absolute_nulls(readings)
    paired = [r for r in readings if r.paired is not None]
    absolute = {r.key: _absolute_verdict(r, nulls.get(r.experiment)) for r in readings}
    moves = _baseline_moves(paired, absolute, nulls)
    net = {r.key: r.paired_log - moves[r.key] for r in paired}
    earlier = history_changes(history) if history else {}
    noise = _paired_noise(paired, net, earlier)
    verdicts = _verdicts(readings, absolute, nulls, noise)
    ps = {r.key: verdicts[r.key].p for r in readings}
    for run in _series_runs([r for r in readings if r.judged]):
        ps.update(_coherent_p(run, verdicts))
    judged = [r for r in readings if r.judged]
    qs = dict(zip((r.key for r in judged), stats.benjamini_hochberg([ps[r.key] for r in judged])))
    changes = {r.key: _change(r, verdicts[r.key], ps[r.key], qs.get(r.key, 1.0)) for r in readings}
    paired_scales = {}
    for exp, rs in _by_experiment([r for r in paired if r.key in noise]).items():
        paired_scales[exp] = statistics.median(noise[r.key].scale for r in rs)
    sources = {n.source for n in noise.values()}
    return Comparison(
        list(changes.values()), sum(1 for k in a_by if k not in b_by), sum(1 for k in b_by if k not in a_by),
        {exp: math.exp(n.shift) for exp, n in nulls.items()}, {exp: n.scale for exp, n in nulls.items()},
        paired_scales, _judge_series(readings, changes, floors), _judge_bands(paired, net, earlier, changes, floors),
        frozenset(r.baseline_key for r in paired),
        "history" if sources == {"history"} else "this pair" if sources <= {"this pair"} else "both")


@dataclass(frozen=True)
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
