# SPDX-License-Identifier: Apache-2.0
"""memkit compare: two runs, measurement by measurement, on their raw samples."""

from __future__ import annotations

import json

from memkit.commands._common import add_db_option, db_path
from memkit.errors import MemkitError, UsageError
from memkit.comparison import compare as cmp
from memkit.comparison.fleet import latest_runs
from memkit.comparison.history import earlier_runs
from memkit.comparison.two_runs import UNJUDGED_STATUS, RunPairComparison
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
                   help="exit with status 1 when any measurement, band of adjacent sizes or whole series is "
                        "worse, or none is in both runs (for CI; judged against the earlier runs of the same grid "
                        "on the host where the database holds them); "
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


def gate_status(args, worse: int, unjudged: list, compared: int) -> int:
    if not args.fail_on_regression:
        return 0
    return 1 if worse or not compared else UNJUDGED_STATUS if unjudged else 0


def check_usage(args) -> None:
    """What was typed, refused before the database is opened (exit 2)."""
    if args.machine:
        if len(args.machine) != 2 or args.runs:
            raise UsageError("--machine takes two hosts (--machine A --machine B) and no run ids")
        if args.machine[0] == args.machine[1]:
            raise UsageError(f"--machine takes two different hosts ({printable(args.machine[0])} twice)")
    elif len(args.runs) not in (0, 2):
        raise UsageError("compare takes two run ids, or none for the last two runs that share measurements")
    elif args.runs and args.runs[0] == args.runs[1]:
        raise UsageError(f"compare takes two different runs (run {args.runs[0]} twice compares nothing)")


def main(args) -> int:
    check_usage(args)
    with Database(db_path(args)) as db:
        if args.machine:
            a, b = latest_runs(db, args.machine)
            notes = []
        else:
            a, b, notes = pick_runs(db, db.runs(), args.runs)
        ma, mb = db.measurements(a["id"]), db.measurements(b["id"])
        history = earlier_runs(db, db.runs(), a, b)
        kinds = (whole_program.run_kind(db, a), whole_program.run_kind(db, b))
        why_not = nothing_shared(db, a, b, kinds)
    busy = bool(a.get("busy") or b.get("busy"))
    pair = RunPairComparison(a, b, notes, kinds, why_not,
                             cmp.compare_measurements(ma, mb, busy=busy, history=history,
                                                      quick=bool(a["quick"] and b["quick"])))
    gate = gate_status(args, pair.result.worse, pair.result.unjudged, len(pair.result.changes))
    if args.json:
        print(json.dumps(pair.as_json(args.fail_on_regression), indent=1))
        return gate
    print("\n".join(pair.lines(args.all, args.fail_on_regression)))
    return gate
