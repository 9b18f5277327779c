# SPDX-License-Identifier: Apache-2.0
"""`memkit tune --for RECORDING`: the sizes a recorded program calls that
are worth timing, and each threshold move weighed by the time it saves or
costs that program."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Optional

from memkit.lab.sizes import fmt_size
from memkit.tuning.catalogue import Paths
from memkit.tuning.tune import Choice, Times


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
