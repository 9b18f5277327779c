# SPDX-License-Identifier: Apache-2.0
"""`memkit tune --glibc`: the C library's own thresholds measured on this
machine where programs meet them, and the GLIBC_TUNABLES line that sets
them.

What decides each threshold is timed the way programs meet it:

- non-temporal copies (x86_non_temporal_threshold): copy-read's unit
  (memkit-exp-copy-read), a copy into a destination out of the caches,
  copied alone and read right after (COLD_OPS), 256 KiB to 4x the L3,
  non-temporal against cached stores (the two store kinds glibc's memcpy
  chooses between there), which take turns in every round of a process, so
  each round pairs them as a program's moment would (glibc reads
  GLIBC_TUNABLES once, at start-up: its own two paths could only be paired
  across processes, which a neighbour's load tells apart more than the
  stores do).  A copy alone gains from non-temporal stores long before a
  copy that is read next does, which loses the copy from the caches: the
  line takes non-temporal stores only where neither loses, and says the
  trade.
- rep movsb and rep stosb: memkit-tune-experiment routines=glibc, glibc's
  own memcpy and memset in a loop (the sizes where they run stay in the
  caches), each strategy a process started under the GLIBC_TUNABLES that
  forces it, a round one process of each in a shuffled order; rep movsb on
  copies aligned (dst - src a multiple of 64) and misaligned (the
  destination 3 bytes off) together for the line, each alone for the trade.

From there the rule is tune's (tune.pick, tune.window): at each size glibc's
own choice stays unless another strategy was faster in enough paired rounds
(sign test) and by the margin, and not slower on any workload; a threshold
moves only where those choices say so; every move is then timed again
against glibc as configured, in fresh processes, and kept only if it holds
(tune.confirm; the rep thresholds: the non-temporal one was paired in
every round already, and `memkit try` confirms the line on a program).  For one program (`--for REC`): the
sizes its recording calls, each move weighed by its calls
(for_program.weigh_choices).

What glibc does at a size under a setting is asked of glibc itself: the
thresholds `ld.so --list-diagnostics` prints under that GLIBC_TUNABLES
(memkit.lab.machine's glibc_view), which also shows a setting glibc ignored (out of its
bounds: it says nothing else) and the stop of rep movsb it derives (the L2
on AMD, the non-temporal threshold elsewhere; not a tunable).

The tunables (glibc 2.36's manual, "Hardware Capability Tunables"):
x86_non_temporal_threshold, x86_rep_movsb_threshold, x86_rep_stosb_threshold.
x86_data_cache_size and x86_shared_cache_size only feed the thresholds
(the three are set directly instead), and glibc.cpu.hwcaps changes which
ifunc variant runs, not a threshold: neither is measured here.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Callable, Optional

from memkit.errors import MemkitError, UsageError
from memkit.judging import stats
from memkit.lab import experiments, glibc, machine
from memkit.results.result import Progress
from memkit.lab.sizes import fmt_size
from memkit.store.outdir import check_writable, starts_with, write_file
from memkit.tuning import catalogue, for_program, profile_file, tune, tune_experiment

NAMESPACE = "glibc.cpu."
NT = "x86_non_temporal_threshold"
MOVSB = "x86_rep_movsb_threshold"
STOSB = "x86_rep_stosb_threshold"
TUNABLES = (NT, MOVSB, STOSB)
# The diagnostics' field of each (lab.glibc.FIELDS).
FIELD = {NT: "non_temporal_threshold", MOVSB: "rep_movsb_threshold", STOSB: "rep_stosb_threshold"}
# glibc takes rep movsb and rep stosb for sizes above their thresholds and
# non-temporal stores from theirs: a window "from S" is the value S - ABOVE.
ABOVE = {NT: 0, MOVSB: 1, STOSB: 1}
# "never", as glibc 2.36 takes it: its largest non-temporal threshold is
# SIZE_MAX >> 4 (a larger one is ignored), the rep thresholds SIZE_MAX.
NEVER = {NT: glibc.NT_THRESHOLD_MAX, MOVSB: glibc.TUNABLE_MAX, STOSB: glibc.TUNABLE_MAX}
# The smallest thresholds glibc 2.36 takes (it ignores a smaller one):
# non-temporal above 0x4040; rep movsb above 8 vectors, 512 B with AVX-512,
# so 1 KiB under every variant; rep stosb any.
NT_LOWEST = glibc.NT_THRESHOLD_ABOVE + 1
MOVSB_LOWEST = 1024

# The workloads glibc runs (src/diagnostics/workloads.def's, without the pool).
FAMILIES = {"memset": ("set0", "set"), "memcpy": ("copy", "copy3")}
# The strategies: the path names glibc_path answers with.
VEC, REP, NTS = "vec", "rep", "nt"

# Copies into a cold destination (copy-read's unit, glibc's memcpy), as its
# `then` names them: copied alone, and read right after.  Their family in
# Times is COLD; they decide the non-temporal threshold.
COPY_READ = "memkit-exp-copy-read"
COLD = "cold"
COLD_OPS = ("alone", "read")
THEN = {"none": "alone", "read": "read"}
COLD_MIN = 256 << 10          # copy-read's smallest size (and glibc's non-temporal copies' reach)
COLD_GRANULE = 256            # copy-read's sizes are whole 256-byte blocks
COLD_ROUNDS = 3               # copy-read's own rounds inside each process
# copy-read's series -> the strategy they are: the two store kinds glibc's
# memcpy chooses between for a large copy, taking turns in every round of
# one process (memkit's cached copy, as glibc's vector loop stores, and its
# non-temporal copy), and glibc's memcpy as shipped, for the record.
COLD_SERIES = {"cached-stores": VEC, "nt-stores": NTS, "glibc": "glibc"}
OPS = dict(FAMILIES, **{COLD: COLD_OPS})


def spec_of(settings: dict) -> str:
    """{tunable: value} -> glibc.cpu.x86_...=...:... (GLIBC_TUNABLES' value)."""
    return ":".join(f"{NAMESPACE}{k}={v}" for k, v in settings.items())


def forced(lo: int) -> dict:
    """strategy -> the settings that make glibc take it at every measured
    size from lo it can (below MOVSB_LOWEST and NT_LOWEST it stays the
    vector loop, which glibc_path says)."""
    rep_from = max(lo - 1, MOVSB_LOWEST)
    return {VEC: {MOVSB: NEVER[MOVSB], STOSB: NEVER[STOSB], NT: NEVER[NT]},
            REP: {MOVSB: rep_from, STOSB: 1, NT: NEVER[NT]},
            NTS: {MOVSB: NEVER[MOVSB], STOSB: NEVER[STOSB], NT: NT_LOWEST}}


def glibc_path(view: dict, op: str, size: int) -> str:
    """What glibc 2.36's memset/memcpy run at `size` with the thresholds of
    `view` (its diagnostics): rep movsb above its threshold and below its
    stop, else non-temporal stores from their threshold (memcpy only: 2.36's
    memset has none), else the vector loop; rep stosb above its threshold."""
    if op in FAMILIES["memset"]:
        return REP if size > view["rep_stosb_threshold"] else VEC
    if view["rep_movsb_threshold"] < size < glibc.rep_movsb_stop(view):
        return REP
    return NTS if size >= view["non_temporal_threshold"] else VEC


def values_of(view: dict) -> dict:
    """{tunable: value} as glibc holds them in `view`."""
    return {t: view[FIELD[t]] for t in TUNABLES}


class GlibcPaths:
    """catalogue.Paths' part that tune.confirm asks (of_cells), answered by glibc:
    the diagnostics under each setting (read once each), then glibc_path.
    `read(settings) -> view` is the machine's glibc_view under GLIBC_TUNABLES, or a
    recorded view in a test."""

    def __init__(self, read: Callable[[dict], dict]):
        self.read = read
        self.views: dict = {}

    def view(self, t: dict) -> dict:
        settings = {k: t[k] for k in TUNABLES if t.get(k) is not None}
        key = spec_of(settings)
        if key not in self.views:
            self.views[key] = self.read(settings)
        return self.views[key]

    def of_cells(self, t: dict, cells) -> dict:
        v = self.view(t)
        return {(op, size): glibc_path(v, op, size) for op, size in cells}

    def ops(self, family: str) -> tuple:
        """The workloads of a family (for_program.weigh asks)."""
        return OPS[family]


def reader(loader: Optional[Path], base_env: dict) -> Callable[[dict], dict]:
    """read(settings) for GlibcPaths: glibc's view under those settings,
    checked: a setting glibc ignored (out of its bounds) is an error, as the
    strategy it was to force would not run."""
    def read(settings: dict) -> dict:
        env = dict(base_env)
        env.pop("GLIBC_TUNABLES", None)
        if settings:
            env["GLIBC_TUNABLES"] = spec_of(settings)
        view = machine.current().glibc_view(env, loader)
        if not isinstance(view, dict) or any(FIELD[t] not in view for t in TUNABLES):
            raise MemkitError(f"glibc's thresholds cannot be read: {view}")
        ignored = [f"{t}={v}" for t, v in settings.items() if view[FIELD[t]] != v]
        if ignored:
            raise MemkitError(f"this glibc ignores {', '.join(ignored)} (out of its bounds): "
                              f"it holds {', '.join(f'{t}={view[FIELD[t]]}' for t in TUNABLES)}")
        return view
    return read


def size_grid(lo: int, hi: int, per_octave: int, view: dict, caches: dict, cpus: int) -> list[int]:
    """tune's grid (catalogue.size_grid) and the sizes where glibc's choices would
    sit by the machine's caches: the thresholds glibc holds now, the L2, and
    the L3's per-thread share at 1/4, 1/2, 1 and 2 of it (glibc 2.36 takes
    3/4 of it for its non-temporal threshold), each rounded to 64 bytes."""
    grid = set(catalogue.size_grid(lo, hi, per_octave))
    l3 = caches.get("l3") or 0
    share = l3 // max(cpus, 1)
    marks = [view.get("non_temporal_threshold"), view.get("rep_movsb_threshold"),
             view.get("rep_stosb_threshold"), view.get("rep_movsb_stop_threshold"), caches.get("l2")]
    marks += [int(share * f) for f in (0.25, 0.5, 1, 2)] if share else []
    grid |= {m // 64 * 64 for m in marks if m and lo <= m // 64 * 64 <= hi}
    return sorted(grid)


# ---- measuring: a process per strategy, rounds of them interleaved ----

def measure(program: Path, configs: dict, cells: list, rounds: int, batch_ns: float,
            on_progress: Optional[Callable[[Progress], None]] = None,
            seed: Optional[int] = None, views: Optional[dict] = None) -> tune.Times:
    """{label: {(op, size): [ns per call, one per round]}}: per round and
    size band, one process per configuration (label -> {tunable: value}),
    in a shuffled order, each under its GLIBC_TUNABLES; a process's value
    for a cell is the median of its own samples (two rounds inside it).
    views (label -> glibc's view under it): a strategy's process times only
    the cells where it runs its own path (elsewhere it repeats another's)."""
    order = random.Random(seed)
    mine = {label: [c for c in cells if views is None or glibc_path(views[label], *c) == label] for label in configs}
    times: tune.Times = {label: {c: [] for c in mine[label]} for label in configs}
    bands = [b for b in ([c for c in cells if tune_experiment.band_of(c[1]) == k]
                         for k in range(len(tune_experiment.BANDS) + 1)) if b]
    exp = tune_experiment.experiment(program)
    total, done, t0 = rounds * len(bands) * len(configs), 0, time.monotonic()
    for _ in range(rounds):
        for whole in bands:
            labels = list(configs)
            order.shuffle(labels)
            for label in labels:
                band = [c for c in whole if c in times[label]]
                done += not band
                if not band:
                    continue
                plan = tune_experiment.Plan({label: ""}, band, rounds=2, processes=1, batch_ns=batch_ns)
                if on_progress:
                    on_progress(Progress("tune", done, total, time.monotonic() - t0, label))
                res = experiments.run_experiment(exp, False, tune_experiment.arguments(plan, band)
                                                 + ["routines=glibc"], env=glibc_env(configs[label]))
                if res.status != "ok":
                    raise MemkitError(f"{program.name} routines=glibc under {label}: {res.error}")
                got = {(m["params"].get("op"), m["params"].get("size")): m.get("sample_values") or []
                       for m in res.measurements if m.get("series") == label}
                for c in band:
                    if not got.get(c):
                        raise MemkitError(f"{program.name} reported no times for {label} at {c[0]} {c[1]} B")
                    times[label][c].append(median(got[c]))
                done += 1
    return times


def glibc_env(settings: dict) -> dict:
    """A timing process's environment: glibc as shipped, or as `settings` force it."""
    env = tune_experiment.clean_env()
    env.pop("GLIBC_TUNABLES", None)
    if settings:
        env["GLIBC_TUNABLES"] = spec_of(settings)
    return env


def cold_runs(sizes: Optional[list[int]], lo: int, hi: int, per_octave: int) -> list[list[str]]:
    """copy-read's arguments, one list per process of a round: its own grid
    from lo to hi (sizes None), or one process per size given (a program's,
    rounded down to copy-read's 256-byte blocks)."""
    common = [f"rounds={COLD_ROUNDS}", "processes=1", "then=read,none", "src=warm", "dst=cold"]
    if sizes is None:
        return [[f"min={max(lo, COLD_MIN)}", f"max={hi}", f"per_octave={per_octave}"] + common]
    return [[f"min={s // COLD_GRANULE * COLD_GRANULE}", f"max={s // COLD_GRANULE * COLD_GRANULE}"] + common
            for s in sizes]


def cold_times(res, runs_size: Optional[int]) -> dict:
    """{(op, size): {label: [ns per copy, one per round]}} of a copy-read
    result, the labels as COLD_SERIES maps its series (the two store kinds,
    and glibc as it runs); runs_size: the program's size a one-size process
    stands for."""
    out: dict = {}
    for m in res.measurements:
        p = m.get("params") or {}
        label = COLD_SERIES.get(m.get("series"))
        if label and p.get("then") in THEN and m.get("sample_values"):
            out.setdefault((THEN[p["then"]], runs_size or p["size"]), {})[label] = \
                [p["size"] / g for g in m["sample_values"]]
    return {cell: got for cell, got in out.items() if len(got) == len(COLD_SERIES)}


def measure_cold(program: Path, sizes: Optional[list[int]], lo: int, hi: int, per_octave: int,
                 processes: int, on_progress=None) -> tune.Times:
    """{label: {(op, size): [ns per copy, one per round]}} of copies into a
    cold destination, copied alone and read after (COLD_OPS): copy-read's
    processes (cold_runs), their rounds pooled in order, so the store kinds
    of one round stay paired (they take turns inside a process)."""
    runs = cold_runs(sizes, lo, hi, per_octave)
    times: tune.Times = {label: {} for label in COLD_SERIES.values()}
    exp = experiments.Experiment("copy-read", "", "", program)
    total, done, t0 = processes * len(runs), 0, time.monotonic()
    for _ in range(processes):
        for i, args in enumerate(runs):
            if on_progress:
                on_progress(Progress("copy-read", done, total, time.monotonic() - t0, ""))
            res = experiments.run_experiment(exp, False, args, env=glibc_env({}))
            if res.status != "ok":
                raise MemkitError(f"{program.name}: {res.error}")
            got = cold_times(res, sizes[i] if sizes is not None else None)
            if not got:
                raise MemkitError(f"{program.name} reported no times for its store kinds")
            for cell, by_label in got.items():
                for label, ns in by_label.items():
                    times[label].setdefault(cell, []).extend(ns)
            done += 1
    return times


# ---- deciding: tune's rule on glibc's strategies ----

def by_family(times: tune.Times, families=tuple(FAMILIES)) -> tune.Times:
    """A process times both families: its label as tune.pick names it, per family."""
    return {f"{family}:{label}": cells for family in families for label, cells in times.items()}


def timed_picks(hot: tune.Times, cold: tune.Times) -> tune.TimedPicks:
    """tune's picks over both measurements: memset:, memcpy: and cold: labels."""
    return tune.TimedPicks(dict(by_family(hot), **by_family(cold, (COLD,))))


def picks_at(picks_of, family: str, ops: tuple, sizes: list[int], names: list[str], at: dict,
             strategies: dict) -> list[tune.Pick]:
    """At each size, glibc's path under `at` (the incumbent) against the
    strategies that run their own path there on every op; a size whose
    incumbent was not timed keeps it."""
    out = []
    for s in sizes:
        runs = [n for n in names if all(glibc_path(strategies[n], op, s) == n for op in ops)]
        incumbent = glibc_path(at, ops[0], s)
        out.append(picks_of(family, [n for n in runs if n != incumbent] + [incumbent], list(ops), s, incumbent)
                   if incumbent in runs else tune.Pick(s, incumbent, incumbent, None))
    return out


@dataclass
class Decision:
    """What the rule made of the timings: the Choices (glibc's values),
    every pick by what it judged, and the trades where the answer depends
    on the program (lines)."""
    choices: list
    picks: dict
    trades: list


# What each pick list judged, in words (the labels of Decision.picks).
WORDS = {"non-temporal": "non-temporal copies (against cached stores, into a cold destination, alone and read "
                         "after together)",
         "non-temporal, alone": "non-temporal copies (against cached stores, into a cold destination, alone)",
         "non-temporal, read after": "non-temporal copies (against cached stores, into a cold destination, "
                                     "read right after)",
         "rep movsb": "glibc's rep movsb (aligned and misaligned copies together)",
         "rep movsb, aligned": "glibc's rep movsb (aligned copies: dst - src a multiple of 64)",
         "rep movsb, misaligned": "glibc's rep movsb (misaligned copies: the destination 3 bytes off)",
         "memset": "glibc's rep stosb (zero and non-zero fills together)"}


def decide(times: tune.Times, cold: tune.Times, grid: list[int], cold_sizes: list[int], paths: GlibcPaths,
           strategies: dict) -> Decision:
    """The three thresholds by tune's rule.  times: the loop's cells by
    strategy (vec, rep); cold: the cold copies' by store kind (vec, nt); strategies:
    strategy -> glibc's view under the settings forcing it (where it really
    runs its path: a strategy is a challenger only there)."""
    view = paths.view({})
    now = values_of(view)
    start = {t: now[t] + ABOVE[t] for t in TUNABLES}   # windows are "from S": glibc's values shifted
    picks_of = timed_picks(times, cold)
    picks: dict = {}

    def decided(label, family, ops, sizes, names, at, tunable, strategy) -> list[tune.Choice]:
        picks[label] = picks_at(picks_of, family, ops, sizes, names, at, strategies)
        return tune.window((tunable,), start, picks[label], strategy, WORDS[label]) if sizes else []

    # non-temporal against the vector loop (rep movsb is decided below it)
    no_rep = dict(view, rep_movsb_threshold=NEVER[MOVSB])
    nt = decided("non-temporal", COLD, COLD_OPS, cold_sizes, [VEC, NTS], no_rep, NT, NTS)
    nt_alone = decided("non-temporal, alone", COLD, ("alone",), cold_sizes, [VEC, NTS], no_rep, NT, NTS)
    nt_read = decided("non-temporal, read after", COLD, ("read",), cold_sizes, [VEC, NTS], no_rep, NT, NTS)
    if not nt:
        nt = [tune.Choice(NT, now[NT] + ABOVE[NT], now[NT] + ABOVE[NT], "no cold copy timed", False)]
    # rep movsb below both the non-temporal threshold chosen and glibc's stop
    nt_from = nt[0].value if nt[0].value is not None else NEVER[NT]
    stop = glibc.rep_movsb_stop(view)
    below = [s for s in grid if s < min(nt_from, stop)]
    no_nt = dict(view, non_temporal_threshold=NEVER[NT], rep_movsb_stop_threshold=stop)
    rep = decided("rep movsb", "memcpy", FAMILIES["memcpy"], below, [VEC, REP], no_nt, MOVSB, REP)
    rep_aligned = decided("rep movsb, aligned", "memcpy", ("copy",), below, [VEC, REP], no_nt, MOVSB, REP)
    rep_misaligned = decided("rep movsb, misaligned", "memcpy", ("copy3",), below, [VEC, REP], no_nt, MOVSB, REP)
    fill = decided("memset", "memset", FAMILIES["memset"], grid, [VEC, REP], view, STOSB, REP)
    choices = nt + rep + fill
    values = {c.name: glibc_value(c.name, c.value) for c in choices}
    if rep and rep[0].value is None:
        values[MOVSB] = no_rep_window(paths, values[NT])
    out = [tune.Choice(c.name, now[c.name], values[c.name], c.why, c.moved) for c in choices]
    trades = trade_lines(times, cold, cold_sizes, below,
                         {"nt": (nt, nt_alone, nt_read), "rep": (rep, rep_aligned, rep_misaligned)})
    return Decision(out, picks, trades)


def no_rep_window(paths: GlibcPaths, nt_value: int) -> int:
    """glibc takes rep movsb only below its stop: a threshold at the stop
    (under the non-temporal threshold chosen) leaves no size to it."""
    return glibc.rep_movsb_stop(paths.view({NT: nt_value}))


def glibc_value(name: str, start: Optional[int]) -> int:
    """A window's start (tune's "from S", None: never) as glibc's value."""
    return NEVER[name] if start is None else start - ABOVE[name]


# ---- the trade where the answer depends on the program ----

def races(times: tune.Times, family: str, challenger: str, incumbent: str, op: str, sizes: list[int]) -> list:
    """tune.Evidence of challenger over incumbent on one op at each size both timed."""
    t = by_family(times, (family,))
    a, b = f"{family}:{challenger}", f"{family}:{incumbent}"
    return [tune.paired(t, a, b, [op], s) for s in sizes
            if (op, s) in t.get(a, {}) and (op, s) in t.get(b, {})]


def race_text(evs: list) -> str:
    """"faster at 256 KiB..128 MiB (1.05-1.71x); slower at 1 MiB..4 MiB
    (0.78-0.97x)": the runs of sizes where the challenger was faster or
    slower by the rule; "within the noise everywhere" when neither."""
    runs: list = []
    for ev in evs:
        kind = "faster" if ev.faster() else "slower" if ev.slower() else None
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(ev)
        else:
            runs.append([kind, [ev]])
    parts = []
    for kind, group in runs:
        if kind is None:
            continue
        lo, hi = min(e.median for e in group), max(e.median for e in group)
        where = fmt_size(group[0].size) + (f"..{fmt_size(group[-1].size)}" if len(group) > 1 else "")
        parts.append(f"{kind} at {where} ({lo:.2f}x)" if len(group) == 1 or abs(hi - lo) < 0.005
                     else f"{kind} at {where} ({lo:.2f}-{hi:.2f}x)")
    return "; ".join(parts) or "within the noise everywhere"


def _from(choices: list) -> str:
    """Where a window's Choice puts its strategy: "from 10 MiB", "never"."""
    if not choices:
        return "(not timed)"
    return "never" if choices[0].value is None else f"from {fmt_size(choices[0].value)}"


def _depends(strategy: str, first: tuple, second: tuple, line: list, line_note: str, program: str,
             tunable: str) -> list[str]:
    """Where two workloads (first, second: (words, their Choices)) put a
    strategy's window apart: the line the trade takes, and the setting of
    a program that lives by the first."""
    (by_a, a), (by_b, b) = first, second
    if not (a and b and a[0].value != b[0].value):
        return []
    value = a[0].value
    return [f"  the answer depends on the program: by {by_a} the rule puts {strategy} {_from(a)}, by {by_b} "
            f"{_from(b)}; the line takes {_from(line)}{line_note}"
            + (f"; {program}: {NAMESPACE}{tunable}={glibc_value(tunable, value)}" if value is not None else "")]


def trade_lines(times: tune.Times, cold: tune.Times, cold_sizes: list[int], below: list[int],
                windows: dict) -> list[str]:
    """What the line gives up where the answer depends on the program: each
    threshold's strategy against the vector loop on each workload alone, and
    the setting a program of one kind would take instead."""
    lines = []
    nt, alone, read = windows["nt"]
    if cold_sizes:
        lines.append(f"non-temporal copies into a cold destination, against the vector loop: copied alone "
                     f"{race_text(races(cold, COLD, NTS, VEC, 'alone', cold_sizes))}; read right after "
                     f"{race_text(races(cold, COLD, NTS, VEC, 'read', cold_sizes))}")
        lines += _depends("non-temporal stores", ("copies left alone", alone), ("copies read right after", read),
                          nt, " (where neither loses)", "a program that does not read its large copies soon", NT)
    rep, aligned, misaligned = windows["rep"]
    if below:
        lines.append(f"rep movsb against the vector loop, up to {fmt_size(below[-1])}: aligned copies "
                     f"{race_text(races(times, 'memcpy', REP, VEC, 'copy', below))}; misaligned copies "
                     f"{race_text(races(times, 'memcpy', REP, VEC, 'copy3', below))}")
        lines += _depends("rep movsb", ("aligned copies", aligned), ("misaligned ones", misaligned), rep, "",
                          "a program whose copies keep dst - src a multiple of 64", MOVSB)
    return lines


# ---- the line, its file and the evidence ----

LINE_MARKER = b"# memkit glibc tunables"
EVIDENCE_FORMAT = "memkit-glibc-tune-evidence"
line_is_ours = starts_with(LINE_MARKER)
evidence_is_ours = starts_with(b'{\n "format": "' + EVIDENCE_FORMAT.encode())
LINE_FILE = "glibc-tunables"
EVIDENCE_FILE = "glibc-tunables.evidence.json"


def line_of(choices: list[tune.Choice], view: dict) -> tuple[str, bool]:
    """(GLIBC_TUNABLES=..., whether it moves anything): the moves; when
    none moved, glibc's values as they are (setting them changes nothing)."""
    moved = {c.name: c.value for c in choices if c.moved}
    settings = moved or values_of(view)
    return "GLIBC_TUNABLES=" + spec_of({t: settings[t] for t in TUNABLES if t in settings}), bool(moved)


def line_file_text(line: str, moved: bool, fp: dict, method: str, trades: list = ()) -> str:
    """The file `memkit try --glibc-tunables @FILE` and the lab read: #
    comments (the machine, the method, the trades), then the one line
    (`export` it, or give it to a program's environment)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    says = ("glibc's thresholds measured on this machine" if moved else
            "nothing moved: glibc's own values, which setting changes nothing")
    return "\n".join([
        f"{LINE_MARKER.decode()}, written by `memkit tune --glibc`: {says}",
        f"# machine: {fp.get('cpu_model', '?')} ({profile_file.cpu_line(fp)[4:]}), glibc {fp.get('glibc', '?')}; {now}",
        f"# method: {method}",
        *(f"# {t.strip()}" for t in trades),
        line, ""])


def cell_records(times: tune.Times) -> list:
    """[{op, size, ns: {label: [per round]}}], sorted by cell."""
    by_cell: dict = {}
    for label, cells in times.items():
        for (op, size), ns in cells.items():
            by_cell.setdefault((op, size), {})[label] = [float(x) for x in ns]
    return [{"op": op, "size": size, "ns": ns} for (op, size), ns in sorted(by_cell.items())]


def pick_records(picks: dict) -> dict:
    return {label: [{"size": p.size, "default": p.default, "chosen": p.chosen,
                     "evidence": None if p.evidence is None else {
                         "speedups": p.evidence.speedups, "median": p.evidence.median,
                         "wins": p.evidence.wins, "rounds": p.evidence.rounds,
                         "p": p.evidence.p_faster}} for p in ps] for label, ps in picks.items()}


def evidence_document(fp: dict, rule: dict, view: dict, strategies: dict, measured: "Measured",
                      decision: Decision, confirmations: list, line: str,
                      confirm_times: Optional[tune.Times] = None) -> dict:
    return {
        "format": EVIDENCE_FORMAT, "version": 1,
        "cpu": {k: fp.get(k) for k in ("vendor", "family", "model", "stepping", "microcode", "cpu_model",
                                       "cache", "kernel", "glibc", "cpus_online")},
        "glibc_view": view,
        "rule": dict(rule, alpha=tune.ALPHA, margin=tune.MARGIN),
        "strategies": {name: {"GLIBC_TUNABLES": spec_of(forced_settings), "view": strategies[name]}
                       for name, forced_settings in rule["forced"].items()},
        "cells": cell_records(measured.hot),
        "cold_cells": cell_records(measured.cold),
        "picks": pick_records(decision.picks),
        "decisions": [{"tunable": NAMESPACE + c.name, "default": c.default, "value": c.value,
                       "moved": c.moved, "why": c.why} for c in decision.choices],
        "trades": decision.trades,
        "confirmation": confirmations,
        "confirmation_cells": cell_records(confirm_times or {}),
        "line": line,
    }


def targets(out_dir: Optional[Path], evidence: Optional[Path]) -> tuple[Optional[Path], Optional[Path]]:
    """(the line's file, the evidence's): DIR/glibc-tunables and, unless
    given, DIR/glibc-tunables.evidence.json; no DIR (--dry-run): no line,
    and evidence only if given."""
    return (out_dir / LINE_FILE if out_dir else None,
            evidence or (out_dir / EVIDENCE_FILE if out_dir else None))


def write_outputs(out_dir: Optional[Path], line_text: str, doc: dict, evidence: Optional[Path] = None) -> list[Path]:
    """The files of targets(), each by memkit's rule for files it writes."""
    line, ev = targets(out_dir, evidence)
    written = []
    if ev:
        written.append(write_file(ev, json.dumps(doc, indent=1) + "\n", "the glibc evidence", evidence_is_ours))
    if line:
        written.insert(0, write_file(line, line_text, "the glibc tunables line", line_is_ours))
    return written


def check_outputs(out_dir: Optional[Path], evidence: Optional[Path] = None) -> None:
    """Refuses now, not after minutes of measuring, a target write_outputs would refuse."""
    line, ev = targets(out_dir, evidence)
    if line and ev and os.path.abspath(line) == os.path.abspath(ev):
        raise UsageError(f"--evidence {evidence} is where the line goes: give the evidence another path")
    if line:
        check_writable(line, "the glibc tunables line", line_is_ours)
    if ev:
        check_writable(ev, "the glibc evidence", evidence_is_ours)


def confirmation_record(conf: tune.Confirmation) -> dict:
    return {"tunable": NAMESPACE + conf.choice.name, "value": conf.choice.value, "holds": conf.holds,
            "cells": [list(c) for c in conf.cells], "helped": [list(c) for c in conf.helped],
            "hurt": [list(c) for c in conf.hurt], "says": conf.says()}


# ---- giving the line to programs ----

def apply_lines(line: str, path: Optional[Path], command: Optional[list] = None) -> list[str]:
    """How to give the line (GLIBC_TUNABLES=SPEC) to a program, a shell, a
    systemd service and a container, with the warning that it reaches
    every program started with it; path: the file it was read from (None:
    given as is); command: the recorded program's, for the examples."""
    spec = line.removeprefix("GLIBC_TUNABLES=")
    prog = shlex.join(command) if command else "PROGRAM [ARGS]"
    quoted = shlex.quote(spec)
    return [
        f"the line{f' ({path})' if path else ''}:",
        f"  {line}",
        "warning: glibc reads it once, when a program starts, and every program started with it in its "
        "environment takes it, the programs those start too (they inherit the environment): give it to the "
        "programs it was measured for, not to a whole machine",
        f"  one program:        env GLIBC_TUNABLES={quoted} {prog}",
        f"  a shell:            export GLIBC_TUNABLES={quoted}   # every program this shell starts from now on",
        "  a systemd service:  systemctl edit UNIT, then under [Service]:",
        f"                        Environment=\"GLIBC_TUNABLES={spec}\"",
        "                      then systemctl restart UNIT   # every process of the service",
        f"  a container:        docker run -e GLIBC_TUNABLES={quoted} IMAGE ...   # every process in it; or in its "
        f"Dockerfile: ENV GLIBC_TUNABLES={spec}; its glibc is the image's, whose thresholds may differ",
        f"to confirm it on the program: memkit try --glibc-tunables {'@' + str(path) if path else quoted} -- {prog}",
    ]


# ---- the whole of `memkit tune --glibc` ----

@dataclass
class Setup:
    """What tune --glibc times: glibc's view, the loop's sizes, the cold
    copies' sizes (None: copy-read's own grid from lo to hi), the forcing
    settings of each strategy and glibc's view under them."""
    view: dict
    grid: list
    cold_sizes: Optional[list]
    configs: dict
    strategies: dict
    method: str

    def hot_cells(self) -> list:
        """The loop's cells: fills at every size, copies where rep movsb can run (below its stop)."""
        stop = glibc.rep_movsb_stop(self.strategies[REP])
        return ([(op, size) for op in FAMILIES["memset"] for size in self.grid]
                + [(op, size) for op in FAMILIES["memcpy"] for size in self.grid if size < stop])


@dataclass
class Measured:
    hot: tune.Times       # the loop's cells, by strategy
    cold: tune.Times      # the cold copies', by strategy

    @property
    def cold_sizes(self) -> list:
        return sorted({size for cells in self.cold.values() for _, size in cells})


@dataclass
class ForProgram:
    """tune --glibc --for REC: the recording (function -> {size:
    probability}, function -> calls) and the sizes to look at; plan: what
    for_program.plan_for makes of it against glibc's thresholds (prepare)."""
    directory: Path
    command: list
    dists: dict
    calls: dict
    lo: int
    hi: Optional[int]
    plan: Optional[for_program.ForPlan] = None

    def planned(self) -> for_program.ForPlan:
        """The sizes worth timing: those a threshold can be moved to, under
        memkit's names (for_program.FAMILY_THRESHOLDS): rep stosb from the
        smallest size timed, rep movsb from glibc's lowest, non-temporal
        copies from the smallest cold copy."""
        reach = {"rep_stosb_threshold": self.lo, "rep_movsb_threshold": max(self.lo, MOVSB_LOWEST),
                 "nt_copy_threshold": COLD_MIN}
        self.plan = for_program.plan_for(self.dists, self.calls, reach, self.lo, self.hi)
        return self.plan


def method_text(rounds: int, grid: list[int], cold_sizes: Optional[list], lo: int, hi: int,
                for_program_dir: Optional[Path] = None) -> str:
    need = stats.sign_test_wins_needed(rounds, tune.ALPHA)
    rule = (f"a threshold moves off glibc's value only where another strategy was faster in at least "
            f"{need}/{rounds} paired rounds (one-sided sign test p<={tune.ALPHA}) and by at least "
            f"{tune.MARGIN:.0%} at the median, and not slower on any workload" if need is not None else
            f"{rounds} rounds are too few for the sign test to reach p<={tune.ALPHA}: nothing can move")
    cold = (f"{fmt_size(max(lo, COLD_MIN))}..{fmt_size(hi)} (copy-read's grid)" if cold_sizes is None else
            ", ".join(fmt_size(s) for s in cold_sizes) or "none")
    text = (f"non-temporal against cached stores on copies into a cold destination, copied alone and read "
            f"right after ({COPY_READ}: the two store kinds take turns in each round; {rounds} processes of "
            f"{COLD_ROUNDS} rounds, pooled), sizes {cold}; rep movsb and rep stosb against glibc's vector loop on "
            f"its memcpy (aligned and misaligned) and memset (zero and non-zero) in a loop "
            f"(memkit-tune-experiment routines=glibc), each strategy a process of its own under the GLIBC_TUNABLES "
            f"that forces it, {rounds} rounds of one process per strategy in a shuffled order, {len(grid)} sizes"
            + (f" {fmt_size(grid[0])}..{fmt_size(grid[-1])}" if grid else "") + f"; {rule}")
    if for_program_dir:
        text += (f"; for the program recorded in {for_program_dir}: only the sizes holding >= "
                 f"{for_program.SIGNIFICANT:.0%} of a function's calls or bytes timed, and a move kept only "
                 "if it saves time on the recorded calls")
    return text


def prepare(fp: dict, s: dict, paths: GlibcPaths, program: Optional[ForProgram]) -> Setup:
    """The sizes and strategies to time: tune's grid and the machine's marks,
    or a recorded program's sizes."""
    view = paths.view({})
    if program:
        grid = sorted(set().union(*program.plan.grids.values(), set()))
        cold_sizes: Optional[list] = [x for x in program.plan.grids.get("memcpy", []) if x >= COLD_MIN]
    else:
        caches = fp.get("cache") or {}
        grid = size_grid(s["lo"], s["hi"], s["per_octave"], view, caches, int(fp.get("cpus_online") or 1))
        cold_sizes = None if s["hi"] >= COLD_MIN else []
    if not grid and not cold_sizes:
        raise MemkitError("no size to time between --min-size and --max-size")
    configs = forced(grid[0] if grid else COLD_MIN)
    strategies = {name: paths.view(settings) for name, settings in configs.items()}
    method = method_text(s["rounds"], grid, cold_sizes, s["lo"], s["hi"], program.directory if program else None)
    return Setup(view, grid, cold_sizes, configs, strategies, method)


def measure_all(program: Path, setup: Setup, s: dict, progress) -> Measured:
    """The loop's cells by vec and rep, the cold copies by vec and nt."""
    hot_configs = {n: setup.configs[n] for n in (VEC, REP)}
    cells = setup.hot_cells()
    hot = {}
    if cells:
        print(f"== glibc's rep movsb and rep stosb in a loop: {len(cells)} cells (each timed by the strategies "
              f"that run their own path there) x {s['rounds']} rounds", flush=True)
        hot = measure(program, hot_configs, cells, s["rounds"], s["batch_ns"],
                      on_progress=lambda pr: progress.update(pr, "glibc "), views=setup.strategies)
        progress.clear()
    cold = {}
    if setup.cold_sizes is None or setup.cold_sizes:
        print(f"== non-temporal against cached stores, copies into a cold destination alone and read after "
              f"({COPY_READ}): {s['rounds']} processes x {COLD_ROUNDS} rounds", flush=True)
        cold = measure_cold(program.parent / COPY_READ, setup.cold_sizes, s["lo"], s["hi"], s["per_octave"],
                            s["rounds"], on_progress=lambda pr: progress.update(pr, "glibc "))
        progress.clear()
    return Measured(hot, cold)


def confirm_moves(program: Path, setup: Setup, choices: list, s: dict, paths: GlibcPaths,
                  progress) -> tuple[list, list, dict]:
    """The rep thresholds' moves timed again against glibc as it is, a
    process each, in the loop on the grid and the sizes between its points;
    a move that does not hold goes back to glibc's value.  The non-temporal
    threshold's is not: its store kinds were paired in every round already,
    and a program (`memkit try`) confirms it.  (choices, the confirmations'
    records, their times.)"""
    moved = [c for c in choices if c.moved and c.name != NT]
    for c in choices:
        if c.moved and c.name == NT:
            print(f"\n  {c.setting()}: decided on copy-read's paired rounds (the store kinds take turns in "
                  "every round of a process); not timed again here: `memkit try --glibc-tunables` confirms it "
                  "on a program")
    if not moved:
        return choices, [], {}
    cells = [(op, size) for ops in FAMILIES.values() for op in ops for size in tune.confirmation_sizes(setup.grid, s)]
    print(f"\n== confirming {len(moved)} move(s) against glibc as it is, a process each, {s['rounds']} "
          f"interleaved rounds, {len(cells)} cells", flush=True)
    ctimes = measure(program, {"defaults": {}, "tuned": {c.name: c.value for c in moved}}, cells, s["rounds"],
                     s["batch_ns"], on_progress=lambda pr: progress.update(pr, "confirm "))
    progress.clear()
    confs = tune.confirm(moved, values_of(setup.view), cells, ctimes, paths)
    print("\n".join(tune.settle_lines(confs, "glibc's value")))
    return tune.settle(confs, choices), [confirmation_record(c) for c in confs], ctimes


def weigh_for(program: ForProgram, decision: Decision, measured: Measured, view: dict,
              paths: GlibcPaths) -> list[str]:
    """Each move weighed by the recorded calls (for_program.weigh_choices,
    in place): the non-temporal threshold on the cold copies' times, the
    rep thresholds on the loop's."""
    defaults, lines = values_of(view), []
    for c in decision.choices:
        if not c.moved:
            continue
        family, times = ((COLD, by_family(measured.cold, (COLD,))) if c.name == NT else
                         ("memcpy", by_family(measured.hot)) if c.name == MOVSB else ("memset", by_family(measured.hot)))
        calls = program.plan.calls.get("memcpy" if family == COLD else family, {})
        lines += for_program.weigh_choices(family, [c], defaults, times, calls, paths)
    return lines


def describe(c: tune.Choice) -> str:
    def show(v):
        return "never" if v is not None and v >= NEVER[c.name] else fmt_size(v)
    return f"{c.name:<28} {show(c.default):>10} {(show(c.value) if c.moved else '(as is)'):>10}  {c.why}"


def say_plan(fp: dict, view: dict, base_env: dict, setup: Setup, program: Optional[ForProgram]) -> None:
    print(f"tuning glibc {fp.get('glibc', '?')} on {fp.get('cpu_model', '?')} ({profile_file.cpu_line(fp)[4:]})")
    if program:
        print(f"for the program recorded in {program.directory} ({shlex.join(program.command or ['?'])}):")
        for line in program.plan.notes:
            print(f"  {line}")
    print(f"glibc holds: {glibc.view_text(view)}")
    if base_env.get("GLIBC_TUNABLES"):
        print(f"note: the GLIBC_TUNABLES in this environment ({base_env['GLIBC_TUNABLES']}) is left out: "
              "glibc is measured as shipped and against it")
    print(f"method: {setup.method}")
    print(f"glibc's strategies: {', '.join(f'{n} ({spec_of(c)})' for n, c in setup.configs.items())}", flush=True)


def say_decision(decision: Decision, weighed: list) -> None:
    print(f"\n{'glibc tunable':<28} {'glibc':>10} {'tuned':>10}  why (the values glibc takes; the sizes "
          "in the why are where a strategy starts)")
    for c in decision.choices:
        print(describe(c))
    if decision.trades:
        print("\nthe trade (each strategy against the vector loop, by the same rule):")
        for t in decision.trades:
            print(f"  {t}")
    if weighed:
        print("\nfor the recorded program (each move weighed by its calls):")
        for line in weighed:
            print(f"  {line}")


def say_line(line: str, any_moved: bool, moved: list) -> None:
    """The setting, and whether anything moved (and if not, why not)."""
    print()
    if any_moved:
        print("glibc tuned for this machine (give it to a program's environment; memkit try --glibc-tunables "
              "takes it):")
    else:
        why = ("no move held when timed again" if moved else
               "glibc's own choice held wherever the rule could move a threshold")
        print(f"nothing moved: {why}; glibc's values as they are (setting them changes nothing):")
    print(line)


def say_written(out_dir: Optional[Path], written: list, program: Optional[ForProgram]) -> None:
    if out_dir is None:
        print("\n--dry-run: no line written" + (f"; the evidence: {written[0]}" if written else ""))
        return
    target = shlex.join(program.command) if program and program.command else "PROGRAM"
    print(f"\nwrote {written[0]} and the evidence, {written[1]}\n"
          f"confirm it on the program: memkit try --glibc-tunables @{written[0]} -- {target}\n"
          f"how to give it to a program, a shell, a service, a container: memkit tune --glibc --apply"
          + (f" --for {program.directory}" if program else f" --out {out_dir}"))


def run(program: Path, fp: dict, out_dir: Optional[Path], evidence: Optional[Path], s: dict,
        progress, base_env: dict, loader: Optional[Path] = None, for_rec: Optional[ForProgram] = None) -> int:
    """Measures, decides, confirms (or, for a program, weighs), prints the
    line and writes it (out_dir: None writes nothing).  s: tune's settings
    (lo, hi, per_octave, rounds, batch_ns)."""
    check_outputs(out_dir, evidence)
    paths = GlibcPaths(reader(loader, base_env))
    if for_rec and for_rec.planned().nothing:
        print(for_rec.plan.nothing)
        return 0
    setup = prepare(fp, s, paths, for_rec)
    say_plan(fp, setup.view, base_env, setup, for_rec)
    measured = measure_all(program, setup, s, progress)
    decision = decide(measured.hot, measured.cold, setup.grid, measured.cold_sizes, paths, setup.strategies)
    weighed = weigh_for(for_rec, decision, measured, setup.view, paths) if for_rec else []
    say_decision(decision, weighed)
    moved = [c for c in decision.choices if c.moved]
    confirmations, ctimes = [], {}
    if not for_rec:   # a program's moves are weighed by its calls instead; `memkit try` confirms the line
        decision.choices, confirmations, ctimes = confirm_moves(program, setup, decision.choices, s, paths,
                                                                progress)
    line, any_moved = line_of(decision.choices, setup.view)
    say_line(line, any_moved, moved)
    rule = {"rounds": s["rounds"], "per_octave": s["per_octave"], "lo": s["lo"], "hi": s["hi"],
            "batch_ns": s["batch_ns"], "grid": setup.grid, "cold_sizes": measured.cold_sizes,
            "cold_rounds": COLD_ROUNDS, "forced": setup.configs, "method": setup.method}
    doc = evidence_document(fp, rule, setup.view, setup.strategies, measured, decision, confirmations, line, ctimes)
    text = line_file_text(line, any_moved, fp, setup.method, decision.trades + weighed)
    say_written(out_dir, write_outputs(out_dir, text, doc, evidence), for_rec)
    return 0
