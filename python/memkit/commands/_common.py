"""Options several commands share."""

from __future__ import annotations

import os
import socket

from memkit import db
from memkit.errors import MemkitError


def add_db_option(parser):
    parser.add_argument("--db", metavar="PATH|URL",
                        help=f"results database: an SQLite file or postgresql://USER@HOST:PORT/DB "
                             f"(default: $MEMKIT_DB, else {db.DEFAULT_PATH})")


def add_build_option(parser):
    parser.add_argument("--build", metavar="DIR",
                        help="build directory holding bench/memkit-exp-* (default: $MEMKIT_BUILD, "
                             "else the experiments installed with this package, else build/ of "
                             "this checkout, else ./build)")


def db_path(args):
    return args.db or db.default_path()


def add_host_option(parser):
    parser.add_argument("--host", metavar="NAME",
                        help="the host name this run is stored under (default: $MEMKIT_HOST, else the "
                             "machine's host name): several containers on one box, or tests")


def host_name(args) -> str:
    return getattr(args, "host", None) or os.environ.get("MEMKIT_HOST") or socket.gethostname()


def chosen_run(db, wanted) -> int:
    """The run asked for, else the database's last one."""
    runs = db.runs()
    if not runs:
        raise MemkitError(f"no runs in {db.path}; `memkit run` first")
    return wanted if wanted is not None else runs[-1]["id"]
