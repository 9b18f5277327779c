# SPDX-License-Identifier: Apache-2.0
"""A suite run (`memkit run`, and `memkit record --predict` replaying a
recording): the experiments one after another, their tables on standard
output, each stored as it finishes (a spill file when the database stops
taking them), then the summary."""

from __future__ import annotations

import contextlib
import datetime
import os
import shlex
import signal
import sys
from typing import Optional

from memkit.errors import MemkitError
from memkit.lab import estimate, experiments, glibc, load, machine, ranking
from memkit.programs import recording, whole_program
from memkit.store import spill
from memkit.store.backends import safe_url
from memkit.store.db import Database
from memkit.terminal import ProgressLine, printable
from memkit.tuning import level_choice


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


WS_ORDER = ("hot", "l1", "l2", "l3", "dram")


def _trade_lines(results) -> list[str]:
    """What memkit gains in the caches and gives up beyond them on this CPU:
    size-distributions' speed-ups over glibc per working set."""
    ms = [m for r in results if r.name == "size-distributions" for m in r.measurements]
    by_fn = level_choice.level_scores(ms)
    levels = [lv for lv in WS_ORDER if all(lv in by_fn.get(fn, {}) for fn in level_choice.VARIANT_FUNCTIONS)]
    if not levels:
        return []
    fns = level_choice.VARIANT_FUNCTIONS
    out = [f"the trade on this CPU (memkit's speed-up over glibc on the production size distributions, "
           f"{' / '.join(fns)}):"]
    out.append("  " + "; ".join(f"{lv} " + " / ".join(f"{by_fn[fn][lv]:.2f}" for fn in fns) for lv in levels))
    gains = [(by_fn[fn][lv], fn, lv) for fn in fns for lv in levels if lv in ("hot", "l1", "l2")]
    costs = [(by_fn[fn][lv], fn, lv) for fn in fns for lv in levels if lv in ("l3", "dram") and by_fn[fn][lv] < 1]
    if gains:
        g = max(gains)
        out.append(f"  in the caches: up to {g[0]:.2f}x ({g[1]}, {g[2]})" +
                   (f"; beyond them it gives up up to {1 / min(costs)[0]:.2f}x ({min(costs)[1]}, {min(costs)[2]})"
                    if costs else "; beyond them it gives up nothing"))
    return out


def _summary_lines(results, tried=()) -> list[str]:
    """The summary: what memkit did to real programs (`memkit try`'s latest
    bottom line per command on this host, where there are any), memkit's
    losses, then what was fastest where, then each experiment's status and
    its other verdicts."""
    losses = [(r.name, v["text"]) for r in results for v in r.verdicts if v.get("kind") == "loss"]
    fastest = [(r.name, v["text"]) for r in results for v in r.verdicts if v.get("kind") == "fastest"]
    out = []
    if tried:
        out.append("real programs (memkit try on this host, the latest of each):")
        out += [f"  {text} (run {run_id})" for run_id, text in tried]
    out += _trade_lines(results)
    against = [(r.name, glibc.headline(r.measurements, ranking.memkit_series(r.verdicts),
                                       (r.fingerprint or {}).get(glibc.TUNABLES_KEY))) for r in results]
    if any(line for _, line in against):
        out.append("memkit against glibc as shipped and tuned:")
        out += [f"  {n}: {line}" for n, line in against if line]
    out.append("memkit's losses (slower than the best other method beyond the noise):")
    out += [f"  {n}: {t}" for n, t in losses] or ["  none"]
    out.append("fastest where:")
    out += [f"  {n}: {t}" for n, t in fastest] or ["  (no experiment said)"]
    out.append("experiments:")
    for r in results:
        out.append(f"  {r.name:<20} {r.status:<8} {r.seconds:7.1f} s")
        out += [f"      {v['text']}" for v in r.verdicts if v.get("kind") not in ("loss", "fastest")]
        if r.error:
            out.append(f"      error: {r.error}")
    return out


def _print_summary(results, run_id, where, host, busy, previous, tried=()):
    print()
    print(f"== summary: run {run_id} of {host} (stored in {where}) ==" if run_id is not None else
          f"== summary: the run of {host} (not stored: spilled to {where}) ==")
    for line in _summary_lines(results, tried):
        print(line)
    if busy:
        print(f"note: the machine was busy during this run ({busy}): expect more noise")
    # compare named only where its default would compare this run with one
    # (whole_program.previous_comparable): not with a run of another kind
    if run_id is None:
        return
    print(f"total {sum(r.seconds for r in results):.1f} s; `memkit report` writes the HTML report" +
          (f", `memkit compare` compares it with run {previous}, the latest that shares measurements with it"
           if previous else ""))


class _Terminated(KeyboardInterrupt):
    """SIGTERM during a run: handled as Ctrl-C is, what finished is kept."""
    exit_status = 128 + signal.SIGTERM


@contextlib.contextmanager
def _sigterm_interrupts():
    def stop(sig, _frame):
        raise _Terminated()
    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _keep_unfinished(store, how: str, total: int, fingerprint, watch) -> str:
    """Marks a stopped run incomplete (or spills it); says what was kept."""
    if fingerprint is None:
        fingerprint = next((r.fingerprint for r in store.results if r.fingerprint), None)
    done = len(store.results)
    if not done:
        return "nothing of this run was stored (no experiment had finished), earlier runs are intact"
    try:
        during = watch.result()
        run_id = store.finish(finished_at=_now(), fingerprint=fingerprint,
                              load={"steal_pct": during.steal_pct, "busy": "; ".join(during.reasons)},
                              incomplete=f"{how} after {done} of {total} experiments")
    except MemkitError as e:
        return f"the {done} finished experiment(s) could not be kept: {e}"
    if run_id is None:
        return store.spill_message()
    return (f"run {run_id} keeps the {done} of {total} experiments that finished, marked incomplete "
            f"(`memkit runs` shows it)")


def _checked_arguments(exps: list, experiment_args: dict[str, list[str]], quick: bool,
                       glibc_tunables: Optional[str]) -> dict[str, list[str]]:
    """Each experiment's key=value words: its own, else the suite's (none
    when quick), a recording's working sets, glibc tuned raced beside."""
    extra_args = {e.name: experiment_args.get(e.name) or ([] if quick else experiments.SUITE_ARGS.get(e.name, []))
                  for e in exps}
    if "size-distributions" in extra_args:   # a recording replays at its own working sets
        extra_args["size-distributions"] = recording.replay_arguments(extra_args["size-distributions"],
                                                                      os.environ.get("MEMKIT_DATA"))
    if glibc_tunables:
        extra_args = glibc.race_tuned([e.name for e in exps], {e.name: glibc.TUNABLES_ARG in e.keys for e in exps},
                                      extra_args, glibc_tunables)
    # A wrong argument (reps=0, budget=nan, a distribution file with an
    # alignment of 0, a peer= file that is no library) stops the run before
    # anything runs or is stored, as one line, not minutes into it as a
    # failed experiment stored in a run.  Every experiment is asked, even one
    # given no arguments ($MEMKIT_DATA may name bad files).
    for e in exps:
        experiments.check_arguments(e, quick, extra_args[e.name])
    return extra_args


def _fingerprint(exps: list, glibc_tunables: Optional[str]) -> Optional[dict]:
    """The machine as the user's environment sets it up (an experiment may
    re-execute itself with other tunables: its record is not the run's);
    None when it cannot be read, and a result's is taken later."""
    try:
        fingerprint = experiments.fingerprint(exps)
    except MemkitError:
        return None
    if glibc_tunables:   # what compare shows beside the machine
        fingerprint[glibc.TUNABLES_KEY] = glibc_tunables
    return fingerprint


def _run_each(exps: list, extra_args: dict[str, list[str]], quick: bool, store, progress: ProgressLine) -> None:
    """The experiments one after another, each's output passed through and
    stored as it finishes."""
    for i, e in enumerate(exps, 1):
        extra = extra_args[e.name]
        print(f"== {e.name} ({i}/{len(exps)}){' --quick' if quick else ''}"
              f"{' ' + ' '.join(extra) if extra else ''}: {e.description}", flush=True)

        def on_stderr(line, name=e.name):
            progress.clear()
            print(f"   {name}: {printable(line)}", file=sys.stderr, flush=True)

        r = experiments.run_experiment(e, quick, extra, on_stderr=on_stderr,
                                       on_progress=lambda p, tag=f"[{i}/{len(exps)}] ": progress.update(p, tag))
        progress.clear()
        sys.stdout.write(r.output)
        if r.error:
            print(f"memkit: error: {r.error}", file=sys.stderr, flush=True)
        print(f"-- {e.name}: {r.status}, {r.seconds:.1f} s, {len(r.measurements)} measurements",
              flush=True)
        store.add(r)


def _announce(exps, quick: bool, extra_args, fingerprint, db, host: str, whole_suite: bool):
    """Before anything runs: how long this will take (memkit.lab.estimate),
    and whether the machine is busy.  The load as it was."""
    guess = estimate.estimate(exps, quick, extra_args, fingerprint, estimate.history(db, host))
    print(guess.line(whole_suite=whole_suite), flush=True)
    if machine.current().note():
        print(f"memkit: note: {machine.current().note()}", file=sys.stderr, flush=True)
    now = load.settle()
    if now.busy:
        print(f"memkit: warning: the machine is busy ({now.busy}): results will be noisier; "
              f"the run records it", file=sys.stderr, flush=True)
    return now


def _run_all(exps, extra_args, quick: bool, store, fingerprint, watch) -> None:
    """Every experiment, each stored as it finishes; interrupted or stopped
    by an error, what finished is kept, marked incomplete, and said."""
    progress = ProgressLine()
    try:
        with _sigterm_interrupts():
            _run_each(exps, extra_args, quick, store, progress)
    except BaseException as stop:
        progress.clear()
        how = "interrupted" if isinstance(stop, KeyboardInterrupt) else "stopped by an error"
        kept = _keep_unfinished(store, how, len(exps), fingerprint, watch)
        if isinstance(stop, KeyboardInterrupt):
            raise type(stop)(kept) from None
        print(f"memkit: {kept}", file=sys.stderr, flush=True)
        raise


def run_suite(names: list[str], experiment_args: dict[str, list[str]], *, quick: bool, db_path,
              host: str, build: Optional[str], glibc_tunables: Optional[str] = None) -> int:
    """Runs the experiments named (all, in the suite's order, when none),
    found in the build directory `build` (None: the usual places), each with
    its key=value words from experiment_args, else the suite's (none when
    `quick`: each experiment's reduced grid); stores them in the database at
    db_path (a file or a URL) under `host` and prints the summary.  Returns
    the run's id.  Raises MemkitError when an experiment did not finish (the
    run keeps the others) or the run could only be spilled to a file."""
    exps = experiments.select(experiments.discover(experiments.find_bench_dir(build)), names)
    extra_args = _checked_arguments(exps, experiment_args, quick, glibc_tunables)
    # Open (and create) the database before spending minutes on experiments:
    # an unusable path fails now.
    with Database(db_path, create=True) as db:
        fingerprint = _fingerprint(exps, glibc_tunables)
        now = _announce(exps, quick, extra_args, fingerprint, db, host, whole_suite=not names)
        watch = load.Watch()
        # Each experiment is stored as it finishes (a spill file if the
        # database stops taking them): an interrupted run keeps what finished.
        store = spill.RunStore(db, started_at=_now(), quick=quick, fingerprint=fingerprint,
                               hostname=host, command=shlex.join(map(safe_url, sys.argv)))
        results = store.results
        _run_all(exps, extra_args, quick, store, fingerprint, watch)
        if fingerprint is None:
            fingerprint = next((r.fingerprint for r in results if r.fingerprint), None)
        during = watch.result()
        busy = "; ".join(dict.fromkeys(now.reasons + during.reasons))
        run_id = store.finish(finished_at=_now(), fingerprint=fingerprint,
                              load={"load_avg": now.load_avg, "steal_pct": during.steal_pct, "busy": busy})
        if run_id is None:
            _print_summary(results, None, store.spilled, host, busy, None)
            raise MemkitError(store.spill_message())
        runs = db.runs()
        this = next(r for r in runs if r["id"] == run_id)
        previous = (whole_program.previous_comparable(db, runs, this) or {}).get("id")
        tried = whole_program.latest_bottom_lines(db, host)
    _print_summary(results, run_id, db.path, host, busy, previous, tried)
    failed = [r for r in results if r.status != "ok"]
    if failed:
        raise MemkitError(f"{len(failed)} experiment(s) did not finish: " +
                          "; ".join(r.error for r in failed) + f" (run {run_id} keeps the rest)")
    return run_id
