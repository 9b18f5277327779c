#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The regression gate's promise (docs/judging.md) measured over many seeded
injections, per recorded CPU (tests/data/runs/): for every identical pair a
CPU recorded, whether the gate passes it, and the share of regressions put
into a copy of its later run (tests/python/test_gate_promise.py's
injections: bands 1.3-2.0x, bands of short calls 1.6-2.0x, whole series
1.15-2.0x, each from its floor where that is higher) that are flagged worse,
with how often another series got a band or a whole flagged worse for it.

Each pair is judged against the reference derived from every recording but
itself (leave one out): what a fresh database on that CPU would meet.

    scripts/gate_promise.py [--per-cpu N] [--seed S] [--low-edge X] [--edge-only]

--low-edge X also counts the injections within X of their promised factor
(the hardest: 1.15-1.2x for whole series at X=0.05); --edge-only draws every
factor there (from 1.15-1.2x, 1.3-1.35x and 1.6-1.65x where the floor is not
higher; a series whose floor is higher is left out).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "python"), str(REPO / "tests" / "python")]

from memkit.comparison import compare as cmp  # noqa: E402
from memkit.comparison import identical_runs  # noqa: E402
from memkit.store.db import Database  # noqa: E402
from regressions import slowed_at  # noqa: E402
import test_gate_promise as promise  # noqa: E402

RUNS = REPO / "tests" / "data" / "runs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-cpu", type=int, default=120,
                    help="injections per CPU, spread over its identical pairs (default 120)")
    ap.add_argument("--seed", type=int, default=1, help="the first seed (default 1)")
    ap.add_argument("--low-edge", type=float, default=0.05,
                    help="also count injections within this of their promised factor (default 0.05)")
    ap.add_argument("--edge-only", action="store_true", help="draw every factor within --low-edge of the promise's")
    args = ap.parse_args()
    if args.edge_only:
        promise.FACTORS = {k: (lo, lo + args.low_edge) for k, (lo, _) in promise.FACTORS.items()}
    recorded = identical_runs.recorded_moves(RUNS)   # each pair read once, each left out in turn
    for folder in sorted(p for p in RUNS.iterdir() if (p / "runs.json").is_file()):
        pairs_here = identical_runs.recorded_pairs(folder)
        promise.INJECTIONS = 3 * max(1, round(args.per_cpu / len(pairs_here) / 3))
        passed, pairs = 0, 0
        caught: dict = {}
        edge: dict = {}
        others = 0
        for n, (db, a, b) in enumerate(pairs_here):
            loo = identical_runs.reference_of([r for r in recorded if r[:4] != (folder.name, db, a, b)])["experiments"]
            identical_runs.reference = lambda loo=loo: loo
            with Database(folder / db) as d:
                runs = {r["id"]: r for r in d.runs()}
                ma, mb = d.measurements(a), d.measurements(b)
            busy = bool(runs[a].get("busy") or runs[b].get("busy"))
            pairs += 1
            res = cmp.compare_measurements(ma, mb, busy=busy)
            passed += res.worse == 0
            for x in res.flagged + res.flagged_bands + res.flagged_series:
                print(f"  {folder.name} {db} {a}-{b}: {type(x).__name__} {x.experiment} {x.series} "
                      f"{getattr(x, 'span', cmp.params_text(x.params))} {x.direction} x{x.ratio:.3f}")
            for kind, exp, series, row, axis, band, factor in promise.injections(ma, seed=args.seed + 1000 * n):
                def where(p):
                    return p.get(axis) in band and all(p.get(k) == v for k, v in row.items())
                res = cmp.compare_measurements(ma, slowed_at(mb, exp, series, where, factor), busy=busy)
                hit = any(x.experiment == exp and x.series == series and x.direction == "worse"
                          for x in res.flagged + res.flagged_bands + res.flagged_series)
                others += any(x.direction == "worse" and (x.experiment, x.series) != (exp, series)
                              for x in res.flagged_bands + res.flagged_series)
                got = caught.setdefault(kind, [0, 0])
                got[0] += hit
                got[1] += 1
                if factor < promise.promised(kind, exp, series, json.dumps(row, sort_keys=True)) + args.low_edge:
                    e = edge.setdefault(kind, [0, 0])
                    e[0] += hit
                    e[1] += 1
        total = sum(x[1] for x in caught.values())
        print(f"{folder.name}: identical pairs passed {passed}/{pairs}; "
              + "; ".join(f"{k} caught {c}/{t} ({100 * c / t:.1f}%)" for k, (c, t) in sorted(caught.items()))
              + "; at the low edge: " + "; ".join(f"{k} {c}/{t}" for k, (c, t) in sorted(edge.items()))
              + f"; another series' band or whole flagged worse: {others}/{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
