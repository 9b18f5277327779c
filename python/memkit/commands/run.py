# SPDX-License-Identifier: Apache-2.0
"""memkit run: run experiments, show their tables and verdicts, store the run
(the run itself: memkit.orchestration.suite)."""

from __future__ import annotations

import os

from memkit.commands._common import add_build_option, add_db_option, add_host_option, db_path, given, host_name
from memkit.errors import UsageError
from memkit.lab import glibc
from memkit.orchestration import suite

NAME = "run"
HELP = "run experiments (all by default) and store the results"


def add_arguments(p):
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                   help="experiments to run (default: all, in the suite's order; see `memkit list`); "
                        "key=value words (after `--` or not) are passed to the one experiment named, "
                        "EXPERIMENT:key=value to that experiment (its arguments: the experiment's --help)")
    p.add_argument("--quick", action="store_true",
                   help="each experiment's reduced grid: a smoke test, well under 2 minutes for the suite")
    p.add_argument("--glibc-tunables", metavar="SPEC|@FILE", type=given("a GLIBC_TUNABLES setting"),
                   help="also race glibc under GLIBC_TUNABLES=SPEC (glibc.NAME=VALUE:...; @FILE: a file holding "
                        "that line, as `memkit tune --glibc` writes it) as the series glibc-tuned, in processes "
                        "of its own, in every experiment that races glibc")
    add_db_option(p)
    add_host_option(p)
    add_build_option(p)


def split_arguments(words: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """(experiment names, {experiment: its key=value arguments}).  A bare
    key=value goes to the one experiment named; EXP:key=value to EXP."""
    names = [w for w in words if "=" not in w]
    args: dict[str, list[str]] = {}
    bare = []
    for w in words:
        if "=" not in w:
            continue
        exp, sep, kv = w.partition(":")
        if sep and "=" not in exp:
            if exp not in names:
                raise UsageError(f"argument {w} is for {exp}, which is not among the experiments to run")
            args.setdefault(exp, []).append(kv)
        else:
            bare.append(w)
    if bare:
        if len(names) != 1:
            raise UsageError(f"arguments ({' '.join(bare)}) go to one experiment: name exactly one "
                              f"(e.g. `memkit run fill-regions -- {bare[0]}`), or write EXPERIMENT:{bare[0]}")
        args.setdefault(names[0], []).extend(bare)
    return names, args


def main(args) -> int:
    names, experiment_args = split_arguments(args.experiments)
    spec = glibc.tunables_argument(args.glibc_tunables) if args.glibc_tunables is not None else None
    if spec:
        glibc.check_shipped_environment(os.environ, "memkit run")
    suite.run_suite(names, experiment_args, quick=args.quick, db_path=db_path(args), host=host_name(args),
                    build=args.build, glibc_tunables=spec)
    return 0
