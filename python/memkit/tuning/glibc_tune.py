# SPDX-License-Identifier: Apache-2.0
"""`memkit tune --glibc`: the C library's own thresholds measured on this
machine by tune's rule, and the GLIBC_TUNABLES line that sets them.

glibc reads GLIBC_TUNABLES once, at start-up, so its strategies cannot take
turns inside one process as memkit's do: each strategy is a process started
under a GLIBC_TUNABLES setting that forces it (memkit-tune-experiment
routines=glibc, on tune's workloads), and a round is one process of every
strategy, in a shuffled order, each size band in processes of its own
(tune_experiment.BANDS).  A process's sample for a cell is the median of its
own batches; the strategies of one round are paired.  From there the rule is
tune's (tune.pick, tune.window): at each size glibc's own choice stays unless
another strategy was faster in enough paired rounds (sign test) and by the
margin; a threshold moves only where those choices say so; every move is
then timed again against glibc as configured, in fresh processes, and kept
only if it holds (tune.confirm).

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
from memkit.tuning import catalogue, profile_file, tune, tune_experiment

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
NEVER = {NT: (1 << 60) - 1, MOVSB: (1 << 64) - 1, STOSB: (1 << 64) - 1}
# The smallest thresholds glibc 2.36 takes (it ignores a smaller one):
# non-temporal above 0x4040; rep movsb above 8 vectors, 512 B with AVX-512,
# so 1 KiB under every variant; rep stosb any.
NT_LOWEST = 0x4041
MOVSB_LOWEST = 1024

# The workloads glibc runs (src/diagnostics/workloads.def's, without the pool).
FAMILIES = {"memset": ("set0", "set"), "memcpy": ("copy", "copy3")}
# The strategies: the path names glibc_path answers with.
VEC, REP, NTS = "vec", "rep", "nt"


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
    stop = view.get("rep_movsb_stop_threshold", view["non_temporal_threshold"])
    if view["rep_movsb_threshold"] < size < stop:
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
                env = tune_experiment.clean_env()
                env.pop("GLIBC_TUNABLES", None)   # glibc as shipped, or as forced
                if configs[label]:
                    env["GLIBC_TUNABLES"] = spec_of(configs[label])
                if on_progress:
                    on_progress(Progress("tune", done, total, time.monotonic() - t0, label))
                res = experiments.run_experiment(exp, False, tune_experiment.arguments(plan, band)
                                                 + ["routines=glibc"], env=env)
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


# ---- deciding: tune's rule on glibc's strategies ----

def by_family(times: tune.Times) -> tune.Times:
    """A process times both families: its label as tune.pick names it, per family."""
    return {f"{family}:{label}": cells for family in FAMILIES for label, cells in times.items()}


def decide(times: tune.Times, grid: list[int], paths: GlibcPaths, strategies: dict) -> tuple[list[tune.Choice], dict]:
    """The three thresholds by tune's rule.  times' labels are the
    strategies (vec, rep, nt); strategies: strategy -> glibc's view under
    the settings forcing it (where it really runs its path: a strategy is a
    challenger only there).  Returns (the
    Choices, in glibc's values; {label: [Pick per size]})."""
    view = paths.view({})
    now = values_of(view)
    # windows are "from S": glibc's values shifted (ABOVE)
    start = {t: now[t] + ABOVE[t] for t in TUNABLES}
    picks_of = tune.TimedPicks(by_family(times))

    def picks(family: str, ops: tuple, sizes: list[int], names: list[str], at: dict) -> list[tune.Pick]:
        out = []
        for s in sizes:
            runs = [n for n in names if all(glibc_path(strategies[n], op, s) == n for op in ops)]
            incumbent = glibc_path(at, ops[0], s)
            out.append(picks_of(family, [n for n in runs if n != incumbent] + [incumbent], list(ops), s,
                                incumbent) if incumbent in runs else tune.Pick(s, incumbent, incumbent, None))
        return out

    copy = picks("memcpy", FAMILIES["memcpy"], grid, [VEC, REP, NTS], view)
    choices = tune.window((NT,), start, copy, NTS, "glibc's non-temporal copies (aligned and misaligned together)")
    # rep movsb below both the non-temporal threshold chosen and glibc's stop
    nt_from = choices[0].value if choices[0].value is not None else NEVER[NT]
    stop = view.get("rep_movsb_stop_threshold", view["non_temporal_threshold"])
    below = [s for s in grid if s < min(nt_from, stop)]
    no_nt = dict(view, non_temporal_threshold=NEVER[NT], rep_movsb_stop_threshold=stop)
    rep_copy = picks("memcpy", FAMILIES["memcpy"], below, [VEC, REP], no_nt)
    if below:
        choices += tune.window((MOVSB,), start, rep_copy, REP, "glibc's rep movsb (aligned and misaligned together)")
    fill = picks("memset", FAMILIES["memset"], grid, [VEC, REP], view)
    choices += tune.window((STOSB,), start, fill, REP, "glibc's rep stosb (zero and non-zero fills)")
    values = {c.name: glibc_value(c.name, c.value) for c in choices}
    if choices[1:] and choices[1].name == MOVSB and choices[1].value is None:
        # glibc takes rep movsb only below its stop: a threshold at the stop
        # (under the non-temporal threshold chosen) leaves no size to it
        tuned = paths.view({NT: values[NT]})
        values[MOVSB] = tuned.get("rep_movsb_stop_threshold", tuned["non_temporal_threshold"])
    out = [tune.Choice(c.name, now[c.name], values[c.name], c.why, c.moved) for c in choices]
    return out, {"memcpy": copy, "rep movsb": rep_copy, "memset": fill}


def glibc_value(name: str, start: Optional[int]) -> int:
    """A window's start (tune's "from S", None: never) as glibc's value."""
    return NEVER[name] if start is None else start - ABOVE[name]


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


def line_file_text(line: str, moved: bool, fp: dict, method: str) -> str:
    """The file `memkit try --glibc-tunables @FILE` and the lab read: #
    comments, then the one line (`export` it, or give it to a program's
    environment)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    says = ("glibc's thresholds measured on this machine" if moved else
            "nothing moved: glibc's own values, which setting changes nothing")
    return "\n".join([
        f"{LINE_MARKER.decode()}, written by `memkit tune --glibc`: {says}",
        f"# machine: {fp.get('cpu_model', '?')} ({profile_file.cpu_line(fp)[4:]}), glibc {fp.get('glibc', '?')}; {now}",
        f"# method: {method}",
        line, ""])


def cell_records(times: tune.Times) -> list:
    """[{op, size, ns: {label: [per round]}}], sorted by cell."""
    by_cell: dict = {}
    for label, cells in times.items():
        for (op, size), ns in cells.items():
            by_cell.setdefault((op, size), {})[label] = [float(x) for x in ns]
    return [{"op": op, "size": size, "ns": ns} for (op, size), ns in sorted(by_cell.items())]


def evidence_document(fp: dict, rule: dict, view: dict, strategies: dict, times: tune.Times,
                      picks: dict, choices: list[tune.Choice], confirmations: list, line: str,
                      confirm_times: Optional[tune.Times] = None) -> dict:
    return {
        "format": EVIDENCE_FORMAT, "version": 1,
        "cpu": {k: fp.get(k) for k in ("vendor", "family", "model", "stepping", "microcode", "cpu_model",
                                       "cache", "kernel", "glibc", "cpus_online")},
        "glibc_view": view,
        "rule": dict(rule, alpha=tune.ALPHA, margin=tune.MARGIN),
        "strategies": {name: {"GLIBC_TUNABLES": spec_of(forced_settings), "view": strategies[name]}
                       for name, forced_settings in rule["forced"].items()},
        "cells": cell_records(times),
        "picks": {label: [{"size": p.size, "default": p.default, "chosen": p.chosen,
                           "evidence": None if p.evidence is None else {
                               "speedups": p.evidence.speedups, "median": p.evidence.median,
                               "wins": p.evidence.wins, "rounds": p.evidence.rounds,
                               "p": p.evidence.p_faster}} for p in ps] for label, ps in picks.items()},
        "decisions": [{"tunable": NAMESPACE + c.name, "default": c.default, "value": c.value,
                       "moved": c.moved, "why": c.why} for c in choices],
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


def describe(c: tune.Choice) -> str:
    def show(v):
        return "never" if v is not None and v >= NEVER[c.name] else fmt_size(v)
    return f"{c.name:<28} {show(c.default):>10} {(show(c.value) if c.moved else '(as is)'):>10}  {c.why}"


# ---- the whole of `memkit tune --glibc` ----

def method_text(rounds: int, grid: list[int]) -> str:
    need = stats.sign_test_wins_needed(rounds, tune.ALPHA)
    rule = (f"a threshold moves off glibc's value only where another strategy was faster in at least "
            f"{need}/{rounds} paired rounds (one-sided sign test p<={tune.ALPHA}) and by at least "
            f"{tune.MARGIN:.0%} at the median" if need is not None else
            f"{rounds} rounds are too few for the sign test to reach p<={tune.ALPHA}: nothing can move")
    return (f"glibc's memset and memcpy (memkit-tune-experiment routines=glibc), each strategy a process "
            f"of its own under the GLIBC_TUNABLES that forces it; {rounds} rounds of one process per "
            f"strategy in a shuffled order, per size band; {len(grid)} sizes "
            f"{fmt_size(grid[0])}..{fmt_size(grid[-1])}; {rule}")


def confirm_moves(program: Path, moved: list, choices: list, view, grid: list[int], s: dict, paths,
                  progress) -> tuple[list, list, Optional[dict]]:
    """Every move timed again against glibc as it is, on the grid and the
    sizes between its points; a move that does not hold goes back to glibc's
    value.  (choices, the confirmations' records, their times or None.)"""
    confirmations, ctimes = [], None
    if not moved:
        return choices, confirmations, ctimes
    rounds = s["rounds"]
    ccells = [(op, size) for ops in FAMILIES.values() for op in ops for size in tune.confirmation_sizes(grid, s)]
    tuned = {c.name: c.value for c in moved}
    print(f"\n== confirming {len(moved)} move(s): glibc tuned ({spec_of(tuned)}) against glibc as it is, "
          f"a process each, {rounds} interleaved rounds, {len(ccells)} cells", flush=True)
    ctimes = measure(program, {"defaults": {}, "tuned": tuned}, ccells, rounds, s["batch_ns"],
                     on_progress=lambda pr: progress.update(pr, "confirm "))
    progress.clear()
    confs = tune.confirm(moved, values_of(view), ccells, ctimes, paths)
    confirmations = [confirmation_record(conf) for conf in confs]
    choices = tune.settle(confs, choices, "glibc's value")
    return choices, confirmations, ctimes


def _say_plan(fp: dict, view: dict, base_env: dict, method: str) -> None:
    print(f"tuning glibc {fp.get('glibc', '?')} on {fp.get('cpu_model', '?')} ({profile_file.cpu_line(fp)[4:]})")
    print(f"glibc holds: {glibc.view_text(view)}")
    if base_env.get("GLIBC_TUNABLES"):
        print(f"note: the GLIBC_TUNABLES in this environment ({base_env['GLIBC_TUNABLES']}) is left out: "
              "glibc is measured as shipped and against it")
    print(f"method: {method}")


def _say_line(line: str, any_moved: bool, moved: list) -> None:
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


def _say_written(out_dir: Optional[Path], written: list) -> None:
    if out_dir is None:
        print("\n--dry-run: no line written" + (f"; the evidence: {written[0]}" if written else ""))
    else:
        print(f"\nwrote {written[0]} (`memkit try --glibc-tunables @{written[0]}` takes it) "
              f"and the evidence, {written[1]}")


def run(program: Path, fp: dict, out_dir: Optional[Path], evidence: Optional[Path], s: dict,
        progress, base_env: dict, loader: Optional[Path] = None) -> int:
    """Measures, decides, confirms, prints the line and writes it (out_dir:
    None writes nothing).  s: tune's settings (lo, hi, per_octave, rounds,
    batch_ns)."""
    check_outputs(out_dir, evidence)
    paths = GlibcPaths(reader(loader, base_env))
    view = paths.view({})
    caches = fp.get("cache") or {}
    grid = size_grid(s["lo"], s["hi"], s["per_octave"], view, caches, int(fp.get("cpus_online") or 1))
    if not grid:
        raise MemkitError("no size to time between --min-size and --max-size")
    configs = forced(grid[0])
    strategies = {name: paths.view(settings) for name, settings in configs.items()}
    rounds, method = s["rounds"], method_text(s["rounds"], grid)
    _say_plan(fp, view, base_env, method)
    cells = [(op, size) for ops in FAMILIES.values() for op in ops for size in grid]
    print(f"== glibc's strategies: {', '.join(f'{n} ({spec_of(c)})' for n, c in configs.items())}; "
          f"{len(cells)} cells (each timed by the strategies that run their own path there) x "
          f"{rounds} rounds", flush=True)
    times = measure(program, configs, cells, rounds, s["batch_ns"],
                    on_progress=lambda pr: progress.update(pr, "glibc "), views=strategies)
    progress.clear()
    choices, picks = decide(times, grid, paths, strategies)
    print(f"\n{'glibc tunable':<28} {'glibc':>10} {'tuned':>10}  why (the values glibc takes; the sizes "
          "in the why are where a strategy starts)")
    for c in choices:
        print(describe(c))
    moved = [c for c in choices if c.moved]
    choices, confirmations, ctimes = confirm_moves(program, moved, choices, view, grid, s, paths, progress)
    line, any_moved = line_of(choices, view)
    _say_line(line, any_moved, moved)
    rule = {"rounds": rounds, "per_octave": s["per_octave"], "lo": s["lo"], "hi": s["hi"],
            "batch_ns": s["batch_ns"], "grid": grid, "forced": configs, "method": method}
    doc = evidence_document(fp, rule, view, strategies, times, picks, choices, confirmations, line, ctimes)
    _say_written(out_dir, write_outputs(out_dir, line_file_text(line, any_moved, fp, method), doc, evidence))
    return 0
