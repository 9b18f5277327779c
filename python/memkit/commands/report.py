"""memkit report: an HTML report with PNG plots for one run."""

from __future__ import annotations

from pathlib import Path

from memkit.commands._common import add_db_option, chosen_run, db_path
from memkit.db import Database
from memkit.errors import MemkitError

NAME = "report"
HELP = "write an HTML report with plots for a run (default: the last), or over every host (--fleet)"


def add_arguments(p):
    add_db_option(p)
    p.add_argument("--out", metavar="DIR", default="results/report",
                   help="where index.html and the PNGs go (default: results/report)")
    p.add_argument("--run", type=int, metavar="ID", help="the run to report (default: the last)")
    p.add_argument("--fleet", action="store_true",
                   help="one page over every host: latest runs, what changed, what moved (see `memkit fleet`)")


def main(args) -> int:
    from memkit.report import write_report   # matplotlib: only when needed
    with Database(db_path(args)) as db:
        if args.fleet and args.run is not None:
            raise MemkitError("--fleet reports every host's latest run: it takes no --run")
        run_id = chosen_run(db, args.run)   # also: no runs at all is an error
        try:
            if args.fleet:
                from memkit.fleet_report import write_fleet_report
                path = write_fleet_report(db, Path(args.out))
            else:
                path = write_report(db, run_id, Path(args.out))
        except OSError as e:
            raise MemkitError(f"cannot write the report to {args.out}: {e.strerror or e}")
    print(f"report: {path}")
    return 0
