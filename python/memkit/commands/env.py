"""memkit env: this machine's fingerprint, as every run records it."""

import json

from memkit import lab, load
from memkit.commands._common import add_build_option
from memkit.fingerprint import describe_lines

NAME = "env"
HELP = "print this machine's fingerprint (CPU, microcode, kernel, glibc, ISA, caches, tunables...)"


def add_arguments(p):
    add_build_option(p)
    p.add_argument("--json", action="store_true", help="print the fingerprint as JSON")


def main(args) -> int:
    bench_dir = lab.find_bench_dir(args.build)
    fp = lab.fingerprint(lab.discover(bench_dir))
    now = load.sample()
    if args.json:
        print(json.dumps(dict(fp, load=now.as_record()), indent=2, sort_keys=True))
        return 0
    rows = describe_lines(fp) + [("library", lab.library_version(bench_dir)), ("load", now.describe())]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0
