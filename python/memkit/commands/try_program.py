# SPDX-License-Identifier: Apache-2.0
"""memkit try: will memkit make my program faster?  The program itself, run
as a whole process without and with the preload library, in interleaved
pairs, its outputs compared; one bottom line, and the run stored.

The runs, the output check, the statistics and what is stored are
memkit.programs.whole_program's; this is the command: its options, the loop that
adds pairs, progress and the printed summary."""

from __future__ import annotations

import datetime
import errno
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from memkit.commands._common import add_build_option, add_db_option, add_host_option, db_path, given, host_name
from memkit.errors import MemkitError
from memkit.judging import stats
from memkit.judging.judge import TRY_TUNED_CLOSES_MOST
from memkit.lab import experiments, glibc, load
from memkit.programs import recording
from memkit.programs import whole_program as wp
from memkit.programs.preload import PRELOAD_NAME, elf_is_static, find_preload
from memkit.results.result import Result
from memkit.store.backends import safe_url
from memkit.store.db import Database
from memkit.tuning.evidence import unmeasured_note

NAME = "try"
HELP = "will memkit make my program faster? run it with and without the preload library, paired, and say"
DESCRIPTION = f"""\
Runs PROGRAM ARGS as a whole process without and with memkit's preload
library (LD_PRELOAD={PRELOAD_NAME}) and says whether memkit makes it
faster.

With --glibc-tunables SPEC (or @FILE, a file holding the line, as `memkit
tune --glibc` writes it) it also times the program without memkit and with
GLIBC_TUNABLES=SPEC, "glibc tuned": three ways, and the bottom line says
which to deploy (docs/judging.md).  Only those runs get SPEC: memkit's runs
are timed over glibc as shipped.

It runs the program 2N+2 times (3N+3 with --profile or --glibc-tunables,
4N+4 with both): one untimed warm-up of each configuration, then N pairs,
one run of each configuration per pair, the first of them rotating from pair
to pair.  N grows until every ~95% interval of a median ratio lies within
+-{100 * wp.PRECISION:g}% of it, --budget is spent or --runs pairs are done; N
is at least {wp.MIN_PAIRS} (the fewest that give a 95% interval), unless --runs says
fewer.

Every run happens in the current directory, with your environment (with
memkit, your MEMKIT_TUNABLES and profile apply as they would): anything the
program writes to files it writes every time, so it must be safe to run
repeatedly.  Its standard input is --stdin FILE, read afresh by every run,
or else /dev/null.  The standard output of every run goes to a temporary
file ($TMPDIR) and is compared byte for byte, with the exit status, with the
first run's (the warm-up without memkit); a difference is reported with its
first differing byte and stored, never hidden.  That first run's standard
output is shown once (not with --no-output), and so is its standard error.

Progress goes to standard error (not with --quiet); each configuration's
median times, then one line, last, to standard output:
  PROGRAM: 1.26x faster with memkit (1.17-1.46, 12 pairs)
  PROGRAM: no difference beyond the noise (0.98-1.02, 20 pairs)
  PROGRAM: 1.05x slower with memkit (1.03-1.08, 20 pairs)
(ratio = time without / time with memkit, per pair).  Three ways:
  PROGRAM: 1.50x faster with memkit (1.45-1.56, 12 pairs); glibc tuned:
  1.46x faster (1.40-1.52); memkit against glibc tuned: no difference beyond
  the noise (0.99-1.05); deploy glibc tuned: the GLIBC_TUNABLES line, no
  preload (it closes 95% of memkit's lead)
Which to deploy: memkit when it is faster than glibc as shipped and than
glibc tuned (or when glibc tuned gains nothing: "not shown faster than glibc
tuned"); else glibc tuned when it is faster than glibc as shipped; else
glibc as shipped.  A configuration that changed the output never is.  When
glibc tuned saves at least {100 * TRY_TUNED_CLOSES_MOST:g}% of the time memkit saves, the line says
so.  Without --glibc-tunables, where glibc's own thresholds disagree with
this machine (`memkit system-check`), the bottom line ends with the setting
to try.  The run is stored in the database like any other: `memkit runs`,
`compare`, `report` and `fleet` show it.

Exit status: 0 when every run's output and exit status agreed (whatever the
timing says); {wp.OUTPUTS_DIFFER} when any differed; {wp.ProgramNotStarted.exit_status} when the program could not be
started; 1 for memkit's own errors (no preload library, the database); 130
when interrupted (nothing is stored)."""


def add_arguments(p):
    p.add_argument("--runs", type=int, metavar="N",
                   help=f"at most N pairs (default: no limit; fewer than {wp.MIN_PAIRS} give no interval)")
    p.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
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


@dataclass
class Config:
    series: str
    env: dict
    params: dict
    walls: list = field(default_factory=list)
    cpus: list = field(default_factory=list)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _readable(path: str, what: str) -> Path:
    p = Path(path)
    if not p.is_file() or not os.access(p, os.R_OK):
        raise MemkitError(f"{what} {path}: not a readable file")
    return p.resolve()


def _configs(argv: list[str], so: Path, profile, stdin, glibc_tunables: str = "") -> list[Config]:
    env = dict(os.environ)
    if any(Path(x).name == PRELOAD_NAME for x in env.get("LD_PRELOAD", "").replace(":", " ").split()):
        raise MemkitError(f"LD_PRELOAD already holds {PRELOAD_NAME}: the runs without memkit would have it "
                          "too; unset it for `memkit try`")
    if glibc_tunables and "GLIBC_TUNABLES" in env:
        raise MemkitError(f"GLIBC_TUNABLES is already set ({env['GLIBC_TUNABLES']}): the runs of glibc as shipped "
                          "would have it too; unset it for `memkit try --glibc-tunables`")
    params = {"program": wp.program_name(argv), "argv": argv}
    if stdin:
        params["stdin"] = str(stdin)
    with_env = dict(env, LD_PRELOAD=" ".join(filter(None, [str(so), env.get("LD_PRELOAD", "")])))
    configs = [Config(wp.WITHOUT, env, params), Config(wp.WITH, with_env, params)]
    if profile:
        configs.append(Config(wp.WITH_PROFILE, dict(with_env, MEMKIT_PROFILE=str(profile)),
                              dict(params, profile=str(profile))))
    if glibc_tunables:
        configs.append(Config(wp.GLIBC_TUNED, dict(env, GLIBC_TUNABLES=glibc_tunables),
                              dict(params, glibc_tunables=glibc_tunables)))
    return configs


def _glibc_tuned_note(shipped_env: dict, tuned_env: dict) -> str:
    """glibc's thresholds under the setting, beside those as shipped: glibc
    ignores an unknown name or a value beyond its bounds without a word,
    and this is where that shows."""
    shipped, tuned = glibc.read(env=shipped_env), glibc.read(env=tuned_env)
    if not isinstance(shipped, dict) or not isinstance(tuned, dict):
        return ""
    if shipped == tuned:
        return (f"glibc's thresholds are the same under GLIBC_TUNABLES={tuned_env['GLIBC_TUNABLES']} "
                f"({glibc.thresholds_text(tuned)}): glibc ignored it (an unknown name, a value beyond its bounds) "
                "or it sets something else")
    return f"glibc tuned uses {glibc.thresholds_text(tuned)} (as shipped: {glibc.thresholds_text(shipped)})"


def _check_runnable(program: str):
    """A program that cannot be started fails before anything else happens
    (the runs would fail at the first one; this says so without the wait)."""
    if shutil.which(program) is None:
        exists = os.path.exists(program) if "/" in program else False
        raise wp.ProgramNotStarted(f"cannot run {program}: "
                                   f"{os.strerror(errno.EACCES if exists else errno.ENOENT)}")


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


def _pass_through(path: Path, stream):
    stream.flush()
    with open(path, "rb") as f:
        shutil.copyfileobj(f, stream.buffer)
    stream.buffer.flush()


def _estimate_text(e: wp.Estimate) -> str:
    if not e.has_interval:
        return f"{e.median:.3f}x (an interval from {wp.MIN_PAIRS} pairs)"
    return f"{e.median:.3f}x ({e.low:.3f}-{e.high:.3f})"


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


class Trial:
    """One `memkit try`: the warm-ups, the pairs until a stop, and what was
    seen (times per configuration, the output check, notes)."""

    def __init__(self, argv, configs, stdin, tmp: Path, say):
        self.argv, self.configs, self.stdin, self.say = argv, configs, stdin, say
        self.base, self.compared = configs[0], configs[1:]
        self.reference, self.out = tmp / "reference.out", tmp / "run.out"
        self.tmp = tmp
        self.notes: list[str] = []
        self.check = None
        self.first = None
        self.pairs, self.stopped = 0, ""

    def _run(self, c: Config, what: str, err: Path) -> wp.Run:
        r = wp.run_once(self.argv, c.env, self.stdin, self.out, err)
        diff = self.check.check(c.series, what, self.out, r.status)
        if diff:
            self.say(f"OUTPUT DIFFERS: {diff}", loud=True)
        return r

    def warm_up(self, show_output: bool) -> float:
        """One untimed run of each configuration; the first (without memkit)
        is the reference every later run's output is compared with, and the
        one whose output is shown.  Returns how long the runs took: a pair's."""
        self.say(f"warm-up: one run of each configuration ({', '.join(c.series for c in self.configs)})")
        errs = [self.tmp / f"warm-up-{i}.err" for i in range(len(self.configs))]
        self.first = wp.run_once(self.argv, self.base.env, self.stdin, self.reference, errs[0])
        if show_output:
            _pass_through(self.reference, sys.stdout)
        _pass_through(errs[0], sys.stderr)
        self.check = wp.OutputCheck(self.reference, self.first.status)
        seconds = self.first.wall
        for c, err in zip(self.compared, errs[1:]):
            seconds += self._run(c, f"the warm-up run {c.series}", err).wall
            # Not an output difference: the library's own messages (a bad
            # tunable, an ignored profile) land here, and they are worth a note.
            at = wp.first_difference(errs[0], err)
            if at is not None:
                self.notes.append(f"the program's standard error differs {c.series} (first runs; not compared "
                                  f"further): {wp.excerpt(err, at)}")
                self.say(f"note: {self.notes[-1]}")
        return seconds

    def estimates(self) -> dict:
        """Each configuration's speed-up over the base; after a three-way
        try also memkit's over glibc tuned, from the same pairs."""
        out = {c.series: wp.estimate(wp.paired_ratios(self.base.walls, c.walls)) for c in self.compared}
        by_series = {c.series: c for c in self.configs}
        if wp.GLIBC_TUNED in by_series:
            out[wp.MEMKIT_OVER_TUNED] = wp.estimate(wp.paired_ratios(by_series[wp.GLIBC_TUNED].walls,
                                                                     by_series[wp.WITH].walls))
        return out

    def run_pairs(self, t0: float, budget: float, max_pairs):
        """Pairs until --runs, else (from MIN_PAIRS on) until every interval is
        within PRECISION or the next pair would end past the budget."""
        n = len(self.configs)
        while not self.stopped:
            # The first of a pair rotates: drift within a pair favours no one.
            order = self.configs[self.pairs % n:] + self.configs[:self.pairs % n]
            start = time.monotonic()
            for c in order:
                r = self._run(c, f"pair {self.pairs + 1} {c.series}", self.tmp / "run.err")
                c.walls.append(r.wall)
                c.cpus.append(r.cpu)
            self.pairs += 1
            seconds = time.monotonic() - start
            ests = self.estimates()
            self.say(f"pair {self.pairs}: " + ", ".join(f"{c.walls[-1]:.3f} s {c.series}" for c in self.configs)
                     + "; so far " + ", ".join(f"{series} {_estimate_text(e)}" for series, e in ests.items()))
            enough = self.pairs >= wp.MIN_PAIRS
            if max_pairs is not None and self.pairs >= max_pairs:
                self.stopped = f"--runs {max_pairs} reached"
            elif enough and all(e.precise() for e in ests.values()):
                self.stopped = f"the interval is within +-{100 * wp.PRECISION:g}% of the median"
            elif enough and time.monotonic() - t0 + seconds > budget:
                self.stopped = f"the budget of {budget:g} s is spent"

    def summary(self, seconds: float) -> list[str]:
        """The lines before the bottom line: how it went, each configuration's
        median times, the outputs, the notes."""
        cpu = {c.series: wp.estimate(ratios) for c in self.compared
               if (ratios := wp.paired_ratios(self.base.cpus, c.cpus)) is not None}
        k = self.pairs
        lines = [f"memkit try: {shlex.join(self.argv)} in {os.getcwd()}: {k} pair{'' if k == 1 else 's'} in "
                 f"{seconds:.1f} s (stopped: {self.stopped}); ratio = time {wp.WITHOUT} / time with, per pair"]
        for c in self.configs:
            lines.append(f"  {c.series:<20} wall median {statistics.median(c.walls):.4g} s "
                         f"({min(c.walls):.4g}-{max(c.walls):.4g}), CPU (user+sys) median "
                         f"{statistics.median(c.cpus):.4g} s"
                         + (f"; CPU speed-up {_estimate_text(cpu[c.series])}" if c.series in cpu else ""))
        if self.check.differs:
            lines += [f"  OUTPUT DIFFERS: {text}" for text in self.check.first.values()]
        else:
            lines.append(f"  outputs: standard output ({self.reference.stat().st_size:,} bytes) and exit status "
                         f"identical in all {sum(self.check.runs.values()) + 1} runs "
                         f"({experiments.describe_exit(self.first.status)})")
        return lines + [f"  note: {n}" for n in self.all_notes()]

    def all_notes(self) -> list[str]:
        if self.first.status != 0 and not self.check.differs:
            return self.notes + [f"the program ended with {experiments.describe_exit(self.first.status)} in every run: "
                                 "check that it ran as intended"]
        return self.notes

    def verdicts(self, bottom_line: str) -> list[dict]:
        """The bottom line first (memkit.programs.whole_program.stored_bottom_line
        reads it there): a loss when memkit is slower (than glibc as shipped, or
        than glibc tuned) or changed the output; glibc tuned's own change is a note."""
        check = self.check
        changed_output = check.reproducible and bool({wp.WITH, wp.WITH_PROFILE} & set(check.differing))
        ests = self.estimates()
        slower = any(ests[s].verdict == "slower" for s in (wp.WITH, wp.MEMKIT_OVER_TUNED) if s in ests)
        out = [{"text": bottom_line, "kind": "loss" if slower or changed_output else "note"}]
        out += [{"text": f"OUTPUT DIFFERS: {t}", "kind": "loss" if changed_output else "note"}
                for t in check.first.values()]
        return out + [{"text": n, "kind": "note"} for n in self.all_notes()]

    def measurements(self) -> list[dict]:
        out = []
        for c in self.configs:
            for metric, values, base_values in (("wall_s", c.walls, self.base.walls),
                                                ("cpu_s", c.cpus, self.base.cpus)):
                baseline = None if c is self.base else (self.base.series, self.base.params, base_values)
                out.append(wp.measurement(c.series, c.params, metric, "s", values, baseline))
        return out


def _program_argv(args) -> list[str]:
    """The program's command line, and the numbers that bound its pairs checked."""
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise MemkitError("no program to try (usage: memkit try [OPTIONS] -- PROGRAM [ARGS...])")
    if args.runs is not None and args.runs < 1:
        raise MemkitError("--runs takes at least 1 pair")
    if args.budget < 0:
        raise MemkitError("--budget takes a number of seconds, 0 or more")
    return argv


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


def _trial_result(argv: list[str], glibc_tuned: bool, seconds: float, fingerprint, trial: "Trial",
                  printed: list[str]) -> Result:
    """The trial as the runs database stores it; printed: the lines the user
    read, the bottom line last."""
    return Result(wp.EXPERIMENT, "", f"{shlex.join(argv)} (in {os.getcwd()}): without and with "
                  "memkit's preload library" + (", and glibc tuned" if glibc_tuned else "")
                  + ", interleaved pairs", "ok", seconds, argv,
                  fingerprint=fingerprint, measurements=trial.measurements(),
                  verdicts=trial.verdicts(printed[-1]), output="\n".join(printed) + "\n")


def main(args) -> int:
    argv = _program_argv(args)
    # A setting glibc would ignore without a word fails before anything runs.
    tunables = glibc.tunables_argument(args.glibc_tunables) if args.glibc_tunables else ""
    so = find_preload(args.preload, args.build)
    _check_runnable(argv[0])
    if elf_is_static(shutil.which(argv[0]) or argv[0]):
        # Both runs would time the same code: no answer, however many pairs.
        raise MemkitError(f"{argv[0]} is statically linked: the preload cannot reach a statically linked "
                          f"program (there is no dynamic loader to preload memkit into); nothing was timed")
    profile = _readable(args.profile, "the profile") if args.profile else None
    rec_dir = _recording_dir(args, profile)
    stdin = _readable(args.stdin, "--stdin") if args.stdin else None
    configs = _configs(argv, so, profile, stdin, tunables)

    def say(text: str, loud: bool = False):
        if loud or not args.quiet:
            print(f"memkit try: {text}", file=sys.stderr, flush=True)

    host = host_name(args)
    # The database before the first run: an unusable path fails now, not
    # after minutes of runs.
    with Database(db_path(args), create=True) as db:
        fingerprint = _machine_fingerprint(args.build)
        note = None if profile else unmeasured_note(fingerprint or {})
        if note:
            say(note, loud=True)
        now = load.sample(0.3)
        if now.busy:
            say(f"warning: the machine is busy ({now.busy}): the pairs will be noisier; the run records it",
                loud=True)
        stats.load()   # about a second: before the clock starts, not between two pairs
        watch = load.Watch()
        watch.start_load = now.load_avg   # one load average per run: the one the warning named
        started, t0 = _now(), time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memkit-try-") as tmp:
            trial = Trial(argv, configs, stdin, Path(tmp), say)
            if tunables:
                glibc_note = _glibc_tuned_note(configs[0].env, configs[-1].env)
                if glibc_note:
                    trial.notes.append(glibc_note)
                    say(f"note: {glibc_note}")
            _say_pairs_plan(say, trial.warm_up(show_output=not args.no_output), args)
            trial.run_pairs(t0, args.budget, args.runs)
            seconds = time.monotonic() - t0
            lines = trial.summary(seconds)
        check = trial.check
        changed = frozenset(check.differing) if check.reproducible else frozenset()
        line = wp.bottom_line(wp.program_name(argv), trial.estimates(), check.problem(),
                              profile.name if profile else "", changed,
                              "" if tunables else wp.glibc_suggestion(fingerprint))
        # The answer is printed before it is stored: a database that fails
        # now does not take the minutes of runs with it.
        if rec_dir:
            lines.append(_against_prediction(db, rec_dir, trial.estimates().get(wp.WITH)))
        for text in lines + [line]:
            print(text)
        sys.stdout.flush()
        result = _trial_result(argv, bool(tunables), seconds, fingerprint, trial, lines + [line])
        during = watch.result()
        busy = "; ".join(dict.fromkeys(now.reasons + during.reasons))
        run_id = db.store_run(started_at=started, finished_at=_now(), quick=False, fingerprint=fingerprint,
                              results=[result], hostname=host, command=shlex.join(map(safe_url, sys.argv)),
                              load={"load_avg": now.load_avg, "steal_pct": during.steal_pct, "busy": busy})
        say(f"stored as run {run_id} in {db.path}" + (f" (busy machine: {busy})" if busy else ""))
    return wp.OUTPUTS_DIFFER if trial.check.differs else 0
