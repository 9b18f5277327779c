# SPDX-License-Identifier: Apache-2.0
"""A `memkit try`: the configurations a program runs under (without memkit,
with it, with a profile, glibc tuned), the trial that warms them up and
times them in rotating pairs until a stop, checking every output, and its
report, fixed when the trial ends (TrialReport), rendered as text and as
the stored result.  The runs, the output check and the statistics are
whole_program's; the command (memkit.commands.try_) parses, runs a Trial,
prints its report and stores it."""

from __future__ import annotations

import os
import shlex
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from memkit.errors import MemkitError
from memkit.lab import experiments, glibc, machine
from memkit.programs import whole_program as wp
from memkit.programs.preload import PRELOAD_NAME
from memkit.results.result import Result


@dataclass
class Config:
    series: str
    env: dict
    params: dict
    walls: list = field(default_factory=list)
    cpus: list = field(default_factory=list)



def configs(argv: list[str], so: Path, profile, stdin, glibc_tunables: str = "") -> list[Config]:
    env = dict(os.environ)
    if any(Path(x).name == PRELOAD_NAME for x in env.get("LD_PRELOAD", "").replace(":", " ").split()):
        raise MemkitError(f"LD_PRELOAD already holds {PRELOAD_NAME}: the runs without memkit would have it "
                          "too; unset it for `memkit try`")
    if glibc_tunables:
        glibc.check_shipped_environment(env, "memkit try")
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


def glibc_tuned_note(shipped_env: dict, tuned_env: dict) -> str:
    """glibc's thresholds under the setting, beside those as shipped: glibc
    ignores an unknown name or a value beyond its bounds without a word,
    and this is where that shows."""
    m = machine.current()
    shipped, tuned = m.glibc_view(env=shipped_env), m.glibc_view(env=tuned_env)
    if not isinstance(shipped, dict) or not isinstance(tuned, dict):
        return ""
    if shipped == tuned:
        return (f"glibc's thresholds are the same under GLIBC_TUNABLES={tuned_env['GLIBC_TUNABLES']} "
                f"({glibc.thresholds_text(tuned)}): glibc ignored it (an unknown name, a value beyond its bounds) "
                "or it sets something else")
    return f"glibc tuned uses {glibc.thresholds_text(tuned)} (as shipped: {glibc.thresholds_text(shipped)})"


def _pass_through(path: Path, stream):
    stream.flush()
    with open(path, "rb") as f:
        shutil.copyfileobj(f, stream.buffer)
    stream.buffer.flush()


def estimate_text(e: wp.Estimate) -> str:
    if not e.has_interval:
        return f"{e.median:.3f}x (an interval from {wp.MIN_PAIRS} pairs)"
    return f"{e.median:.3f}x ({e.low:.3f}-{e.high:.3f})"


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
                     + "; so far " + ", ".join(f"{series} {estimate_text(e)}" for series, e in ests.items()))
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
                         + (f"; CPU speed-up {estimate_text(cpu[c.series])}" if c.series in cpu else ""))
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

    def report(self, seconds: float, profile_name: str, glibc_tuned: bool, fingerprint,
               extra: Sequence[str] = ()) -> "TrialReport":
        """The finished try's report, taken once from what the runs gave: its
        summary, the lines extra adds (a recording's prediction), and the
        bottom line, which says which to deploy (wp.bottom_line)."""
        check = self.check
        changed = frozenset(check.differing) if check.reproducible else frozenset()
        line = wp.bottom_line(wp.program_name(self.argv), self.estimates(), check.problem(), profile_name, changed,
                              "" if glibc_tuned else wp.glibc_suggestion(fingerprint))
        return TrialReport(argv=tuple(self.argv), cwd=os.getcwd(), seconds=seconds, glibc_tuned=glibc_tuned,
                           lines=tuple(self.summary(seconds)) + tuple(extra), bottom_line=line,
                           measurements=tuple(self.measurements()), verdicts=tuple(self.verdicts(line)))


@dataclass(frozen=True)
class TrialReport:
    """What a finished try says, fixed when it finished: the lines before the
    bottom line (how it went, each configuration's times, the outputs, the
    notes, the prediction), the bottom line, and what the runs database
    keeps; rendered as text (format) and as the stored Result (result)."""
    argv: tuple
    cwd: str
    seconds: float
    glibc_tuned: bool
    lines: tuple
    bottom_line: str
    measurements: tuple
    verdicts: tuple

    def format(self) -> str:
        return "\n".join(self.lines + (self.bottom_line,))

    def result(self, fingerprint) -> Result:
        """The trial as the runs database stores it, with the lines the user
        read, the bottom line last."""
        argv = list(self.argv)
        return Result(wp.EXPERIMENT, "", f"{shlex.join(argv)} (in {self.cwd}): without and with "
                      "memkit's preload library" + (", and glibc tuned" if self.glibc_tuned else "")
                      + ", interleaved pairs", "ok", self.seconds, argv,
                      fingerprint=fingerprint, measurements=list(self.measurements),
                      verdicts=list(self.verdicts), output=self.format() + "\n")
