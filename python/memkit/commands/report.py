"""memkit report: an HTML report with PNG plots for one run."""

from __future__ import annotations

from pathlib import Path

from memkit.commands._common import add_db_option, chosen_run, db_path
from memkit.db import Database
from memkit.errors import MemkitError

NAME = "report"
HELP = "write an HTML report with plots for a run (default: the last)"


def add_arguments(p):
    add_db_option(p)
    p.add_argument("--out", metavar="DIR", default="results/report",
                   help="where index.html and the PNGs go (default: results/report)")
    p.add_argument("--run", type=int, metavar="ID", help="the run to report (default: the last)")


def main(args) -> int:
    from memkit.report import write_report   # matplotlib: only when needed
    with Database(db_path(args)) as db:
        run_id = chosen_run(db, args.run)
        try:
            path = write_report(db, run_id, Path(args.out))
        except OSError as e:
            raise MemkitError(f"cannot write the report to {args.out}: {e.strerror or e}")
    print(f"report: {path}")
    return 0
