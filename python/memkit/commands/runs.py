# SPDX-License-Identifier: Apache-2.0
"""memkit runs: the runs in the database, one line each."""

from __future__ import annotations

import json

from memkit.commands._common import add_db_option, db_path
from memkit.programs import whole_program
from memkit.store.db import Database
from memkit.terminal import printable

NAME = "runs"
HELP = "list the stored runs: id, when, host, grid, experiments, machine, busy or not, incomplete or not"


def add_arguments(p):
    add_db_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object per run")


def main(args) -> int:
    with Database(db_path(args)) as db:
        runs = db.runs()
        rows = []
        for r in runs:
            exps = db.experiments(r["id"])
            fp = r["fingerprint"] or {}
            rows.append({
                "id": r["id"], "started_at": r["started_at"], "finished_at": r["finished_at"],
                "quick": bool(r["quick"]), "experiments": [e["name"] for e in exps],
                "failed": [e["name"] for e in exps if e["status"] != "ok"],
                # a `memkit try` by the program it ran
                "labels": [whole_program.label(e) for e in exps],
                "tried": next((whole_program.tried_argv(e) for e in exps if whole_program.is_try(e)), None),
                "bottom_line": whole_program.stored_bottom_line(db, r["id"])
                if any(whole_program.is_try(e) for e in exps) else None,
                "cpu_model": fp.get("cpu_model"), "microcode": fp.get("microcode"),
                "memkit_commit": fp.get("memkit_commit"), "tunables": fp.get("tunables"),
                "hostname": r.get("hostname"), "load_avg": r.get("load_avg"),
                "steal_pct": r.get("steal_pct"), "busy": r.get("busy") or "",
                "incomplete": r.get("incomplete"), "damaged": r.get("damaged")})
    if args.json:
        for row in rows:
            print(json.dumps(row, sort_keys=True))
        return 0
    if not rows:
        print("no runs yet: `memkit run` makes one")
        return 0
    hosts = {row["id"]: printable(row["hostname"] or "?") for row in rows}   # a stored one may predate the check
    width = max(len("host"), *map(len, hosts.values()))
    print(f"{'run':>4}  {'started (UTC)':<25} {'host':<{width}} {'grid':<7} {'commit':<9} experiments")
    for row in rows:
        names = ", ".join(printable(label) + (" (failed)" if n in row["failed"] else "")
                          for n, label in zip(row["experiments"], row["labels"]))
        grid = "-" if row["tried"] is not None else "quick" if row["quick"] else "default"
        print(f"{row['id']:>4}  {row['started_at']:<25} {hosts[row['id']]:<{width}} "
              f"{grid:<7} "
              f"{str(row['memkit_commit'] or '?')[:9]:<9} {names}")
        if row["damaged"]:
            print(f"{'':>6}damaged: {row['damaged']}")
        if row["incomplete"]:
            print(f"{'':>6}incomplete: {printable(row['incomplete'])}")
        if row["bottom_line"]:
            print(f"{'':>6}{printable(row['bottom_line'])}")
        if row["busy"]:
            print(f"{'':>6}busy: {row['busy']}")
    return 0
