# SPDX-License-Identifier: Apache-2.0
"""memkit compare: two runs, measurement by measurement, on their raw samples."""

from __future__ import annotations

import json
import math

from memkit.commands._common import add_db_option, db_path
from memkit.errors import MemkitError, UsageError
from memkit.comparison import compare as cmp
from memkit.comparison.fleet import latest_runs
from memkit.lab.fingerprint import changed_keys, differences
from memkit.programs import whole_program
from memkit.store.db import Database
from memkit.terminal import printable

NAME = "compare"
HELP = ("compare two runs (default: the last two that share measurements): changes beyond the noise, "
        "what changed on the machine")


def add_arguments(p):
    p.add_argument("runs", nargs="*", type=int, metavar="RUN",
                   help="run ids A B (default: the last run and the latest before it that shares measurements "
                        "with it, as `memkit run` names it; if it shares none, the last two runs that do)")
    p.add_argument("--all", action="store_true", help="print every measurement, not only the flagged ones")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object: {"machine_changed": [keys], "changes": [flagged changes], ...}')
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit with status 1 when any measurement or whole series is worse (for CI); "
                        f"{UNJUDGED_STATUS} when none is but some measurements could be judged neither "
                        "alone nor in their series (short calls of a quick run without a baseline)")
    p.add_argument("--machine", action="append", metavar="HOST",
                   help="twice: compare the latest runs of two hosts (see `memkit fleet`)")
    add_db_option(p)


def pick_runs(db, runs: list[dict], wanted: list[int]) -> tuple[dict, dict, list[str]]:
    """The two runs to compare and what to say of the choice: without run
    ids the last run and the one it is comparable with (the rule `run`'s
    summary, report and fleet use), else the latest pair that shares
    measurements, else the last two (and then why they share nothing)."""
    if len(wanted) not in (0, 2):
        raise MemkitError("compare takes two run ids, or none for the last two runs that share measurements")
    if not wanted:
        if len(runs) < 2:
            raise MemkitError(f"need two runs to compare; the database has {len(runs)}")
        a, b = whole_program.last_comparable_pair(db, runs)
        if a is None:
            return runs[-2], runs[-1], ["note: no two runs share a measurement; these are the last two"]
        passed = [r["id"] for r in runs if r["id"] > b["id"]]
        if not passed:
            return a, b, []
        return a, b, [f"note: run{'s' if len(passed) > 1 else ''} {', '.join(map(str, passed))} "
                      f"share{'' if len(passed) > 1 else 's'} no measurement with any earlier run; these are the "
                      f"last two that do (`memkit compare A B` compares any two)"]
    if wanted[0] == wanted[1]:
        raise UsageError(f"compare takes two different runs (run {wanted[0]} twice compares nothing)")
    by_id = {r["id"]: r for r in runs}
    for w in wanted:
        if w not in by_id:
            raise MemkitError(f"no run {w} (runs: {', '.join(str(i) for i in by_id) or 'none'})")
    return by_id[wanted[0]], by_id[wanted[1]], []


def nothing_shared(db, a: dict, b: dict, kinds: tuple) -> str:
    """Why two runs share no measurement, in one line."""
    if kinds[0] != kinds[1]:   # a `memkit try` of another program, or no try at all
        return (f"run {a['id']} {whole_program.kind_text(kinds[0])}; "
                f"run {b['id']} {whole_program.kind_text(kinds[1])}")
    names = [[whole_program.label(e) for e in db.experiments(r["id"])] for r in (a, b)]
    if not set(names[0]) & set(names[1]):
        return "; ".join(f"run {r['id']} ran {', '.join(n) or 'nothing'}" for r, n in zip((a, b), names))
    return "they ran the same experiments at other parameters (sizes, arguments)"


def fingerprint_banner(fa: dict, fb: dict) -> list[str]:
    loud, quiet = differences(fa or {}, fb or {})
    lines = []
    if loud:
        lines.append("!" * 78)
        lines.append("!!! THE MACHINE CHANGED BETWEEN THESE RUNS: " + "; ".join(loud))
        lines.append("!!! differences below may come from the machine, not from memkit")
        lines.append("!" * 78)
    if quiet:
        lines.append("note: also differs: " + "; ".join(quiet))
    return lines


MARKS = {"better": "better", "worse": "WORSE", "changed": "changed", "same": "within noise"}


def _row(c: cmp.Change) -> str:
    mark = MARKS[c.direction]
    if not c.judged:
        mark = "not judged (short call, < 3 processes)"
    interval = "" if math.isnan(c.low) else f" [{c.low:.3f} .. {c.high:.3f}]"
    if c.evidence == "paired":
        against = f" relative to {c.baseline}"
        samples = "paired speed-ups"
    else:
        # judged against the shift: its interval is the one that decides
        against = (f" (x{c.ratio / c.shift:.3f} [{c.low / c.shift:.3f} .. {c.high / c.shift:.3f}] vs the shift)"
                   if abs(c.shift - 1) > 0.005 else "")
        samples = f"{c.basis}s"
    return (f"  {c.series:<16} {cmp.params_text(c.params):<26} {c.metric:<18} "
            f"{c.a:10.4g} -> {c.b:10.4g} {c.unit:<6} x{c.ratio:.3f}{interval}{against} q={c.q:.2g} "
            f"({samples}{f', min {100 * c.min_effect:.0f}%' if c.judged else ''})  {mark}")


UNJUDGED_STATUS = 3


def gate_verdict(worse: int, unjudged: int, compared: int) -> str:
    """The regression gate's verdict in one line."""
    if worse:
        return f"regression: {worse} flagged worse"
    if unjudged:
        return (f"no regression among the judged, but {unjudged} of {compared} measurements could not be "
                f"judged (exit {UNJUDGED_STATUS}): run more processes (`processes=3`) or the default grid")
    return f"no regression: all {compared} measurements judged, alone or in their series"


def gate_status(args, worse: int, unjudged: list) -> int:
    if not args.fail_on_regression:
        return 0
    return 1 if worse else UNJUDGED_STATUS if unjudged else 0


def _series_row(s: cmp.SeriesChange) -> str:
    mark = MARKS[s.direction]
    return (f"  {s.series:<16} {cmp.params_text(s.params):<16} as a whole, {s.span}: x{s.ratio:.3f} "
            f"[{s.low:.3f} .. {s.high:.3f}] relative to {s.baseline}, {s.moved} of {len(s.members)} sizes "
            f"that way, q={s.q:.2g} (Hodges-Lehmann estimate of the paired changes net of the baseline's move, "
            f"signed-rank interval, min {100 * s.min_effect:.0f}%)  {mark}")


def _busy_notes(a: dict, b: dict) -> list[str]:
    return ([f"note: run {r['id']} ran on a busy machine ({r['busy']})" for r in (a, b) if r.get("busy")] +
            [f"note: run {r['id']}: {r['damaged']}" for r in (a, b) if r.get("damaged")])


def main(args) -> int:
    with Database(db_path(args)) as db:
        if args.machine:
            if len(args.machine) != 2 or args.runs:
                raise MemkitError("--machine takes two hosts (--machine A --machine B) and no run ids")
            if args.machine[0] == args.machine[1]:
                raise UsageError(f"--machine takes two different hosts ({printable(args.machine[0])} twice)")
            a, b = latest_runs(db, args.machine)
            notes = []
        else:
            a, b, notes = pick_runs(db, db.runs(), args.runs)
        ma, mb = db.measurements(a["id"]), db.measurements(b["id"])
        kinds = (whole_program.run_kind(db, a), whole_program.run_kind(db, b))
        why_not = nothing_shared(db, a, b, kinds)
    busy = bool(a.get("busy") or b.get("busy"))
    result = cmp.compare_measurements(ma, mb, busy=busy)
    worse = result.worse
    unjudged = result.unjudged
    if args.json:
        print(json.dumps({
            "run_a": a["id"], "run_b": b["id"], "host_a": a["hostname"], "host_b": b["hostname"],
            "notes": [n.removeprefix("note: ") for n in notes] +
                     ([f"no measurement is in both runs: {why_not}"] if not result.changes else []),
            "machine_changed": changed_keys(a["fingerprint"] or {}, b["fingerprint"] or {}),
            "machine_changes": [line for part in differences(a["fingerprint"] or {}, b["fingerprint"] or {})
                                for line in part],
            "compared": len(result.changes), "not_judged": len(unjudged),
            "series_judged": len(result.series),
            "only_a": result.only_a, "only_b": result.only_b,
            "experiment_shifts": dict(result.shifts),
            "experiment_scatter": dict(result.scatter),
            "paired_scatter": dict(result.paired_scatter),
            "paired": result.paired,
            "busy": {str(r["id"]): r["busy"] for r in (a, b) if r.get("busy")},
            "changes": [c.as_json() for c in result.flagged] + [s.as_json() for s in result.flagged_series],
            "gate": gate_verdict(worse, len(unjudged), len(result.changes)) if args.fail_on_regression else None,
        }, indent=1))
        return gate_status(args, worse, unjudged)

    print(f"run {a['id']} of {printable(a['hostname'] or '?')} ({a['started_at']}{', quick' if a['quick'] else ''}) -> "
          f"run {b['id']} of {printable(b['hostname'] or '?')} ({b['started_at']}{', quick' if b['quick'] else ''})")
    for line in notes + fingerprint_banner(a["fingerprint"], b["fingerprint"]) + _busy_notes(a, b):
        print(line)
    if a["quick"] != b["quick"] and kinds[0][0] == kinds[1][0] == "lab":   # a try has no grid
        print("note: one run used the quick grid and the other the default one: few measurements match")
    if not result.changes:
        print(f"no measurement is in both runs: {why_not}")
        return 0
    for s in cmp.summarize(result.changes):
        gm = "-" if math.isnan(s.geomean_ratio) else f"{s.geomean_ratio:.3f}"
        print(f"\n{s.experiment}: {s.compared} measurements in both; flagged: {s.better} better, "
              f"{s.worse} worse, {s.changed} changed; geometric mean speed-up B/A {gm}")
        shift = result.shifts.get(s.experiment)
        if shift and abs(math.log(shift)) > math.log1p(cmp.MIN_EFFECT):
            print(f"  the experiment as a whole moved x{shift:.3f} (B/A, median over its measurements): "
                  f"the machine, most likely; absolute times are judged against the shift of the "
                  f"measurements timed with them")
        for sc in result.series:
            if sc.experiment == s.experiment and (args.all or sc.flagged):
                print(_series_row(sc))
        shown = [c for c in result.changes if c.experiment == s.experiment and (args.all or c.flagged)]
        shown.sort(key=lambda c: -abs(math.log(c.ratio)))
        for c in shown:
            print(_row(c))
    if busy:
        print(f"\na run was made on a busy machine: every minimum effect is {cmp.BUSY_FACTOR:g}x larger")
    alone = [c for c in result.changes if not c.judged]
    if alone:
        in_series = result.in_series
        print(f"\n{len(alone)} measurements of calls under {cmp.SHORT_CALL_NS:.0f} ns were not judged alone: measured in "
              f"fewer than {cmp.PROCESSES_MIN} processes, their placement noise between processes is larger than "
              f"a change; {sum(id(c) in in_series for c in alone)} of them count in the {len(result.series)} series judged as a "
              f"whole (a series is flagged when it moved by more than {100 * cmp.SERIES_EFFECT:.0f}% and its interval "
              "leaves out 1)")
    print(f"\n{len(result.changes)} measurements compared (one headline metric each; {result.paired} on their paired "
          f"speed-ups over a baseline timed in the same rounds, the rest on their absolute samples), "
          f"{len(result.flagged)} flagged and {len(result.flagged_series)} series as a whole ({worse} worse); a change is flagged when its "
          f"interval leaves out 1 (or the shift it is judged against), its bootstrap p-value, corrected for {len(result.changes)} comparisons (Benjamini-Hochberg, FDR "
          f"{cmp.FDR:g}), says so and it exceeds {100 * cmp.MIN_EFFECT:.0f}% (per-process samples), "
          f"{100 * cmp.PLACEMENT_EFFECT:.0f}% (per-round samples only){f' (x{cmp.BUSY_FACTOR:g}: busy)' if busy else ''}")
    if result.only_a or result.only_b:
        print(f"{result.only_a} measurements only in run {a['id']}, {result.only_b} only in run {b['id']}")
    if args.fail_on_regression:
        print("gate: " + gate_verdict(worse, len(unjudged), len(result.changes)))
    return gate_status(args, worse, unjudged)
