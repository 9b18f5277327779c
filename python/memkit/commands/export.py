# SPDX-License-Identifier: Apache-2.0
"""memkit export: one run's measurements as CSV or JSON, for other tools."""

from __future__ import annotations

import csv
import json
import sys

from memkit.commands._common import add_db_option, add_run_argument, chosen_run, db_path, wanted_run
from memkit.store.db import Database

NAME = "export"
HELP = "print a run's measurements (default: the last run) as CSV or JSON"

# The CSV's columns; list-valued fields (samples, ratios) are JSON in a cell.
CSV_COLUMNS = ("run", "experiment", "series", "params", "axis_name", "axis_unit", "metric", "unit", "better",
               "stat", "value", "min", "median", "max", "samples", "sample_values", "process_samples",
               "baseline", "ratio", "ratio_min", "ratio_max", "ratios", "process_ratios", "format")


def add_arguments(p):
    add_run_argument(p, "to export")
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="csv (default) or json")
    add_db_option(p)


def _cell(m: dict, col: str, run_id: int):
    if col == "run":
        return run_id
    if col in ("axis_name", "axis_unit"):
        return (m.get("axis") or {}).get(col[5:], "")
    if col == "baseline":
        return m.get("ratio_to") or ""
    v = m.get(col)
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return "" if v is None else v


def main(args) -> int:
    with Database(db_path(args)) as db:
        run_id = chosen_run(db, wanted_run(args))
        run = db.run(run_id)
        ms = db.measurements(run_id)
        verdicts = db.verdict_records(run_id)
    if args.format == "json":
        for m in ms:
            m.pop("id", None)
            m.pop("run_id", None)
        json.dump({"run": {k: run[k] for k in ("id", "started_at", "finished_at", "quick", "hostname",
                                                "load_avg", "steal_pct", "busy")},
                   "fingerprint": run["fingerprint"], "experiments": [
                       {k: e[k] for k in ("name", "status", "seconds", "error")} for e in run["experiments"]],
                   "measurements": ms, "verdicts": verdicts}, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for m in ms:
        w.writerow([_cell(m, c, run_id) for c in CSV_COLUMNS])
    return 0
