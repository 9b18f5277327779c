"""Options several commands share."""

from __future__ import annotations

from memkit import db


def add_db_option(parser):
    parser.add_argument("--db", metavar="PATH",
                        help=f"results database (default: $MEMKIT_DB, else {db.DEFAULT_PATH})")


def add_build_option(parser):
    parser.add_argument("--build", metavar="DIR",
                        help="build directory holding bench/memkit-exp-* (default: $MEMKIT_BUILD, "
                             "else the experiments installed with this package, else build/ of "
                             "this checkout, else ./build)")


def db_path(args):
    return args.db or db.default_path()
