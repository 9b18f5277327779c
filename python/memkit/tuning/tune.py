# SPDX-License-Identifier: Apache-2.0
"""`memkit tune`'s decisions: from interleaved timings of memkit's own paths,
each strategy's MEMKIT_TUNABLES settings put in force in turn (the lab's
interleave: memkit.tune_experiment), to the
thresholds of this machine's profile, and the profile file itself.

The rule: at each measured size the strategy the table's default would run
there (the incumbent) stays, unless another strategy was faster in enough
paired rounds for a one-sided sign test to say p <= ALPHA, and by at least
MARGIN at the median.  A threshold moves off its default only where those
per-size choices put a different strategy on a measured size than the
default does; the profile says at which sizes and with what confidence.

A profile is MEMKIT_TUNABLES settings, one `name=value` a line, `#`
comments, and a `cpu=` line naming the CPU it was measured on (libmemkit
ignores it on another model).  The library looks for it at $MEMKIT_PROFILE,
else $XDG_CONFIG_HOME/memkit/profile, else ~/.config/memkit/profile;
MEMKIT_TUNABLES overrides it.
"""

from __future__ import annotations

import datetime
import math
import os
from dataclasses import dataclass
from pathlib import Path
from statistics import geometric_mean, median
from typing import Optional

from memkit.judging import stats
from memkit.judging.judge import TUNE_ALPHA as ALPHA, TUNE_MARGIN as MARGIN
from memkit.judging.judge import TUNE_BAND_MIN as BAND_MIN, TUNE_NULL_CLIP as NULL_CLIP, TUNE_NULL_MIN as NULL_MIN
from memkit.judging.judge import VARIANT_FLOOR, VARIANT_LEVELS
from memkit.lab import experiments as lab
from memkit.lab.sizes import fmt_size
from memkit.programs.recording import OPS
from memkit.store.outdir import starts_with, write_file
from memkit.tuning.tune_experiment import band_of


@dataclass(frozen=True)
class Strategy:
    """One way memkit can run a size range, forced through MEMKIT_TUNABLES."""
    name: str
    family: str                 # "memset" or "memcpy"
    settings: tuple             # ((tunable, value), ...)
    says: str                   # in words

    def tunables(self) -> str:
        return ":".join(f"{k}={v}" for k, v in self.settings)


NEVER = "never"
STRATEGIES = [
    Strategy("loop", "memset", (("rep_stosb_threshold", NEVER), ("nt_threshold", NEVER),
                                ("nt_threshold_zero", NEVER)), "the vector loop"),
    Strategy("rep_stosb", "memset", (("rep_stosb_threshold", 0), ("nt_threshold", NEVER),
                                     ("nt_threshold_zero", NEVER)), "rep stosb"),
    Strategy("nt", "memset", (("rep_stosb_threshold", NEVER), ("nt_threshold", 0),
                              ("nt_threshold_zero", 0)), "non-temporal stores"),
    Strategy("loop", "memcpy", (("rep_movsb_threshold", NEVER), ("nt_copy_threshold", NEVER)),
             "the vector loop"),
    Strategy("rep_movsb", "memcpy", (("rep_movsb_threshold", 0), ("rep_movsb_stop", NEVER),
                                     ("nt_copy_threshold", NEVER)), "rep movsb"),
    Strategy("nt", "memcpy", (("rep_movsb_threshold", NEVER), ("nt_copy_threshold", 0)),
             "non-temporal stores"),
]

# The parallel engine cuts work into 2 MiB chunks: below two there is nothing to share.
FAMILY_MIN_SIZE = {"parallel": 1 << 20}


def thread_counts(cpus: int) -> list[int]:
    """The pool sizes worth trying: 2, 4, 8 and the CPU count, up to 8."""
    return sorted({n for n in (2, 4, 8, min(cpus, 8)) if 2 <= n <= cpus})


# rep movsb with the other alignment condition than the defaults' (1: any
# dst - src; 64: only a multiple of 64, as on AMD): on the misaligned copy
# inside rep movsb's window it decides rep_movsb_align (decide_align).
ALIGN_FLIP = "rep_movsb_flip"


def flipped_align(defaults: dict) -> int:
    return 64 if defaults.get("rep_movsb_align") == 1 else 1


def strategies(family: str, cpus: int = 1, defaults: Optional[dict] = None) -> list[Strategy]:
    """A family's strategies; with the defaults, memcpy's include the
    alignment flip (ALIGN_FLIP)."""
    if family == "memcpy" and defaults is not None:
        a = flipped_align(defaults)
        return [s for s in STRATEGIES if s.family == family] + [
            Strategy(ALIGN_FLIP, family, (("rep_movsb_threshold", 0), ("rep_movsb_stop", NEVER),
                                          ("rep_movsb_align", a), ("nt_copy_threshold", NEVER)),
                     f"rep movsb with rep_movsb_align={a}")]
    if family == "parallel":
        return [Strategy("one", family, (("parallel_threshold", NEVER),), "one thread")] + [
            Strategy(f"threads={n}", family, (("parallel_threshold", 0), ("threads", n)), f"{n} threads")
            for n in thread_counts(cpus)]
    return [s for s in STRATEGIES if s.family == family]


def family_grid(family: str, grid: list[int]) -> list[int]:
    return [s for s in grid if s >= FAMILY_MIN_SIZE.get(family, 0)]


def candidate_name(s: Strategy) -> str:
    return f"{s.family}:{s.name}"


def default_profile_path(env=os.environ) -> Path:
    if env.get("MEMKIT_PROFILE") not in (None, "", "none"):
        return Path(env["MEMKIT_PROFILE"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "."), ".config")
    return Path(base) / "memkit" / "profile"


def parse_tunables(text: str) -> dict[str, Optional[int]]:
    """"a=4096:b=never" -> {"a": 4096, "b": None}; non-numeric values dropped."""
    out = {}
    for item in text.split(":"):
        k, _, v = item.partition("=")
        if v == NEVER:
            out[k] = None
        elif v.isdigit():
            out[k] = int(v)
    return out


def tunables_text(t: dict) -> str:
    """parse_tunables' inverse, names in order: the MEMKIT_TUNABLES spec
    of a dict (the default pool's size, "pool_threads", is no tunable)."""
    return ":".join(f"{k}={NEVER if v is None else v}" for k, v in sorted(t.items()) if k != "pool_threads")


def size_grid(lo: int, hi: int, per_octave: int, offset: float = 0.0) -> list[int]:
    """Sizes from lo to hi, per_octave a doubling, starting `offset` of a
    step above lo; multiples of 64 bytes."""
    out, i = [], 0
    while True:
        s = int(round(lo * 2 ** ((i + offset) / per_octave) / 64)) * 64
        if s > hi:
            return out
        if not out or s > out[-1]:
            out.append(s)
        i += 1


# ---- paired rounds ----

@dataclass
class Evidence:
    """A challenger against an incumbent at one size, over paired rounds."""
    challenger: str
    incumbent: str
    size: int
    speedups: list[float]       # per round: incumbent time / challenger time (> 1: challenger faster)

    @property
    def rounds(self) -> int:
        return len(self.speedups)

    @property
    def wins(self) -> int:
        return sum(r > 1 for r in self.speedups)

    @property
    def losses(self) -> int:
        return sum(r < 1 for r in self.speedups)

    @property
    def median(self) -> float:
        return median(self.speedups)

    @property
    def p_faster(self) -> float:
        return stats.sign_test_p(self.wins, self.rounds)

    @property
    def p_slower(self) -> float:
        return stats.sign_test_p(self.losses, self.rounds)

    def faster(self, alpha=ALPHA, margin=MARGIN) -> bool:
        return self.p_faster <= alpha and self.median >= 1 + margin

    def slower(self, alpha=ALPHA, margin=MARGIN) -> bool:
        return self.p_slower <= alpha and self.median <= 1 / (1 + margin)

    def says(self) -> str:
        return (f"{self.median:.2f}x, faster in {self.wins}/{self.rounds} rounds "
                f"(sign test p={self.p_faster:.2g})")


# times: {candidate: {(op, size): [ns per call, one per round]}}
Times = dict


# ---- --check: a change beyond what identical code shows ----

# The cells a profile does not change run the same code under the profile and
# the defaults: how far their speed-ups spread is the noise of the method,
# which the sign test alone cannot see where a round's configurations share
# more than chance (a process's page placement, a neighbour's burst).  Under
# the per-configuration processes tune used to time in, tune --check of a
# profile equal to the defaults (Zen 4) called 3, 14 and 20 of 164 identical
# cells changed, speed-ups 0.84..1.28x; each size band keeps its own center
# (its processes are its own: tune_experiment.BANDS).


@dataclass
class CheckNoise:
    """Identical code's log speed-ups: their center per size band (the two
    configurations' processes differ a little), their spread about it, and
    how far each lay from it."""
    centers: dict      # band -> center
    center: float      # over every band: for a band with too few cells
    scale: float
    deviations: list   # |log speed-up - its band's center|, one per identical cell

    @property
    def cells(self) -> int:
        return len(self.deviations)

    def deviation(self, ev: Evidence) -> float:
        return math.log(ev.median) - self.centers.get(band_of(ev.size), self.center)

    def bound(self, alpha=ALPHA) -> float:
        """What identical code reaches: the (1 - alpha) quantile of its
        deviations, the largest where there are too few for that quantile."""
        devs = sorted(self.deviations)
        k = math.ceil((1 - alpha) * (len(devs) + 1)) - 1
        return devs[min(k, len(devs) - 1)]

    def beyond(self, ev: Evidence, faster: bool, alpha=ALPHA) -> bool:
        """ev's median lies beyond its band's center, the right way, further
        than identical code goes and than a t (3 degrees of freedom) at
        their scale allows with one-sided p <= alpha: a busy host's noise is
        heavier-tailed than any model, so the cells themselves have a say."""
        d = self.deviation(ev)
        p = stats.one_sided_p(stats.t3_two_sided_p(d / max(self.scale, 1e-6)), (d > 0) == faster)
        return (d > 0) == faster and p <= alpha and abs(d) > self.bound(alpha)


def check_noise(same: list[Evidence]) -> Optional[CheckNoise]:
    """The noise of identical code from its cells; None with fewer than NULL_MIN."""
    cells = [(band_of(e.size), math.log(e.median)) for e in same if e.median > 0]
    if len(cells) < NULL_MIN:
        return None
    overall = median(x for _, x in cells)
    centers = {}
    for b in {b for b, _ in cells}:
        xs = [x for bb, x in cells if bb == b]
        centers[b] = stats.clipped_null(xs, None, NULL_CLIP, BAND_MIN)[0] if len(xs) >= BAND_MIN else overall
    devs = [x - centers[b] for b, x in cells]
    scale = stats.clipped_null(devs, 0.0, NULL_CLIP, NULL_MIN)[1]
    return CheckNoise(centers, overall, scale, [abs(d) for d in devs])


def check_verdict(ev: Evidence, noise: Optional[CheckNoise], alpha=ALPHA) -> int:
    """1 helped, -1 hurt, 0 neither: the sign test and the margin (Evidence),
    and, where identical cells tell the noise, beyond it with p <= alpha."""
    if ev.faster(alpha) and (noise is None or noise.beyond(ev, True, alpha)):
        return 1
    if ev.slower(alpha) and (noise is None or noise.beyond(ev, False, alpha)):
        return -1
    return 0


def identical_flags(same: list[Evidence], alpha=ALPHA) -> int:
    """How many identical cells the rule calls changed, each judged against
    the noise of the others (what the rule promises: about alpha of them)."""
    return sum(check_verdict(ev, check_noise(same[:i] + same[i + 1:]), alpha) != 0
               for i, ev in enumerate(same))


def paired(times: Times, challenger: str, incumbent: str, ops: list[str], size: int) -> Evidence:
    """Per round, the geometric mean over ops of incumbent/challenger time."""
    per_op = [list(zip(times[incumbent][(op, size)], times[challenger][(op, size)])) for op in ops]
    n = min(len(p) for p in per_op)
    speedups = [geometric_mean(p[k][0] / p[k][1] for p in per_op) for k in range(n)]
    return Evidence(challenger, incumbent, size, speedups)


@dataclass
class Pick:
    """What runs at one size: the default's strategy unless evidence moved it."""
    size: int
    default: str
    chosen: str
    evidence: Optional[Evidence]   # the winning challenger's, when chosen != default


def pick(times: Times, family: str, names: list[str], ops: list[str], size: int,
         default: str) -> Pick:
    """The fastest challenger that beats the incumbent with confidence on
    the ops together and is not confidently slower on any one of them."""
    best = None
    for name in names:
        if name == default:
            continue
        ch, inc = f"{family}:{name}", f"{family}:{default}"
        ev = paired(times, ch, inc, ops, size)
        if not ev.faster() or any(paired(times, ch, inc, [op], size).slower() for op in ops):
            continue
        if best is None or ev.median > best.median:
            best = ev
    if best is None:
        return Pick(size, default, default, None)
    return Pick(size, default, best.challenger.split(":", 1)[1], best)


class TimedPicks:
    """The deciders' source of picks: tune's timings (pick); every pick made
    is kept, by the workloads it judged, for the evidence file."""

    def __init__(self, times: Times):
        self.times = times
        self.made: dict = {}   # (ops, size) -> Pick

    def names(self, family: str) -> list[str]:
        """The strategies timed for a family."""
        return [k.split(":", 1)[1] for k in self.times if k.startswith(f"{family}:")]

    def __call__(self, family: str, names: list[str], ops: list[str], size: int, default: str) -> Pick:
        got = pick(self.times, family, names, ops, size, default)
        self.made[(tuple(ops), size)] = got
        return got


# ---- the strategy memkit runs at a size ----

class Paths:
    """Which strategy memkit runs for a cell (op, size) under tunables t (a
    parse_tunables dict; "pool_threads": the default pool's size): asked of
    the library, which decides it once (lab.paths, src/internal.h
    mk_set_path/mk_copy_path), and remembered; never decided here."""

    def __init__(self, bench_dir: Path):
        self.bench_dir = bench_dir
        self.known: dict = {}
        self._workloads: Optional[dict] = None

    @property
    def workloads(self) -> dict:
        """The timed workloads, op -> (family, in words), in their order: the
        library's table (bench/experiments/tune/tune_workloads.def, through memkit-tunables)."""
        if self._workloads is None:
            self._workloads = {w["op"]: (w["family"], w["words"])
                               for w in lab.tunables(self.bench_dir)["workloads"]}
        return self._workloads

    def ops(self, family: str) -> list[str]:
        return [op for op, (fam, _) in self.workloads.items() if fam == family]

    def of(self, t: dict, op: str, sizes: list[int]) -> list[str]:
        spec = tunables_text(t)
        missing = [s for s in dict.fromkeys(sizes) if (spec, op, s) not in self.known]
        if missing:
            for s, p in zip(missing, self.ask(spec, op, missing)):
                self.known[(spec, op, s)] = p
        got = [self.known[(spec, op, s)] for s in sizes]
        # the parallel engine's ("one loop", "pool nt"): the pool named by its size
        return [f"threads={t.get('pool_threads')}" + p[4:] if p.startswith("pool ") else p for p in got]

    def ask(self, spec: str, op: str, sizes: list[int]) -> list[str]:
        return lab.paths(self.bench_dir, spec, op, sizes)

    def at(self, t: dict, op: str, size: int) -> str:
        return self.of(t, op, [size])[0]

    def of_cells(self, t: dict, cells) -> dict:
        """{(op, size): strategy} for many cells, one question to the library per op."""
        by_op: dict = {}
        for op, size in cells:
            by_op.setdefault(op, []).append(size)
        return {(op, size): p for op, sizes in by_op.items() for size, p in zip(sizes, self.of(t, op, sizes))}


# ---- from picks to thresholds ----

@dataclass
class Choice:
    """One tunable: its default, the value measured, and why."""
    name: str
    default: Optional[int]          # None = never
    value: Optional[int]
    why: str
    moved: bool

    def setting(self) -> str:
        return f"{self.name}={NEVER if self.value is None else self.value}"

    def show(self, v) -> str:
        if self.name == "threads":
            return "derived" if not v else str(v)
        return fmt_candidate(v)


def in_window(s: int, lo: Optional[int], hi: Optional[int]) -> bool:
    return lo is not None and s >= lo and (hi is None or s < hi)


def place(picks: list[Pick], strategy: str, d_lo: Optional[int], d_hi: Optional[int],
          movable_hi: bool) -> tuple[Optional[int], Optional[int], list[Pick]]:
    """The window [lo, hi) of sizes that run `strategy`: the default's,
    unless another window follows confident picks.  A window is allowed only
    if every measured size it moves (puts in or out of the strategy,
    against the default) was picked so with confidence; of those, the one
    following the most evidence (sum of log speed-ups) wins.  Returns
    (lo, hi, the picks whose size moved)."""
    sizes = [p.size for p in picks]
    los = [d_lo] + sizes + [None]
    his = [d_hi] + (sizes + [None] if movable_hi else [])
    best, gain = (d_lo, d_hi, []), 0.0
    for lo in los:
        for hi in his:
            if lo is not None and hi is not None and hi <= lo:
                continue
            moved = [p for p in picks if in_window(p.size, lo, hi) != in_window(p.size, d_lo, d_hi)]
            if not moved or any(p.evidence is None or (p.chosen == strategy) != in_window(p.size, lo, hi)
                                for p in moved):
                continue
            g = sum(math.log(p.evidence.median) for p in moved)
            if g > gain + 1e-12:
                best, gain = (lo, hi, moved), g
    return best


def evidence_text(moved: list[Pick]) -> str:
    """The evidence at the sizes that moved, in one phrase."""
    evs = [p.evidence for p in moved]
    lo, hi = min(e.median for e in evs), max(e.median for e in evs)
    worst = max(evs, key=lambda e: e.p_faster)
    span = (fmt_size(evs[0].size) if len(evs) == 1
            else f"{fmt_size(evs[0].size)}..{fmt_size(evs[-1].size)} ({len(evs)} sizes)")
    speed = f"{lo:.2f}x" if len(evs) == 1 else f"{lo:.2f}-{hi:.2f}x"
    return (f"at {span} {speed} faster than the default's choice, in at least "
            f"{worst.wins}/{worst.rounds} rounds at each (sign test p<={worst.p_faster:.2g})")


def window(names: tuple, defaults: dict, picks: list[Pick], strategy: str, what: str) -> list[Choice]:
    """The Choice of each threshold bounding `strategy`'s window: names is
    (the "from" tunable,) or (the "from" tunable, the "below" tunable)."""
    d_lo = defaults.get(names[0])
    d_hi = defaults.get(names[1]) if len(names) > 1 else None
    lo, hi, moved = place(picks, strategy, d_lo, d_hi, len(names) > 1)
    if not moved:
        against = [p for p in picks if (p.chosen == strategy) != (p.default == strategy)]
        why = (f"{what}: no measured size ({fmt_size(picks[0].size)}..{fmt_size(picks[-1].size)}) "
               "where another choice won with confidence" if not against else
               f"{what}: confident wins against the default at {', '.join(fmt_size(p.size) for p in against)}, "
               "but no threshold follows them without moving a size that lacks confidence")
        return [Choice(n, defaults.get(n), defaults.get(n), why, False) for n in names]
    where = (f"from {fmt_size(lo)}" if lo is not None else "never") + (
        f" below {fmt_size(hi)}" if len(names) > 1 and lo is not None and hi is not None else "")
    why = f"{what} {where} (default {fmt_size(d_lo)}): {evidence_text(moved)}"
    out = [Choice(names[0], d_lo, lo, why, lo != d_lo)]
    if len(names) > 1:
        out.append(Choice(names[1], d_hi, hi, why if hi != d_hi else f"{what}: the end kept", hi != d_hi))
    if not out[0].moved:
        out[0].why = f"{what}: the start kept"
    return out


# A decider: (picks, the grid, the defaults in force, Paths) -> (the
# Choices, {label: [Pick per size]}); picks(family, names, ops, size,
# default) -> Pick is TimedPicks, or the picks an evidence file recorded.

def decide_memset(picks_of, grid: list[int], defaults: dict, paths: Paths) -> tuple[list[Choice], dict]:
    names = [s.name for s in strategies("memset")]
    picks = {}
    for op in ("set0", "set"):
        picks[op] = [picks_of("memset", names, [op], s, d) for s, d in zip(grid, paths.of(defaults, op, grid))]
    out = (window(("nt_threshold_zero",), defaults, picks["set0"], "nt", "non-temporal stores for zero fills")
           + window(("nt_threshold",), defaults, picks["set"], "nt", "non-temporal stores for non-zero fills"))
    # rep stosb against the vector loop, one threshold for both values: on
    # the sizes below both non-temporal thresholds, judged on both together.
    nt_from = min((c.value for c in out if c.value is not None), default=None)
    below = [s for s in grid if nt_from is None or s < nt_from]
    no_nt = dict(defaults, nt_threshold=None, nt_threshold_zero=None)
    rep_picks = [picks_of("memset", ["loop", "rep_stosb"], ["set0", "set"], s, d)
                 for s, d in zip(below, paths.of(no_nt, "set0", below))]
    if below:
        out += window(("rep_stosb_threshold",), defaults, rep_picks, "rep_stosb",
                      "rep stosb (zero and non-zero fills)")
    picks["rep"] = rep_picks
    return out, picks


def decide_memcpy(picks_of, grid: list[int], defaults: dict, paths: Paths) -> tuple[list[Choice], dict]:
    names = [s.name for s in strategies("memcpy")]
    # judged on both workloads together, the incumbent what the aligned copy runs
    picks = [picks_of("memcpy", names, ["copy", "copy3"], s, d)
             for s, d in zip(grid, paths.of(defaults, "copy", grid))]
    # rep movsb goes first in memkit's copy, in its window; non-temporal
    # stores from their threshold on (outside that window).
    out = (window(("nt_copy_threshold",), defaults, picks, "nt",
                  "non-temporal copies (aligned and misaligned together)")
           + window(("rep_movsb_threshold", "rep_movsb_stop"), defaults, picks, "rep_movsb", "rep movsb"))
    align, align_picks = decide_align(picks_of, grid, defaults, out)
    return out + align, {"copy": picks, **({"align": align_picks} if align_picks else {})}


def decide_align(picks_of, grid: list[int], defaults: dict, out: list[Choice]) -> tuple[list[Choice], list]:
    """rep_movsb_align: on the copy with the destination 3 bytes off, at the
    sizes inside the rep movsb window just decided, rep movsb under the
    other alignment condition (ALIGN_FLIP) against the defaults' (the
    "rep_movsb" strategy).  As a threshold does, it moves only if every
    measured size it changes (all of the window's) was picked so with
    confidence.  Not measured (an evidence file from before): none."""
    if ALIGN_FLIP not in picks_of.names("memcpy"):
        return [], []
    d = defaults.get("rep_movsb_align")
    flip = flipped_align(defaults)
    value = {c.name: c.value for c in out}
    lo, hi = value.get("rep_movsb_threshold"), value.get("rep_movsb_stop")
    sizes = [s for s in grid if in_window(s, lo, hi)]
    what = f"rep movsb for misaligned copies (dst - src not a multiple of {max(d or 1, flip)})"
    if not sizes:
        return [Choice("rep_movsb_align", d, d, f"{what}: no measured size in rep movsb's window", False)], []
    picks = [picks_of("memcpy", ["rep_movsb", ALIGN_FLIP], ["copy3"], s, "rep_movsb") for s in sizes]
    moved = [p for p in picks if p.chosen == ALIGN_FLIP]
    span = f"{fmt_size(sizes[0])}..{fmt_size(sizes[-1])}"
    if len(moved) == len(sizes):
        why = (f"{what}: {'allowed' if flip == 1 else 'not allowed'} (rep_movsb_align={flip}, default {d}): "
               f"the destination 3 bytes off, {evidence_text(moved)}")
        return [Choice("rep_movsb_align", d, flip, why, True)], picks
    why = (f"{what}: {'allowed' if d == 1 else 'not allowed'} as the default says: rep_movsb_align={flip} "
           f"was faster with confidence at {len(moved)} of the {len(sizes)} sizes in the window ({span})")
    return [Choice("rep_movsb_align", d, d, why, False)], picks


def decide_parallel(picks_of, grid: list[int], defaults: dict, paths: Paths) -> tuple[list[Choice], dict]:
    """From which size the pool beats one thread, and with how many threads;
    `defaults["pool_threads"]` is the default pool's size."""
    names = picks_of.names("parallel")
    pool = f"threads={defaults.get('pool_threads', 1)}"
    if pool not in names:
        return [], {}
    # the engine's strategy, not the method each thread then runs
    picks = [picks_of("parallel", names, ["pset", "pcopy"], s, d.split()[0])
             for s, d in zip(grid, paths.of(defaults, "pset", grid))]
    # "parallel" is any pool size: the threshold is where one thread stops.
    as_pool = [Pick(p.size, "pool" if p.default != "one" else "one",
                    "pool" if p.chosen != "one" else "one", p.evidence) for p in picks]
    out = window(("parallel_threshold",), defaults, as_pool, "pool", "the thread pool (mk_parallel_memset/memcpy)")
    top = picks[-1] if picks else None
    if top and top.chosen != "one" and top.chosen != pool:
        n = int(top.chosen.split("=")[1])
        out.append(Choice("threads", defaults.get("threads"), n,
                          f"{n} threads (the default pool has {pool[8:]}): at {fmt_size(top.size)} "
                          f"{top.evidence.says()}", True))
    return out, {"parallel": picks}


DECIDERS = {"memset": decide_memset, "memcpy": decide_memcpy, "parallel": decide_parallel}


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


def fmt_candidate(c) -> str:
    return c if isinstance(c, str) else fmt_size(c)   # a variant's name, a size or never


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


# ---- the profile ----

# How memkit recognises a profile it wrote (and may replace): its first line.
PROFILE_MARKER = b"# memkit profile"
profile_is_ours = starts_with(PROFILE_MARKER)


def cpu_line(fp: dict) -> str:
    """The profile's "cpu=" line, which libmemkit compares with the CPU it runs on."""
    return (f"cpu={fp.get('vendor', '?')} family={fp.get('family', '?')} model={fp.get('model', '?')} "
            f"microcode={fp.get('microcode', '?')}")


# ---- confirming the moves before the profile is written ----
#
# A tune on a busy 2-vCPU VM (Zen 3) moved five thresholds that `tune --check`
# found hurting 5 of the 7 changed cells two minutes later (0.68-0.76x, 0 of
# 12 rounds faster): one spell of a neighbour decided them.  So every move is
# timed again against the defaults, in fresh processes, interleaved, by
# --check's rule, and kept only if it holds there.


@dataclass
class Confirmation:
    """What re-timing said of one move (a Choice that moved)."""
    choice: Choice
    cells: list          # the cells whose path this move decides, given the others
    helped: list
    hurt: list

    @property
    def holds(self) -> bool:
        """No cell hurt, and faster beyond the noise somewhere it decides
        (a move that changes no re-timed cell has nothing to show: kept)."""
        return not self.hurt and (bool(self.helped) or not self.cells)

    def says(self) -> str:
        if not self.cells:
            return f"{self.choice.setting()}: no re-timed size runs another path under it; kept"
        word = "holds" if self.holds else "DROPPED"
        hurt = f", hurt at {len(self.hurt)} ({', '.join(fmt_candidate(c[1]) for c in self.hurt[:4])})" if self.hurt else ""
        return (f"{self.choice.setting()}: {word}: faster beyond the noise at {len(self.helped)} of the "
                f"{len(self.cells)} sizes it decides{hurt}")


def workload_cells(paths: Paths, sizes: list[int]) -> list:
    """Every timed workload at the sizes its family is timed at: the cells
    --check and the confirmation time."""
    return [(op, size) for op, (family, _) in paths.workloads.items() for size in family_grid(family, sizes)]


def judge_cells(times: Times, challenger: str, incumbent: str, cells: list, same: set) -> tuple:
    """(rows, noise, verdicts) of a challenger against an incumbent timed in
    the same rounds: each cell's paired evidence, the noise read from the
    cells in `same` (the same code under both), and check_verdict of every
    cell.  --check and the confirmation judge by this one rule."""
    rows = {c: paired(times, challenger, incumbent, [c[0]], c[1]) for c in cells}
    noise = check_noise([rows[c] for c in cells if c in same])
    return rows, noise, {c: check_verdict(rows[c], noise) for c in cells}


def tuned_tunables(defaults: dict, moved: list[Choice]) -> dict:
    """The defaults with the moves in force (a parse_tunables dict)."""
    return dict(defaults, **parse_tunables(":".join(c.setting() for c in moved)))


def confirm(moved: list[Choice], defaults: dict, cells: list, times: Times, paths: Paths,
            ) -> list[Confirmation]:
    """Each move judged on `times` (labels "defaults" and "tuned", every
    move in force): the cells where it decides the path (the path with every
    move differs from the path with all moves but this one), each by
    judge_cells against the noise of the cells no move changes."""
    tuned = tuned_tunables(defaults, moved)
    with_all, at_defaults = paths.of_cells(tuned, cells), paths.of_cells(defaults, cells)
    _, _, verdicts = judge_cells(times, "tuned", "defaults", cells,
                                 {c for c in cells if with_all[c] == at_defaults[c]})
    out = []
    for m in moved:
        without = paths.of_cells(tuned_tunables(defaults, [o for o in moved if o is not m]), cells)
        mine = [c for c in cells if without[c] != with_all[c]]
        out.append(Confirmation(m, mine, [c for c in mine if verdicts[c] > 0],
                                [c for c in mine if verdicts[c] < 0]))
    return out


def write_profile(path: Path, choices: list[Choice], fingerprint: dict, method: str) -> None:
    """Writes the settings that moved off the defaults; the others as
    comments, so a new memkit's table still applies to them."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    lines = [
        "# memkit profile, written by `memkit tune`; read by libmemkit at load time.",
        f"# machine: {fingerprint.get('cpu_model', '?')} (microcode {fingerprint.get('microcode', '?')}), "
        f"kernel {fingerprint.get('kernel', '?')}, glibc {fingerprint.get('glibc', '?')}",
        f"# measured: {now}.  MEMKIT_TUNABLES overrides any line; delete this file to go back",
        f"# to the built-in defaults (strategy row {fingerprint.get('strategy', '?')}).  "
        "`memkit tune --check` measures what this profile changes.",
        f"# method: {method}",
        "",
        "# the CPU measured on: libmemkit ignores this profile on another vendor, family or model",
        cpu_line(fingerprint),
    ]
    for c in choices:
        if c.moved:
            lines += ["", f"# {c.why}", c.setting()]
    kept = [c for c in choices if not c.moved]
    if kept:
        lines += ["", "# kept at the built-in default (not written, so a newer memkit's table applies):"]
        lines += [f"#   {c.name}={c.show(c.default)}: {c.why}" for c in kept]
    write_file(path, "\n".join(lines) + "\n", "the profile", profile_is_ours)


# ---- tuning for one program: `memkit tune --for RECORDING` ----
#
# A recording (memkit record) says how often the program calls each size.
# Only the sizes that carry a share of its calls or bytes are measured, the
# rule above decides as always on them, and a threshold it moves is then
# weighed by the recording: kept only if the time it saves on the program's
# calls outweighs what it costs where it loses.

SIGNIFICANT = 0.01   # a size matters with this share of its function's calls or bytes
# The preload's functions, and which tune family runs them (memcpy is memmove there).
FAMILY_OF = {"memset": "memset", "memcpy": "memcpy", "memmove": "memcpy"}
# The thresholds a recorded call can reach, per family.
FAMILY_THRESHOLDS = {"memset": ("rep_stosb_threshold", "nt_threshold_zero", "nt_threshold"),
                     "memcpy": ("rep_movsb_threshold", "nt_copy_threshold")}


@dataclass
class ForPlan:
    """What `tune --for` measures for a recording, and why."""
    grids: dict          # family -> the sizes to time
    calls: dict          # family -> {size: calls per run} (every recorded size)
    notes: list          # lines: per function, which sizes and why
    largest: int         # the largest call recorded, any function
    nothing: Optional[str] = None   # the one line when no threshold is within reach


def plan_for(dists: dict, calls: dict, defaults: dict, lo: int = 1 << 10,
             hi: Optional[int] = None, share: float = SIGNIFICANT) -> ForPlan:
    """dists: function -> {size: probability} (line 1 of its CSV); calls:
    function -> calls in the recorded run (summary.json).  A size is timed
    if it holds at least `share` of its function's calls or of its bytes and
    lies in [lo, hi]; functions never called are skipped."""
    grids, per_size, notes, largest = {}, {}, [], 0
    for fn, dist in dists.items():
        n = calls.get(fn) or 0
        if fn not in FAMILY_OF or not n or not dist:
            continue
        family = FAMILY_OF[fn]
        total_p = sum(dist.values())
        total_bytes = sum(s * p for s, p in dist.items())
        at = per_size.setdefault(family, {})
        for s, p in dist.items():
            at[int(s)] = at.get(int(s), 0.0) + n * p / total_p
        largest = max([largest] + [int(s) for s, p in dist.items() if p > 0])
        keep = sorted(int(s) for s, p in dist.items()
                      if (p / total_p >= share or (total_bytes and s * p / total_bytes >= share))
                      and s >= lo and (hi is None or s <= hi))
        grids.setdefault(family, set()).update(keep)
        if keep:
            sizes = ", ".join(f"{fmt_size(s)} ({fmt_calls(n * dist[s] / total_p)} calls, "
                              f"{s * dist[s] / total_bytes:.0%} of bytes)" for s in keep)
            notes.append(f"{fn}: {n} calls; timing {sizes}: each holds >= {share:.0%} of {fn}'s calls "
                         f"or bytes and is >= {fmt_size(lo)}")
        else:
            notes.append(f"{fn}: {n} calls, none at a size >= {fmt_size(lo)} with >= {share:.0%} "
                         "of its calls or bytes: not timed")
    grids = {f: sorted(g) for f, g in grids.items() if g}
    reachable = [defaults.get(t) for f in per_size for t in FAMILY_THRESHOLDS[f]]
    reachable = [t for t in reachable if t is not None]
    plan = ForPlan(grids, per_size, notes, largest)
    if not per_size:
        plan.nothing = "nothing to tune for this program: the recording has no memset, memcpy or memmove calls"
    elif not reachable or largest < min(reachable):
        plan.nothing = (f"nothing to tune for this program: its largest call, {fmt_size(largest)}, is below "
                        f"every threshold" + (f" (the lowest, {fmt_size(min(reachable))})" if reachable else ""))
    elif not grids:
        plan.nothing = (f"nothing to tune for this program: no size >= {fmt_size(lo)} holds "
                        f"{share:.0%} of its calls or bytes")
    return plan


def fmt_calls(n: float) -> str:
    """Calls per run from a recording's probabilities: whole numbers, except below 10."""
    return f"{n:.0f}" if n >= 10 else f"{n:.2g}"


def fmt_ns(ns: float) -> str:
    a = abs(ns)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if a >= div:
            return f"{ns / div:.2g} {unit}" if a < 10 * div else f"{ns / div:.0f} {unit}"
    return f"{ns:.0f} ns"


@dataclass
class Weight:
    """A threshold move weighed by a recording: ns per run of the program."""
    saved: float                 # summed where the move saves time
    cost: float                  # summed where it loses (>= 0)
    where: list                  # (size, calls, ns saved per call) at the sizes it changes

    @property
    def net(self) -> float:
        return self.saved - self.cost

    def calls_text(self) -> str:
        top = sorted(self.where, key=lambda w: -abs(w[1] * w[2]))[:3]
        text = ", ".join(f"{fmt_calls(c)} call{'s' if fmt_calls(c) != '1' else ''} of {fmt_size(s)}" for s, c, _ in top)
        return text + (f" and {len(self.where) - 3} more sizes" if len(self.where) > 3 else "")


def weigh(family: str, defaults: dict, changes: dict, times: Times, calls_at: dict, paths: Paths) -> Weight:
    """What moving the tunables in `changes` (name -> value) off `defaults`
    does to a program that makes calls_at[size] calls per run: at each
    measured size whose path it changes, the calls times the per-call
    difference of the medians (default path's minus the new path's), the
    mean over the family's workloads (memset: zero and non-zero fills
    alike, as a recording does not tell the value; memcpy: aligned and
    misaligned alike).  Sizes not measured count nothing."""
    new = dict(defaults, **changes)
    ops = paths.ops(family)
    cells = [(op, size) for op in ops for size in calls_at]
    old_paths, new_paths = paths.of_cells(defaults, cells), paths.of_cells(new, cells)
    saved = cost = 0.0
    where = []
    for size, n in sorted(calls_at.items()):
        per_op = []
        for op in ops:
            old_p, new_p = old_paths[(op, size)], new_paths[(op, size)]
            if old_p == new_p:
                per_op.append(0.0)
                continue
            old_t = times.get(f"{family}:{old_p}", {}).get((op, size))
            new_t = times.get(f"{family}:{new_p}", {}).get((op, size))
            if not old_t or not new_t:
                per_op = None
                break
            per_op.append(median(old_t) - median(new_t))
        if not per_op or not any(per_op):
            continue
        d = sum(per_op) / len(per_op)
        where.append((size, n, d))
        if d > 0:
            saved += n * d
        else:
            cost -= n * d
    return Weight(saved, cost, where)


def weigh_choices(family: str, choices: list[Choice], defaults: dict, times: Times,
                  calls_at: dict, paths: Paths) -> list[str]:
    """The rule's moves, weighed by a recording one after the other, each
    against the defaults with the moves kept before it (so that two moves
    of the same calls are not both credited with them): a move whose
    estimate does not save time on the program's calls goes back to the
    default.  Edits `choices` in place; returns one line per move weighed."""
    # rep movsb's window is one move: its start and its end together.
    starts = {c.name for c in choices if c.moved}
    groups = [[c] for c in choices if c.moved and not (c.name == "rep_movsb_stop" and "rep_movsb_threshold" in starts)]
    for g in groups:
        if g[0].name == "rep_movsb_threshold":
            g += [c for c in choices if c.moved and c.name == "rep_movsb_stop"]
    lines, base = [], dict(defaults)
    for g in groups:
        w = weigh(family, base, {c.name: c.value for c in g}, times, calls_at, paths)
        move = " and ".join(f"{c.name} to {c.show(c.value)}" for c in g)
        after = " (after the moves above)" if base != defaults else ""
        if w.net > 0:
            line = (f"moving {move} saves ~{fmt_ns(w.net)} per run of this program{after} ({w.calls_text()})"
                    + (f"; that is net of {fmt_ns(w.cost)} it costs where it loses" if w.cost else ""))
            for c in g:
                c.why += f"; for the recorded program: {line}"
                base[c.name] = c.value
        else:
            line = (f"not moving {move}: on this program's calls{after} it would save {fmt_ns(w.saved)} and "
                    f"cost {fmt_ns(w.cost)} per run" + (f" ({w.calls_text()})" if w.where else
                                                         " (none of its measured calls is on a size it changes)"))
            for c in g:
                c.value, c.moved, c.why = c.default, False, f"{c.why}; but {line}"
        lines.append(line)
    return lines
