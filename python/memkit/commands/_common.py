# SPDX-License-Identifier: Apache-2.0
"""Options several commands share."""

from __future__ import annotations

import argparse
import math
import os
import socket

from memkit.errors import MemkitError, UsageError
from memkit.store import db
from memkit.terminal import printable


def given(what: str):
    """An option's type that refuses an empty value (`--db=`, `-o ""`): left
    empty, the option would silently fall back on its default."""
    def check(value: str) -> str:
        if not value:
            raise argparse.ArgumentTypeError(f"an empty value: give {what}, or leave the option out "
                                             f"for its default")
        return value
    return check


def at_least(minimum: int, what: str):
    """An option's type: an integer of at least `minimum` (a usage error,
    exit 2, before anything runs, where 0 would silently mean the default)."""
    def check(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{value}' is not a whole number") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{n}: takes at least {minimum} {what}")
        return n
    return check


def seconds(value: str) -> float:
    """An option's type: a finite number of seconds, 0 or more (nan and inf
    would mean no limit at all)."""
    try:
        n = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value}' is not a number of seconds") from None
    if not math.isfinite(n) or n < 0:
        raise argparse.ArgumentTypeError(f"{value}: takes a finite number of seconds, 0 or more")
    return n


def add_db_option(parser):
    parser.add_argument("--db", metavar="PATH|URL", type=given("a file path or a postgresql:// URL"),
                        help=f"results database: an SQLite file or postgresql://USER@HOST:PORT/DB "
                             f"(default: $MEMKIT_DB, else {db.DEFAULT_PLACES}); an SQLite file another "
                             f"process holds is waited for $MEMKIT_DB_TIMEOUT seconds (default 60)")


def add_build_option(parser):
    parser.add_argument("--build", metavar="DIR", type=given("a directory"),
                        help="build directory holding bench/memkit-exp-* (default: $MEMKIT_BUILD, "
                             "else the experiments installed with this package, else build/ of "
                             "this checkout, else ./build)")


def db_path(args):
    return args.db or db.default_path()


def add_host_option(parser):
    parser.add_argument("--host", metavar="NAME",
                        help="the host name this run is stored under (default: $MEMKIT_HOST, else the "
                             "machine's host name): several containers on one box, or tests")


HOST_NAME_MAX = 255


def host_name(args) -> str:
    """--host, else $MEMKIT_HOST, else the machine's name; one that would
    break a line of `memkit runs` or `fleet` (control characters, blanks at
    its ends) is refused."""
    given, where = getattr(args, "host", None), "--host"
    if given is None and os.environ.get("MEMKIT_HOST"):   # set but empty: unset
        given, where = os.environ["MEMKIT_HOST"], "MEMKIT_HOST"
    if given is None:
        given, where = socket.gethostname(), "the machine's name"
    name = given
    if printable(name) != name or name != name.strip() or not name or len(name) > HOST_NAME_MAX:
        raise UsageError(f"bad host name '{printable(name)}' ({where}): 1 to {HOST_NAME_MAX} characters, "
                         f"no control characters, no blanks at the ends")
    return name


def add_run_argument(parser, what: str):
    """The run a command takes: RUN, or --run RUN (the same for every command
    taking one run: report, export)."""
    parser.add_argument("run", nargs="?", type=int, metavar="RUN", help=f"the run {what} (default: the last)")
    parser.add_argument("--run", type=int, dest="run_option", metavar="RUN", help="the same as RUN")


def wanted_run(args):
    """The run asked for (RUN or --run), None for the last one."""
    if args.run is not None and args.run_option is not None and args.run != args.run_option:
        raise UsageError(f"two runs given ({args.run} and --run {args.run_option}): give one")
    return args.run if args.run is not None else args.run_option


def chosen_run(db, wanted) -> int:
    """The run asked for, else the database's last one."""
    runs = db.runs()
    if not runs:
        raise MemkitError(f"no runs in {db.path}; `memkit run` first")
    return wanted if wanted is not None else runs[-1]["id"]
