"""Options several commands share."""

from __future__ import annotations

from memkit import db
from memkit.errors import MemkitError


def add_db_option(parser):
    parser.add_argument("--db", metavar="PATH",
                        help=f"results database (default: $MEMKIT_DB, else {db.DEFAULT_PATH})")


def add_build_option(parser):
    parser.add_argument("--build", metavar="DIR",
                        help="build directory holding bench/memkit-exp-* (default: $MEMKIT_BUILD, "
                             "else build/ of this checkout, else ./build)")


def db_path(args):
    return args.db or db.default_path()


def chosen_run(db, wanted) -> int:
    """The run asked for, else the database's last one."""
    runs = db.runs()
    if not runs:
        raise MemkitError(f"no runs in {db.path}; `memkit run` first")
    return wanted if wanted is not None else runs[-1]["id"]
