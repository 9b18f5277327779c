# SPDX-License-Identifier: Apache-2.0
"""memkit report: an HTML report with PNG plots for one run."""

from __future__ import annotations

from pathlib import Path

from memkit.commands._common import add_db_option, add_run_argument, chosen_run, db_path, given, wanted_run
from memkit.errors import MemkitError, UsageError
from memkit.store import db as database
from memkit.store.db import Database

NAME = "report"
HELP = "write an HTML report with plots for a run (default: the last), or over every host (--fleet)"


def add_arguments(p):
    add_db_option(p)
    p.add_argument("--out", metavar="DIR", type=given("a directory"),
                   help="where index.html and the PNGs go; memkit replaces only files it wrote there "
                        "(default: results/report of the memkit checkout it runs in, else "
                        "$XDG_DATA_HOME/memkit/report)")
    add_run_argument(p, "to report")
    p.add_argument("--fleet", action="store_true",
                   help="one page over every host: latest runs, what changed, what moved (see `memkit fleet`)")


def main(args) -> int:
    from memkit.report.run_report import write_report   # matplotlib: only when needed
    wanted = wanted_run(args)
    out = Path(args.out) if args.out else database.results_dir() / "report"
    with Database(db_path(args)) as db:
        if args.fleet and wanted is not None:
            raise UsageError("--fleet reports every host's latest run: it takes no run")
        run_id = chosen_run(db, wanted)   # also: no runs at all is an error
        try:
            if args.fleet:
                from memkit.report.fleet_report import write_fleet_report
                path = write_fleet_report(db, out)
            else:
                path = write_report(db, run_id, out)
        except OSError as e:
            raise MemkitError(f"cannot write the report to {out}: {e.strerror or e}")
    print(f"report: {path}")
    return 0
