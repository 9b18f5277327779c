"""memkit run: run experiments, show their tables and verdicts, store the run."""

from __future__ import annotations

import datetime
import shlex
import sys

from memkit import lab
from memkit.backends import safe_url
from memkit.commands._common import add_build_option, add_db_option, add_host_option, db_path, host_name
from memkit.db import Database
from memkit.errors import MemkitError
from memkit.terminal import ProgressLine

NAME = "run"
HELP = "run experiments (all by default) and store the results"


def add_arguments(p):
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                   help="experiments to run (default: all, in the suite's order; see `memkit list`)")
    p.add_argument("--quick", action="store_true",
                   help="each experiment's reduced grid: a smoke test, well under 2 minutes for the suite")
    add_db_option(p)
    add_host_option(p)
    add_build_option(p)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _print_summary(results, run_id, where, host):
    print()
    print(f"== summary: run {run_id} of {host} (stored in {where}) ==")
    for r in results:
        print(f"{r.name:<20} {r.status:<8} {r.seconds:7.1f} s")
        for v in r.verdicts:
            print(f"    {v}")
        if r.error:
            print(f"    error: {r.error}")
    print(f"total {sum(r.seconds for r in results):.1f} s; `memkit report` writes the HTML report, "
          f"`memkit compare` compares with the previous run")


def main(args) -> int:
    exps = lab.select(lab.discover(lab.find_bench_dir(args.build)), args.experiments)
    path = db_path(args)
    host = host_name(args)
    # Open (and create) the database before spending minutes on experiments:
    # an unusable path fails now.
    with Database(path, create=True) as db:
        started = _now()
        progress = ProgressLine()
        results = []
        for i, e in enumerate(exps, 1):
            extra = [] if args.quick else lab.SUITE_ARGS.get(e.name, [])
            print(f"== {e.name} ({i}/{len(exps)}){' --quick' if args.quick else ''}"
                  f"{' ' + ' '.join(extra) if extra else ''}: {e.description}", flush=True)

            def on_stderr(line):
                progress.clear()
                print(f"   {e.name}: {line}", file=sys.stderr, flush=True)

            r = lab.run_experiment(e, args.quick, extra, on_stderr=on_stderr,
                                   on_progress=lambda p, tag=f"[{i}/{len(exps)}] ": progress.update(p, tag))
            progress.clear()
            sys.stdout.write(r.output)
            if r.error:
                print(f"memkit: error: {r.error}", file=sys.stderr, flush=True)
            print(f"-- {e.name}: {r.status}, {r.seconds:.1f} s, {len(r.measurements)} measurements", flush=True)
            results.append(r)
        fingerprint = next((r.fingerprint for r in results if r.fingerprint), None)
        if fingerprint is None:
            try:
                fingerprint = lab.fingerprint(exps)
            except MemkitError:
                fingerprint = None
        run_id = db.store_run(started_at=started, finished_at=_now(), quick=args.quick,
                              fingerprint=fingerprint, results=results, hostname=host,
                              command=shlex.join(map(safe_url, sys.argv)))
    _print_summary(results, run_id, db.path, host)
    failed = [r for r in results if r.status != "ok"]
    if failed:
        raise MemkitError(f"{len(failed)} experiment(s) did not finish: " +
                          "; ".join(r.error for r in failed) + f" (run {run_id} keeps the rest)")
    return 0
