# SPDX-License-Identifier: Apache-2.0
"""memkit system-check: what makes timings noisy on this machine, and where
glibc's own thresholds cost here, in one screen."""

from __future__ import annotations

import json

from memkit.commands._common import add_build_option
from memkit.lab import experiments, load, system_check

NAME = "system-check"
HELP = ("say what makes timings noisy here: frequency governor, turbo/boost, SMT, THP, a VM, the load "
        "now, the CPU timing processes are pinned to; and where glibc's thresholds disagree with the caches "
        "memkit measured, with the GLIBC_TUNABLES that corrects them")


def add_arguments(p):
    add_build_option(p)
    p.add_argument("--json", action="store_true", help="print the findings as a JSON list")


def main(args) -> int:
    fp = experiments.fingerprint(experiments.discover(experiments.find_bench_dir(args.build)))
    items = system_check.findings(fp, load.sample())
    if args.json:
        print(json.dumps([f.as_json() for f in items], indent=1))
        return 0
    for line in system_check.text(items, fp):
        print(line)
    return 0
