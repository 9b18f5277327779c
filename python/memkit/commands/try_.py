# SPDX-License-Identifier: Apache-2.0
"""memkit try: will memkit make my program faster?  The program itself, run
as a whole process without and with the preload library, in interleaved
pairs, its outputs compared; one bottom line, and the run stored.

The runs, the output check and the statistics are
memkit.programs.whole_program's, the trial (its pairs until a stop) and its
report (fixed when it ends), memkit.programs.trial's; this is the command:
its options, the checks before anything runs, progress, printing the report
and storing it."""

from __future__ import annotations

import datetime
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from memkit.commands._common import (add_build_option, add_db_option, add_host_option, at_least, db_path, given,
                                     host_name, seconds)
from memkit.errors import MemkitError, UsageError
from memkit.judging import stats
from memkit.lab import experiments, glibc, load, machine
from memkit.programs import recording, trial
from memkit.programs import whole_program as wp
from memkit.programs.preload import PRELOAD_NAME, elf_is_static, find_preload
from memkit.store import spill
from memkit.store.backends import safe_url
from memkit.store.db import Database
from memkit.tuning import tune_experiment
from memkit.tuning.evidence import unmeasured_note

NAME = "try"
HELP = "will memkit make my program faster? run it with and without the preload library, paired, and say"
DESCRIPTION = f"""\
Runs PROGRAM ARGS as a whole process without and with memkit's preload
library (LD_PRELOAD={PRELOAD_NAME}), in interleaved pairs, and says in one
line, last on standard output, whether memkit makes it faster:
  PROGRAM: 1.26x faster with memkit (1.17-1.46, 12 pairs)
(ratio = time without / time with memkit, per pair, a ~95% interval).
--glibc-tunables SPEC (or @FILE, as `memkit tune --glibc` writes it) also
times glibc tuned, and the line says which of the three to deploy.

It runs the program 2N+2 times (3N+3 with --profile or --glibc-tunables,
4N+4 with both): a warm-up of each configuration, then N pairs, N growing
until the interval is within +-{100 * wp.PRECISION:g}%, --budget is spent or --runs pairs are
done (at least {wp.MIN_PAIRS} unless --runs says fewer).  Every run happens in the
current directory with your environment, so the program must be safe to run
repeatedly; its standard input is --stdin FILE or /dev/null.  Each run's
output and exit status are compared with the first's; a difference is
reported, never hidden.

Exit status: 0 when every run agreed (whatever the timing says),
{wp.OUTPUTS_DIFFER} when one differed, {wp.ProgramNotStarted.NOT_FOUND} or {wp.ProgramNotStarted.NOT_EXECUTABLE} when the program cannot be started, 2 for a usage
error, 1 for input memkit refuses and its own errors (a measurement the
database cannot take is kept in a spill file).  The whole story: the
bottom line's words, which to deploy, what is stored: docs/try-record-tune.md."""


def add_arguments(p):
    p.add_argument("--runs", type=at_least(1, "pair"), metavar="N",
                   help=f"at most N pairs (default: no limit; fewer than {wp.MIN_PAIRS} give no interval)")
    p.add_argument("--budget", type=seconds, default=60.0, metavar="SECONDS",
                   help=f"once {wp.MIN_PAIRS} pairs are done, start no pair that would end past this many "
                        "seconds from the start (default: 60)")
    p.add_argument("--profile", metavar="P", type=given("a profile"),
                   help="also time the preload with MEMKIT_PROFILE=P (a profile `memkit tune` wrote)")
    p.add_argument("--glibc-tunables", metavar="SPEC|@FILE", type=given("a GLIBC_TUNABLES setting"),
                   help="also time the program without memkit and with GLIBC_TUNABLES=SPEC (glibc.* names "
                        "only, e.g. glibc.cpu.x86_rep_movsb_threshold=23170), and say which of the three to "
                        "deploy; @FILE reads SPEC (or a GLIBC_TUNABLES=SPEC line) from FILE")
    p.add_argument("--recording", metavar="DIR", type=given("a directory"),
                   help="a `memkit record --predict` directory of this program: say whether what is measured "
                        "agrees with its prediction (the replay stored in the database), and if not, why not "
                        "(default: the directory of --profile, when that is a recording)")
    p.add_argument("--stdin", metavar="FILE", type=given("a file"),
                   help="the standard input of every run (default: /dev/null)")
    p.add_argument("--no-output", action="store_true", help="do not show the program's standard output")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")
    p.add_argument("--preload", metavar="SO", type=given("a library"),
                   help=f"the preload library (default: $MEMKIT_PRELOAD, else {PRELOAD_NAME} of the build)")
    add_build_option(p)
    add_db_option(p)
    add_host_option(p)
    p.add_argument("program", nargs="...", metavar="-- PROGRAM [ARGS...]", help="the program to run")


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _readable(path: str, what: str) -> Path:
    p = Path(path)
    if not p.is_file() or not os.access(p, os.R_OK):
        raise MemkitError(f"{what} {path}: not a readable file")
    return p.resolve()


def _machine_fingerprint(build_option):
    """The fingerprint any of the lab's experiments reports (None without a build)."""
    try:
        bench = experiments.find_bench_dir(build_option)
    except MemkitError:
        return None
    exe = next((p for p in sorted(bench.glob(experiments.PREFIX + "*")) if os.access(p, os.X_OK)), None)
    if exe is None:
        return None
    try:
        return experiments.fingerprint([experiments.Experiment(exe.name[len(experiments.PREFIX):], "", "", exe)])
    except MemkitError:
        return None


def _against_prediction(db, rec_dir: Path, measured) -> str:
    """One line: the recording's prediction (from its latest replay in the
    database) against the speed-up measured with memkit's defaults."""
    replay = recording.latest_replay(db, rec_dir)
    if not replay:
        return (f"prediction ({rec_dir}): none in this database (memkit record --predict, or memkit run "
                f"size-distributions data={rec_dir})")
    if measured is None or not measured.has_interval:
        return f"prediction ({rec_dir}): not compared (the measurement has no interval)"
    pred = recording.predict(recording.load_summary(rec_dir), replay)
    return f"prediction ({rec_dir}): " + pred.against(measured.median, (measured.low, measured.high))


def _program_argv(args) -> list[str]:
    """The program's command line."""
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no program to try (usage: memkit try [OPTIONS] -- PROGRAM [ARGS...])")
    return argv


def _checked_profile(given_path: str, build_option) -> Path:
    """The profile, refused when libmemkit would not load it: it would run
    its defaults and the runs be labelled with the profile.  The library
    itself is asked, through the build's timing program (installed beside
    the experiments); without one the file is taken as given."""
    path = _readable(given_path, "the profile")
    try:
        timer = tune_experiment.find_program(experiments.find_bench_dir(build_option))
    except MemkitError:
        return path
    got = tune_experiment.loaded(timer, MEMKIT_PROFILE=str(path))
    if got.profile != str(path):   # a warning alone (no cpu= line) still loads it
        raise MemkitError(f"the profile {given_path}: libmemkit would not load it "
                          f"({got.stderr.removeprefix('memkit: ') or 'it reports profile ' + repr(got.profile)}), "
                          f"and the runs with it would run its defaults")
    return path


def _recording_dir(args, profile: Optional[Path]) -> Optional[Path]:
    """The recording whose prediction the answer is set against, if any."""
    if args.recording:
        rec_dir = Path(args.recording)
        if not recording.is_recording(rec_dir):
            raise MemkitError(f"--recording {rec_dir}: not a `memkit record` directory")
        return rec_dir
    # tune --for writes the profile into the recording
    return profile.parent if profile and recording.is_recording(profile.parent) else None


def _say_pairs_plan(say, pair_seconds: float, args) -> None:
    minimum = wp.MIN_PAIRS if args.runs is None else min(wp.MIN_PAIRS, args.runs)
    if minimum * pair_seconds > args.budget:
        say(f"a pair takes about {pair_seconds:.1f} s: the {minimum} pairs an interval needs take about "
            f"{minimum * pair_seconds:.0f} s, beyond the budget of {args.budget:g} s (--runs N for fewer)")
    else:
        say(f"a pair takes about {pair_seconds:.2f} s; pairs until the interval is within "
            f"+-{100 * wp.PRECISION:g}%, at most {args.budget:g} s"
            + (f" or {args.runs} pairs" if args.runs else ""))


@dataclass(frozen=True)
class Plan:
    """What a try runs, every part checked before anything runs."""
    argv: list[str]
    tunables: str               # the GLIBC_TUNABLES setting of glibc tuned, "" without
    profile: Optional[Path]
    recording: Optional[Path]   # whose prediction the answer is set against
    stdin: Optional[Path]
    configs: list               # trial.Config: without memkit first


def _prepare(args) -> Plan:
    """Everything checked before anything runs: the program (startable, not
    static), the setting, the files, the configurations."""
    argv = _program_argv(args)
    # A setting glibc would ignore without a word fails before anything runs.
    tunables = glibc.tunables_argument(args.glibc_tunables) if args.glibc_tunables else ""
    so = find_preload(args.preload, args.build)
    wp.check_runnable(argv[0])
    if elf_is_static(shutil.which(argv[0]) or argv[0]):
        # Both runs would time the same code: no answer, however many pairs.
        raise MemkitError(f"{argv[0]} is statically linked: the preload cannot reach a statically linked "
                          f"program (there is no dynamic loader to preload memkit into); nothing was timed")
    profile = _checked_profile(args.profile, args.build) if args.profile else None
    rec_dir = _recording_dir(args, profile)
    stdin = _readable(args.stdin, "--stdin") if args.stdin else None
    return Plan(argv, tunables, profile, rec_dir, stdin, trial.configs(argv, so, profile, stdin, tunables))


def _warn_before(say, fingerprint, profile):
    """What may spoil the figures, said before the clock starts: a CPU with no
    measured row, a busy machine.  The load as it was."""
    note = None if profile else unmeasured_note(fingerprint or {})
    if note:
        say(note, loud=True)
    if machine.current().note():
        say(f"note: {machine.current().note()}", loud=True)
    now = load.sample(0.3)
    if now.busy:
        say(f"warning: the machine is busy ({now.busy}): the pairs will be noisier; the run records it",
            loud=True)
    stats.load()   # about a second: before the clock starts, not between two pairs
    return now


def main(args) -> int:
    plan = _prepare(args)

    def say(text: str, loud: bool = False):
        if loud or not args.quiet:
            print(f"memkit try: {text}", file=sys.stderr, flush=True)

    host = host_name(args)
    # The database before the first run: an unusable path fails now, not
    # after minutes of runs.
    with Database(db_path(args), create=True) as db:
        fingerprint = _machine_fingerprint(args.build)
        now = _warn_before(say, fingerprint, plan.profile)
        watch = load.Watch()
        watch.start_load = now.load_avg   # one load average per run: the one the warning named
        started, t0 = _now(), time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memkit-try-") as tmp:
            t = trial.Trial(plan.argv, plan.configs, plan.stdin, Path(tmp), say)
            glibc_note = trial.glibc_tuned_note(plan.configs[0].env, plan.configs[-1].env) if plan.tunables else ""
            if glibc_note:
                t.notes.append(glibc_note)
                say(f"note: {glibc_note}")
            _say_pairs_plan(say, t.warm_up(show_output=not args.no_output), args)
            t.run_pairs(t0, args.budget, args.runs)
            seconds = time.monotonic() - t0
            prediction = ([_against_prediction(db, plan.recording, t.estimates().get(wp.WITH))]
                          if plan.recording else [])
            report = t.report(seconds, plan.profile.name if plan.profile else "", bool(plan.tunables), fingerprint,
                              prediction)
        # The answer is printed before it is stored: a database that fails
        # now does not take the minutes of runs with it.
        print(report.format())
        sys.stdout.flush()
        during = watch.result()
        busy = "; ".join(dict.fromkeys(now.reasons + during.reasons))
        run = dict(started_at=started, finished_at=_now(), quick=False, hostname=host,
                   command=shlex.join(map(safe_url, sys.argv)),
                   load={"load_avg": now.load_avg, "steal_pct": during.steal_pct, "busy": busy})
        results = [report.result(fingerprint)]
        try:
            run_id = db.store_run(fingerprint=fingerprint, results=results, **run)
        except MemkitError as e:   # the minutes of runs are kept, as `memkit run` keeps its experiments
            kept = spill.write_spill(db.path, run, fingerprint, results, None)
            raise MemkitError(spill.kept_message(str(e), kept, len(results), db.path)) from None
        say(f"stored as run {run_id} in {db.path}" + (f" (busy machine: {busy})" if busy else ""))
    return wp.OUTPUTS_DIFFER if t.check.differs else 0
