# SPDX-License-Identifier: Apache-2.0
"""memkit system-check: what makes timings noisy on this machine, and where
glibc's own thresholds cost here, in one screen."""

from __future__ import annotations

import json

from memkit.commands._common import add_build_option
from memkit.lab import experiments, load, system_check

NAME = "system-check"
HELP = ("say what makes timings noisy here: frequency governor, turbo/boost, SMT, THP, a VM, the load "
        "now, the CPU timing processes are pinned to; and where glibc's thresholds cost here")
DESCRIPTION = """\
Says what makes timings noisy on this machine, each source ok, NOISY or
unknown with what to do: the frequency governor, turbo/boost, SMT,
transparent huge pages, a VM, the load now, the CPU timing processes are
pinned to.

Then glibc's own thresholds beside the caches memkit measured (as memkit env
shows them), ok or COSTLY: a non-temporal threshold past the L3, and glibc's
rep movsb window where memkit's strategy row for the CPU keeps its own rep
movsb to dst - src a multiple of 64 (rep_movsb_align=64: it falls off a
cliff otherwise).  A costly one slows every program on
glibc, the lab's glibc baseline included; the line before the last names the
GLIBC_TUNABLES that corrects them.  On an AMD EPYC Zen 3 VM with glibc 2.36:
  COSTLY  glibc non-temporal      copies from 192 MiB, 6x the 32 MiB L3 memkit measured (glibc's shared cache: 256 MiB)
  COSTLY  glibc rep movsb         for copies of 2.1 KiB to 512 KiB
  glibc's non-temporal and rep movsb thresholds cost here: export GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=8388608:glibc.cpu.x86_rep_movsb_threshold=524288 (for every program started with it)"""


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
