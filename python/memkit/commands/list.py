# SPDX-License-Identifier: Apache-2.0
"""memkit list: the experiments this build has."""

from memkit.commands._common import add_build_option
from memkit.lab import experiments

NAME = "list"
HELP = "list the experiments, each with its description and seed"


def add_arguments(p):
    add_build_option(p)


def main(args) -> int:
    exps = experiments.discover(experiments.find_bench_dir(args.build))
    width = max(len(e.name) for e in exps)
    for e in exps:
        print(f"{e.name:<{width}}  {e.description}")
        print(f"{'':<{width}}  seed: {e.seed}")
    return 0
