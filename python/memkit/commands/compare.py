"""memkit compare: two runs, measurement by measurement, against their noise."""

from __future__ import annotations

import math

from memkit import compare as cmp
from memkit.commands._common import add_db_option, db_path
from memkit.db import Database
from memkit.errors import MemkitError
from memkit.fleet import latest_runs
from memkit.fingerprint import differences

NAME = "compare"
HELP = "compare two runs (default: the last two): ratios, changes beyond the noise, fingerprint changes"


def add_arguments(p):
    p.add_argument("runs", nargs="*", type=int, metavar="RUN", help="run ids A B (default: the last two runs)")
    p.add_argument("--all", action="store_true", help="print every measurement, not only those beyond the noise")
    p.add_argument("--machine", action="append", metavar="HOST",
                   help="twice: compare the latest runs of two hosts (see `memkit fleet`)")
    add_db_option(p)


def pick_runs(runs: list[dict], wanted: list[int]) -> tuple[dict, dict]:
    if len(wanted) not in (0, 2):
        raise MemkitError("compare takes two run ids, or none for the last two runs")
    if not wanted:
        if len(runs) < 2:
            raise MemkitError(f"need two runs to compare; the database has {len(runs)}")
        return runs[-2], runs[-1]
    by_id = {r["id"]: r for r in runs}
    for w in wanted:
        if w not in by_id:
            raise MemkitError(f"no run {w} (runs: {', '.join(str(i) for i in by_id) or 'none'})")
    return by_id[wanted[0]], by_id[wanted[1]]


def fingerprint_banner(fa: dict, fb: dict) -> list[str]:
    loud, quiet = differences(fa or {}, fb or {})
    lines = []
    if loud:
        lines.append("!" * 78)
        lines.append("!!! THE MACHINE CHANGED BETWEEN THESE RUNS: " + "; ".join(loud))
        lines.append("!!! differences below may come from the machine, not from memkit: re-run the")
        lines.append("!!! whole suite on one side before trusting a comparison")
        lines.append("!" * 78)
    if quiet:
        lines.append("note: also differs: " + "; ".join(quiet))
    return lines


def _row(c: cmp.Change) -> str:
    ratio = "-" if math.isnan(c.ratio) else f"{c.ratio:6.3f}"
    mark = {"better": "better", "worse": "WORSE", "changed": "changed", "same": "within noise"}[c.verdict]
    return (f"  {c.series:<16} {cmp.params_text(c.params):<26} {c.metric:<22} "
            f"{c.a:10.4g} -> {c.b:10.4g} {c.unit:<6} x{ratio}  (noise ±{100 * c.spread:.1f}%)  {mark}")


def main(args) -> int:
    with Database(db_path(args)) as db:
        if args.machine:
            if len(args.machine) != 2 or args.runs:
                raise MemkitError("--machine takes two hosts (--machine A --machine B) and no run ids")
            a, b = latest_runs(db, args.machine)
        else:
            a, b = pick_runs(db.runs(), args.runs)
        ma, mb = db.measurements(a["id"]), db.measurements(b["id"])
    print(f"run {a['id']} of {a['hostname'] or '?'} ({a['started_at']}{', quick' if a['quick'] else ''}) -> "
          f"run {b['id']} of {b['hostname'] or '?'} ({b['started_at']}{', quick' if b['quick'] else ''})")
    for line in fingerprint_banner(a["fingerprint"], b["fingerprint"]):
        print(line)
    if a["quick"] != b["quick"]:
        print("note: one run used the quick grid and the other the default one: few measurements match")
    changes, only_a, only_b = cmp.compare_measurements(ma, mb)
    if not changes:
        print("no measurement is in both runs")
        return 0
    for s in cmp.summarize(changes):
        gm = "-" if math.isnan(s.geomean_ratio) else f"{s.geomean_ratio:.3f}"
        print(f"\n{s.experiment}: {s.compared} measurements in both; beyond the noise: {s.better} better, "
              f"{s.worse} worse, {s.changed} changed; median noise ±{100 * s.median_noise:.1f}%; "
              f"geometric mean B/A {gm}")
        shown = [c for c in changes if c.experiment == s.experiment and (args.all or c.beyond)]
        shown.sort(key=lambda c: -abs(math.log(c.ratio)) if c.ratio and c.ratio > 0 else 0)
        for c in shown:
            print(_row(c))
    if only_a or only_b:
        print(f"\n{only_a} measurements only in run {a['id']}, {only_b} only in run {b['id']}")
    return 0
