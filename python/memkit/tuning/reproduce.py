# SPDX-License-Identifier: Apache-2.0
"""`memkit tune`'s moves confirmed so that a second tune on the same machine
makes them too: each move proposed by the timed stages (tune.py) or the
levels (level_choice.py) is timed again against the defaults in
independent batches (each its own processes, one after the other, the two
settings interleaved inside it) and kept only where the batches agree by
the between-batch rule (memkit.judging.between_batches); otherwise tune
says it is not sure and keeps the default.

Why batches: three `memkit tune --dry-run` in a row on Zen 4 (family 25,
model 17) moved nt_threshold to 45.3 MiB, then not at all, then to 32 MiB,
each move "faster in 11/12 rounds": the rounds of one run share its
processes and its neighbours' spell, so they cannot say how far the next
run lands.

A threshold's value is rounded toward the default as far as the evidence
allows: of the tuning grid's points between the proposed value and the
default, the one nearest the default whose move is still confirmed, as
long as the sizes it gives back ran equal within the between-batch noise
(a plateau between 8 and 16 MiB is no reason to leave a default of 16 MiB).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Optional

from memkit.judging.between_batches import Batches
from memkit.judging.judge import VARIANT_FLOOR
from memkit.lab.sizes import fmt_size
from memkit.tuning.tune import Choice, Times, fmt_candidate, tuned_tunables


# The timed stages' rule proposes a move at p <= tune.ALPHA; confirming in
# batches is what keeps a move out of the profile, so a proposal needs less.
PROPOSE_ALPHA = 0.2

NOT_SURE = "not sure: the independent batches did not agree"


def cell_gains(batches: list[Times], cell) -> list[float]:
    """Per batch: the log of the median over its rounds of the defaults'
    time / the tuned time at one cell (> 0: tuned faster)."""
    out = []
    for times in batches:
        pairs = zip(times["defaults"][cell], times["tuned"][cell])
        out.append(math.log(median(a / b for a, b in pairs)))
    return out


def gain_over(gains: dict, cells: list) -> Batches:
    """The batches' estimates of a move's gain: per batch, the mean over
    the cells it decides of their log speed-ups (gains: cell -> its
    cell_gains; each size weighed alike)."""
    per_cell = [gains[c] for c in cells]
    return Batches(tuple(sum(batch) / len(per_cell) for batch in zip(*per_cell)))


def candidate_values(choice: Choice, grid: list[int]) -> list:
    """The value timed, then the grid's points strictly between it and
    the default, from it toward the default (None: never, above every size)."""
    v, d = choice.value, choice.default
    if v is None:
        return [v]
    if d is None or v < d:
        return [v] + [g for g in grid if v < g and (d is None or g < d)]
    return [v] + sorted((g for g in grid if d < g < v), reverse=True)


def octave_values(choice: Choice, grid: list[int]) -> list:
    """candidate_values on whole octaves (powers of two): a value is
    rounded to the step between-run noise lets tune tell apart.  On Zen 4
    the batches kept nt_copy_threshold at 8 MiB in some runs and 11.3 MiB in
    others (8-9.5 MiB 1.11x, batches 0.98-1.26x): half an octave is within
    that noise, an octave is not."""
    return [v for v in candidate_values(choice, grid) if v is None or v & (v - 1) == 0]


def reach(choice: Choice, grid: list[int]):
    """The value the batches time a move at: one grid point beyond the
    proposed value, away from the default, so that where the proposal
    itself lands (8 or 11.3 MiB, by one run's noise) the batches look at the
    same sizes and the walk toward the default decides."""
    v, d = choice.value, choice.default
    if v is None:
        return v
    beyond = [g for g in grid if g < v] if d is None or v < d else [g for g in grid if g > v]
    if not beyond:
        return v
    return max(beyond) if d is None or v < d else min(beyond)


def span(cells: list) -> str:
    sizes = sorted({c[1] for c in cells})
    return fmt_size(sizes[0]) if len(sizes) == 1 else f"{fmt_size(sizes[0])}-{fmt_size(sizes[-1])}"


@dataclass
class Confirmed:
    """What the batches said of one proposed move."""
    choice: Choice                      # as timed: the proposal carried to reach()
    value: object                       # what is kept: choice.default when not sure
    cells: list                         # the cells the kept (else the proposed) value decides
    gain: Optional[Batches]             # their gain, per batch
    given_back: list = field(default_factory=list)   # cells between the proposed and kept value
    given_gain: Optional[Batches] = None
    hurt: list = field(default_factory=list)         # cells the timed value made slower, by the rule
    proposed: object = None                          # the timed stage's value
    alone: bool = False                              # it changes no timed size without moves not sure

    @property
    def kept(self) -> bool:
        return self.value != self.choice.default

    @property
    def untimed(self) -> bool:
        return not self.cells and not self.alone

    def says(self) -> str:
        c, show = self.choice, self.choice.show
        if self.alone:
            return (f"{c.name}: not sure (without the moves not sure it changes no re-timed size); "
                    f"default {show(c.default)} kept")
        if self.untimed:
            return f"{c.name}: {show(c.default)} -> {show(c.value)}: no re-timed size runs another path under it; kept"
        if not self.kept:
            hurt = f", slower at {span(self.hurt)}" if self.hurt else ""
            return (f"{c.name}: not sure ({span(self.cells)}: {self.gain.says()}{hurt}, not faster in every "
                    f"batch beyond that noise); default {show(c.default)} kept")
        line = (f"{c.name}: {show(c.default)} -> {show(self.value)}: {self.gain.says()} at {span(self.cells)}, "
                f"faster in every batch")
        if self.given_back:
            line += (f" (proposed {show(self.proposed)}, timed from {show(c.value)}; {span(self.given_back)} "
                     f"equal within the between-batch noise: {self.given_gain.says()})")
        return line


def confirm(moved: list[Choice], defaults: dict, cells: list, batches: list[Times], paths,
            grid: list[int], proposed: Optional[dict] = None) -> list[Confirmed]:
    """Each move judged on the batches (labels "defaults" and "tuned", every
    move of `moved` in force under "tuned", at the value timed: reach() of
    the proposal, which `proposed` names by tunable): the cells where it
    decides the path (as tune.confirm), its value walked from the timed one
    toward the default over the grid's whole octaves (octave_values), each
    step giving back sizes the batches agree on no gain at; kept at the last
    value whose own cells are faster by the rule and none slower; where no
    octave holds, the same walk over every grid point; else not sure.  A
    move is judged beside the others kept: judged again without those found
    not sure (rep movsb's end means nothing without its start), until none
    drops; one that then changes no timed size goes back to its default."""
    with_all = paths.of_cells(tuned_tunables(defaults, moved), cells)
    gains = {c: cell_gains(batches, c) for c in cells}   # once: every pass and step reads them
    slower = {c for c in cells if Batches(tuple(gains[c])).verdict() < 0}
    out = {}
    active = list(moved)
    while active:
        for got in judge_beside(active, len(active) < len(moved), defaults, cells, gains, paths, grid,
                                proposed or {}, with_all, slower):
            out[got.choice.name] = got
        left = [m for m in active if out[m.name].kept]
        if len(left) == len(active):
            break
        active = left
    return [out[m.name] for m in moved]


def judge_beside(active: list[Choice], after_drops: bool, defaults, cells, gains: dict, paths, grid, proposed: dict,
                 with_all: dict, slower: set) -> list[Confirmed]:
    """confirm()'s one pass: each move of `active` with the others of it in
    force and every other move at its default; only the cells the batches
    timed on the path it would run count."""
    withouts = {m.name: paths.of_cells(tuned_tunables(defaults, [o for o in active if o is not m]), cells)
                for m in active}
    at_active = paths.of_cells(tuned_tunables(defaults, active), cells)
    # a cell two moves decide (a pool's copy: parallel_threshold and the
    # copy's own) speaks for neither where a move has cells of its own
    deciders = {c: sum(at_active[c] != w[c] for w in withouts.values()) for c in cells}
    out = []
    for m in active:
        others = [o for o in active if o is not m]
        without = withouts[m.name]

        def decided(value):
            """The cells `value` decides that the batches timed on the path it
            would run (its own, where it has any)."""
            at = paths.of_cells(tuned_tunables(defaults, others + [Choice(m.name, m.default, value, "", True)]), cells)
            mine = [c for c in cells if at[c] != without[c] and at[c] == with_all[c]]
            return [c for c in mine if deciders[c] == 1] or mine

        was = proposed.get(m.name, m.value)
        timed = decided(m.value)
        if not timed:   # kept only if it never had a timed size: with the others dropped, it does nothing
            out.append(Confirmed(m, m.default if after_drops else was, [], None, proposed=was,
                                 alone=after_drops))
            continue
        got = Confirmed(m, m.default, timed, gain_over(gains, timed),
                        hurt=[c for c in timed if c in slower], proposed=was)
        # whole octaves first; the grid's every point only where none holds
        for values in (octave_values(m, grid), candidate_values(m, grid)):
            first = last = None   # the cells of the first and the last value kept
            for value in values:
                mine = decided(value)
                if not mine:
                    continue
                if last is not None:
                    step = [c for c in last if c not in mine]
                    if step and gain_over(gains, step).verdict() > 0:
                        break   # giving these back loses a gain the batches agree on
                gain = gain_over(gains, mine)
                if gain.verdict() > 0 and not any(c in slower for c in mine):
                    first, last = first or mine, mine
                    back = [c for c in first if c not in mine]
                    got = Confirmed(m, value, mine, gain, back, gain_over(gains, back) if back else None,
                                    proposed=was)
            if got.kept:
                break
        out.append(got)
    return out


def settle(confirmed: list[Confirmed], choices: list[Choice]) -> list[Choice]:
    """choices with each confirmed move at its kept value, and each not-sure
    move back at its default, the reason appended."""
    by = {c.choice.name: c for c in confirmed}
    out = []
    for c in choices:
        conf = by.get(c.name)
        if conf is None or conf.untimed:
            out.append(c)
        elif conf.kept:
            note = (f"; confirmed in independent batches at {fmt_candidate(conf.value)}"
                    + (f" (proposed {fmt_candidate(c.value)})" if conf.value != c.value else ""))
            out.append(Choice(c.name, c.default, conf.value, c.why + note, True))
        else:
            out.append(Choice(c.name, c.default, c.default,
                              f"{c.why}; {NOT_SURE}", False))
    return out


# ---- the small-size design: variants and the thresholds the levels chose ----

@dataclass
class DesignConfirmed:
    """One function's small-size moves (its variant, the thresholds the
    levels chose for it) against its defaults, per batch: the gain in the
    geometric mean over the levels, and each side's worst level against
    the floor (level_choice's rule: a design below it at some level is
    out), each judged between batches."""
    function: str
    moves: list          # Choice
    gain: Batches        # log(tuned's geometric mean / the defaults')
    floor: Batches       # log(tuned's worst level / VARIANT_FLOOR)
    default_floor: Batches

    @property
    def kept(self) -> bool:
        """Faster by the rule, keeping the floor beyond the batches' noise
        (or the defaults' is below it too); or, where the defaults' design
        falls below the floor by the rule, the tuned one keeps it."""
        keeps, default_below = self.floor.verdict(margin=0.0) > 0, self.default_floor.verdict(margin=0.0) < 0
        return (self.gain.verdict() > 0 and (keeps or default_below)) or (keeps and default_below)

    def says(self) -> str:
        what = ", ".join(f"{c.name} {c.show(c.default)} -> {c.show(c.value)}" for c in self.moves)
        lo, hi = (VARIANT_FLOOR * math.exp(g) for g in (min(self.floor.gains), max(self.floor.gains)))
        worst = f"its worst level {lo:.2f}-{hi:.2f}x glibc by batch, against the {VARIANT_FLOOR:.2f}x floor"
        if self.kept:
            return f"{self.function} ({what}): {self.gain.says()} over the levels, {worst}; kept"
        why = ("not faster in every batch beyond that noise" if self.gain.verdict() <= 0 else
               "not above the floor in every batch beyond that noise")
        return (f"{self.function} ({what}): not sure ({self.gain.says()} over the levels, {worst}; {why}); "
                f"default{'s' if len(self.moves) > 1 else ''} kept")


def design_confirmed(function: str, moves: list, batch_scores: list[dict]) -> DesignConfirmed:
    """batch_scores: per batch, {"defaults"|"tuned": {function: its
    level_choice.LevelScore}}."""
    def each(f):
        return Batches(tuple(f(b["tuned"][function], b["defaults"][function]) for b in batch_scores))
    return DesignConfirmed(function, moves, each(lambda t, d: math.log(t.geomean / d.geomean)),
                           each(lambda t, d: math.log(t.worst[1] / VARIANT_FLOOR)),
                           each(lambda t, d: math.log(d.worst[1] / VARIANT_FLOOR)))


def settle_design(confirmed: list[DesignConfirmed], choices: list[Choice]) -> list[Choice]:
    dropped = {c.name for d in confirmed if not d.kept for c in d.moves}
    return [Choice(c.name, c.default, c.default, f"{c.why}; {NOT_SURE}", False)
            if c.name in dropped else c for c in choices]
