# SPDX-License-Identifier: Apache-2.0
"""`memkit tune`'s decisions: from interleaved timings of memkit's own paths,
each strategy's MEMKIT_TUNABLES settings put in force in turn (the lab's
interleave: memkit.tune_experiment), to the
thresholds of this machine's profile, each move confirmed by timing it again
(the strategies raced: memkit.tuning.catalogue; the variants chosen by cache
level: level_choice; the profile written: profile_file; `--for` a program:
for_program).

The rule: at each measured size the strategy the table's default would run
there (the incumbent) stays, unless another strategy was faster in enough
paired rounds for a one-sided sign test to say p <= ALPHA, and by at least
MARGIN at the median.  A threshold moves off its default only where those
per-size choices put a different strategy on a measured size than the
default does; the profile says at which sizes and with what confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import geometric_mean, median
from typing import Optional

from memkit.judging import stats
from memkit.judging.judge import TUNE_ALPHA as ALPHA, TUNE_MARGIN as MARGIN
from memkit.judging.judge import TUNE_BAND_MIN as BAND_MIN, TUNE_NULL_CLIP as NULL_CLIP, TUNE_NULL_MIN as NULL_MIN
from memkit.lab.sizes import fmt_size
from memkit.tuning.catalogue import ALIGN_FLIP, NEVER, Paths, family_grid, flipped_align, parse_tunables, size_grid, strategies
from memkit.tuning.tune_experiment import band_of


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
         default: str, alpha: float = ALPHA) -> Pick:
    """The fastest challenger that beats the incumbent with confidence
    (alpha) on the ops together and is not confidently slower on any one of
    them."""
    best = None
    for name in names:
        if name == default:
            continue
        ch, inc = f"{family}:{name}", f"{family}:{default}"
        ev = paired(times, ch, inc, ops, size)
        if not ev.faster(alpha) or any(paired(times, ch, inc, [op], size).slower() for op in ops):
            continue
        if best is None or ev.median > best.median:
            best = ev
    if best is None:
        return Pick(size, default, default, None)
    return Pick(size, default, best.challenger.split(":", 1)[1], best)


class TimedPicks:
    """The deciders' source of picks: tune's timings (pick); every pick made
    is kept, by the workloads it judged, for the evidence file."""

    def __init__(self, times: Times, alpha: float = ALPHA):
        self.times = times
        self.alpha = alpha
        self.made: dict = {}   # (ops, size) -> Pick

    def names(self, family: str) -> list[str]:
        """The strategies timed for a family."""
        return [k.split(":", 1)[1] for k in self.times if k.startswith(f"{family}:")]

    def __call__(self, family: str, names: list[str], ops: list[str], size: int, default: str) -> Pick:
        got = pick(self.times, family, names, ops, size, default, self.alpha)
        self.made[(tuple(ops), size)] = got
        return got


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


@dataclass(frozen=True)
class Placed:
    """Where a window of `strategy` lands (place()) beside the default's:
    what the decision rests on, before any sentence says it."""
    names: tuple                    # (the "from" tunable,) or (it, the "below" tunable)
    d_lo: Optional[int]
    d_hi: Optional[int]
    lo: Optional[int]
    hi: Optional[int]
    moved: tuple                    # the picks whose size moved
    against: tuple                  # with no move: the sizes won against the default anyway
    span: tuple                     # the sizes measured, first and last


def placed(names: tuple, defaults: dict, picks: list[Pick], strategy: str) -> Placed:
    """The decision on `strategy`'s window; names is (the "from" tunable,)
    or (the "from" tunable, the "below" tunable)."""
    d_lo = defaults.get(names[0])
    d_hi = defaults.get(names[1]) if len(names) > 1 else None
    lo, hi, moved = place(picks, strategy, d_lo, d_hi, len(names) > 1)
    against = () if moved else tuple(p.size for p in picks if (p.chosen == strategy) != (p.default == strategy))
    return Placed(names, d_lo, d_hi, lo, hi, tuple(moved), against, (picks[0].size, picks[-1].size))


def window_choices(d: Placed, what: str) -> list[Choice]:
    """The Choice of each threshold of a placed window, and why in words."""
    names = d.names
    if not d.moved:
        why = (f"{what}: no measured size ({fmt_size(d.span[0])}..{fmt_size(d.span[1])}) "
               "where another choice won with confidence" if not d.against else
               f"{what}: confident wins against the default at {', '.join(fmt_size(s) for s in d.against)}, "
               "but no threshold follows them without moving a size that lacks confidence")
        return [Choice(names[0], d.d_lo, d.d_lo, why, False)] + \
            ([Choice(names[1], d.d_hi, d.d_hi, why, False)] if len(names) > 1 else [])
    where = (f"from {fmt_size(d.lo)}" if d.lo is not None else "never") + (
        f" below {fmt_size(d.hi)}" if len(names) > 1 and d.lo is not None and d.hi is not None else "")
    why = f"{what} {where} (default {fmt_size(d.d_lo)}): {evidence_text(list(d.moved))}"
    start_moved = d.lo != d.d_lo
    out = [Choice(names[0], d.d_lo, d.lo, why if start_moved else f"{what}: the start kept", start_moved)]
    if len(names) > 1:
        out.append(Choice(names[1], d.d_hi, d.hi, why if d.hi != d.d_hi else f"{what}: the end kept",
                          d.hi != d.d_hi))
    return out


def window(names: tuple, defaults: dict, picks: list[Pick], strategy: str, what: str) -> list[Choice]:
    """The Choices of the thresholds bounding `strategy`'s window: decided
    (placed), then said (window_choices)."""
    return window_choices(placed(names, defaults, picks, strategy), what)


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


def fmt_candidate(c) -> str:
    return c if isinstance(c, str) else fmt_size(c)   # a variant's name, a size or never


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


def confirmation_sizes(grid: list[int], s: dict) -> list[int]:
    """The sizes a move is timed again on: the grid it was decided on and
    the sizes between its points, which --check times: a threshold placed
    between two grid points can fall on a cliff neither showed (Intel Xeon
    6/167: rep_movsb_threshold 22.6 KiB, chosen on 2.8-16 KiB, made aligned
    19 KiB copies 0.42x).  s: tune's settings (lo, hi, per_octave)."""
    return sorted(set(grid) | set(size_grid(s["lo"], s["hi"], s["per_octave"], offset=0.5)))


def settle(confirmations: list[Confirmation], choices: list[Choice]) -> list[Choice]:
    """choices with every move that did not hold when timed again put back
    to its default."""
    dropped = {conf.choice.name for conf in confirmations if not conf.holds}
    return [Choice(c.name, c.default, c.default, f"{c.why}; did not hold when timed again", False)
            if c.name in dropped else c for c in choices]


def settle_lines(confirmations: list[Confirmation], back_to: str) -> list[str]:
    """What re-timing said of each move, and which went back to back_to
    (the default, glibc's value)."""
    lines = [f"  {conf.says()}" for conf in confirmations]
    dropped = sorted(conf.choice.name for conf in confirmations if not conf.holds)
    if dropped:
        lines.append(f"  back to {back_to}: {', '.join(dropped)} (the move did not hold when timed again)")
    return lines
