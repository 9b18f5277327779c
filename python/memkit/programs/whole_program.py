# SPDX-License-Identifier: Apache-2.0
"""A whole program timed with and without memkit (`memkit try`): the runs,
the check of their outputs, the statistics, the bottom line and the run as
the database stores it.

Configurations.  "without memkit" is the program as the user runs it (their
environment as it is); "with memkit" adds the preload library in front of
LD_PRELOAD (so the program's own tunables and a profile at the default path
apply, as they would for the user); with --profile P, "with memkit+profile"
also sets MEMKIT_PROFILE=P.  With --glibc-tunables SPEC, "glibc tuned" is
the program without memkit and with GLIBC_TUNABLES=SPEC: only its runs get
the setting, so memkit's figure is memkit's own over glibc as shipped, and
memkit's speed-up over glibc tuned is paired too, run for run
(MEMKIT_OVER_TUNED), for the bottom line's deploy rule (judging/deploy.py).

Pairs.  After one untimed warm-up run of each configuration, the program
runs in pairs: one run of each configuration, the first of them rotating
from pair to pair (A B, B A, ...; with three, A B C, B C A, C A B), so a
machine that speeds up or slows down during a pair favours no configuration.
A pair's ratio is the time without memkit divided by the time with it
(> 1: faster with memkit), the same speed-up the lab's records carry.

Statistics.  The median of the pairs' ratios and the distribution-free ~95%
confidence interval of that median from binomial order statistics
(memkit.judging.stats.median_interval, scipy.stats.quantile_test): it assumes nothing about the shape of the
noise, which on a shared machine has long tails.  It needs MIN_PAIRS pairs:
with 5 the widest interval, their whole range, holds the median only
1 - 2/2^5 = 93.8% of the time.  Pairs are added until the interval lies
within PRECISION of the median (or the budget or --runs ends it); stopping
when the interval happens to be narrow makes it slightly optimistic, which
is why there is a minimum and why the pairs and ratios are all stored.

The bottom line: faster when the interval lies above 1, slower when below,
else no difference beyond the noise (the interval holds 1).
"""

from __future__ import annotations

import errno
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError
from memkit.judging import deploy, stats
from memkit.judging.judge import TRY_CONFIDENCE as CONFIDENCE, TRY_MIN_PAIRS as MIN_PAIRS, TRY_PRECISION as PRECISION
from memkit.lab import glibc
from memkit.results import records
from memkit.lab.experiments import describe_exit

EXPERIMENT = "try"
WITHOUT = "without memkit"
WITH = "with memkit"
WITH_PROFILE = "with memkit+profile"
GLIBC_TUNED = "glibc tuned"
# Not a configuration: memkit's speed-up over glibc tuned, pair by pair.
MEMKIT_OVER_TUNED = "with memkit over glibc tuned"
# The output of two runs is compared this many bytes at a time, from files:
# a program may write gigabytes.
CHUNK = 1 << 20
EXCERPT = 24


# `memkit try`'s exit status when a run's output or exit status differed from
# the first run's (the timing is still reported and stored).
OUTPUTS_DIFFER = 3


class ProgramNotStarted(MemkitError):
    """The program could not be executed at all: the status a shell (and
    env, nice, timeout) ends with, 127 for no such program, 126 for one
    that cannot be executed; `try` and `record` both."""
    NOT_FOUND, NOT_EXECUTABLE = 127, 126

    def __init__(self, program: str, error: int):
        super().__init__(f"cannot run {program}: {os.strerror(error)}")
        self.exit_status = self.NOT_FOUND if error == errno.ENOENT else self.NOT_EXECUTABLE


def check_runnable(program: str) -> None:
    """A program that cannot be started fails before anything else happens
    (its runs would fail at the first one; this says so without the wait)."""
    if shutil.which(program) is None:
        exists = os.path.exists(program) if "/" in program else False
        raise ProgramNotStarted(program, errno.EACCES if exists else errno.ENOENT)


# ---- running ----

@dataclass
class Run:
    wall: float        # seconds from fork to the end of wait4
    cpu: float         # user + system CPU seconds of the program and the children it waited for
    status: int        # exit status, -SIG when killed by a signal


def run_once(argv: list[str], env: dict, stdin: Optional[Path], out: Path, err: Path) -> Run:
    """Runs the program once to its end, its standard output and error into
    the files `out` and `err`, its standard input from `stdin` (None:
    /dev/null).  Ctrl-C reaches the program through the terminal; memkit
    then kills it too and lets the interruption go on."""
    with open(stdin or os.devnull, "rb") as fin, open(out, "wb") as fout, open(err, "wb") as ferr:
        t0 = time.perf_counter()
        try:
            child = subprocess.Popen(argv, stdin=fin, stdout=fout, stderr=ferr, env=env)
        except OSError as e:
            raise ProgramNotStarted(argv[0], e.errno or errno.EACCES) from None
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            child.kill()
            child.wait()
            raise
        wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
    return Run(wall, usage.ru_utime + usage.ru_stime, child.returncode)


def first_difference(a: Path, b: Path) -> Optional[int]:
    """The offset of the first byte where two files differ (the shorter
    one's length where one is the start of the other), None if identical."""
    offset = 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            ca, cb = fa.read(CHUNK), fb.read(CHUNK)
            if ca != cb:
                n = min(len(ca), len(cb))
                return offset + next((i for i in range(n) if ca[i] != cb[i]), n)
            if not ca:
                return None
            offset += len(ca)


def excerpt(path: Path, offset: int) -> str:
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(EXCERPT)
    return repr(data) if data else "(end of output)"


@dataclass
class OutputCheck:
    """Every run's standard output and exit status against the first run's
    (the warm-up without memkit): which configurations differed, how often,
    and where first."""
    reference: Path
    status: int
    runs: dict = field(default_factory=dict)        # series -> runs checked
    differing: dict = field(default_factory=dict)   # series -> runs that differed
    first: dict = field(default_factory=dict)       # series -> what differed first, one line

    def check(self, series: str, what: str, out: Path, status: int) -> Optional[str]:
        """Checks one run; returns the line to report when it is the first
        difference of its configuration."""
        self.runs[series] = self.runs.get(series, 0) + 1
        offset = first_difference(self.reference, out)
        if offset is None and status == self.status:
            return None
        self.differing[series] = self.differing.get(series, 0) + 1
        if series in self.first:
            return None
        parts = []
        if offset is not None:
            parts.append(f"standard output differs at byte {offset:,} ({excerpt(out, offset)} where the "
                         f"first run without memkit has {excerpt(self.reference, offset)})")
        if status != self.status:
            parts.append(f"{describe_exit(status)} where the first run without memkit had "
                         f"{describe_exit(self.status)}")
        self.first[series] = f"{what}: " + "; ".join(parts)
        return self.first[series]

    @property
    def reproducible(self) -> bool:
        """The runs without memkit agree with each other."""
        return not self.differing.get(WITHOUT)

    @property
    def differs(self) -> bool:
        return bool(self.differing)

    def problem(self) -> Optional[str]:
        """The few words the bottom line starts with when outputs differed."""
        if not self.differs:
            return None
        if not self.reproducible:
            return ("OUTPUT DIFFERS from run to run even without memkit "
                    f"({self.differing[WITHOUT]} of {self.runs[WITHOUT]} runs), so memkit's cannot be checked")
        who = GLIBC_TUNED if set(self.differing) == {GLIBC_TUNED} else "memkit"
        return f"OUTPUT DIFFERS with {who} (" + ", ".join(
            f"{self.differing[s]} of {self.runs[s]} runs {s}" for s in self.differing) + ")"


# ---- statistics ----

@dataclass
class Estimate:
    """The median of paired speed-ups with its ~95% interval (nan without one)."""
    median: float
    low: float
    high: float
    pairs: int

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    @property
    def verdict(self) -> str:
        """"faster", "slower" or "noise" (the interval holds 1), or "too few"."""
        if not self.has_interval:
            return "too few"
        return "faster" if self.low > 1 else "slower" if self.high < 1 else "noise"

    def precise(self, within: float = PRECISION) -> bool:
        """The interval lies within +-within of the median."""
        return self.has_interval and self.high <= self.median * (1 + within) and \
            self.low >= self.median / (1 + within)


def paired_ratios(base: list[float], values: list[float]) -> Optional[list[float]]:
    """Each pair's speed-up, base / value (> 1: the configuration is faster
    than the base), or None where a time is 0 (a CPU time below the
    kernel's accounting of a tiny program): no ratio can be taken."""
    if not values or min(base) <= 0 or min(values) <= 0:
        return None
    return [b / v for b, v in zip(base, values)]


def estimate(ratios: list[float]) -> Estimate:
    median = statistics.median(ratios)
    if len(ratios) < MIN_PAIRS:
        return Estimate(median, math.nan, math.nan, len(ratios))
    return Estimate(median, *stats.median_interval(ratios, CONFIDENCE), len(ratios))


def _digits(*xs: float) -> int:
    """Two decimals, three where two would print a number off 1 as 1.00."""
    return 3 if any(x != 1 and round(x, 2) == 1 for x in xs) else 2


def speedup_text(e: Estimate, with_what: str = " with memkit", pairs: bool = True) -> str:
    """"1.26x faster with memkit (1.17-1.46, 12 pairs)": the interval in the
    words' own direction (a slow-down as how many times slower); the count
    of pairs only where `pairs`."""
    n = f", {e.pairs} pairs" if pairs else ""
    if e.verdict == "too few":
        return (f"{e.median:.{_digits(e.median)}f}x the speed{with_what}, too few pairs to tell "
                f"({e.pairs}; an interval needs {MIN_PAIRS})")
    if e.verdict == "noise":
        d = _digits(e.low, e.high)
        return f"no difference beyond the noise ({e.low:.{d}f}-{e.high:.{d}f}{n})"
    m, lo, hi = (e.median, e.low, e.high) if e.verdict == "faster" else (1 / e.median, 1 / e.high, 1 / e.low)
    d = _digits(m, lo, hi)
    return f"{m:.{d}f}x {e.verdict}{with_what} ({lo:.{d}f}-{hi:.{d}f}{n})"


def _share(x: float) -> str:
    return "all" if x >= 1 else f"{100 * x:.0f}%"


def deploy_text(d: deploy.Deploy) -> str:
    """The bottom line's last words after a three-way try: which to deploy."""
    if d.choice is None:
        return "too few pairs to say which to deploy"
    if d.choice == deploy.MEMKIT:
        words = "deploy memkit" + ("" if d.memkit_beats_tuned else " (not shown faster than glibc tuned)")
        if d.tuned_closes_most:
            words += (f"; glibc tuned closes {_share(d.closed)} of memkit's lead: the GLIBC_TUNABLES line gets "
                      "most of it without a preload")
        return words
    if d.choice == deploy.GLIBC_TUNED:
        return "deploy glibc tuned: the GLIBC_TUNABLES line, no preload" + (
            f" (it closes {_share(d.closed)} of memkit's lead)" if d.closed is not None else "")
    return "keep glibc as shipped: neither glibc tuned nor memkit is faster beyond the noise"


def bottom_line(program: str, wall: dict, problem: Optional[str] = None, profile: str = "",
                changed_output: frozenset = frozenset(), suggestion: str = "") -> str:
    """The one line: `wall` maps each configuration compared with the one
    without memkit (WITH, then WITH_PROFILE or GLIBC_TUNED, whose
    MEMKIT_OVER_TUNED comes with it) to its Estimate; `problem`, where the
    outputs differed, comes first; after a three-way try, which to deploy
    (a configuration in `changed_output` never is); `suggestion` last."""
    parts = [problem] if problem else []
    for series, e in wall.items():
        if series == WITH:
            parts.append(speedup_text(e))
        elif series == WITH_PROFILE:
            parts.append(f"with the profile {profile}: " + speedup_text(e, "", pairs=False))
        elif series == GLIBC_TUNED:
            parts.append("glibc tuned: " + speedup_text(e, "", pairs=False))
        elif series == MEMKIT_OVER_TUNED:
            parts.append("memkit against glibc tuned: " + speedup_text(e, "", pairs=False))
    if GLIBC_TUNED in wall:
        parts.append(deploy_text(deploy.choose(wall[GLIBC_TUNED], wall[WITH], wall[MEMKIT_OVER_TUNED],
                                               GLIBC_TUNED in changed_output, WITH in changed_output)))
    return f"{program}: " + "; ".join(parts + ([suggestion] if suggestion else []))


def glibc_suggestion(fingerprint: dict) -> str:
    """For a try without --glibc-tunables: where glibc's thresholds disagree
    with this machine (memkit.lab.glibc.checks), the option that times
    glibc corrected beside memkit; "" where they agree."""
    found = [c for c in glibc.checks(fingerprint or {}) if c.disagrees]
    if not found:
        return ""
    return (f"glibc's {' and '.join(c.what for c in found)} threshold{'s' if len(found) > 1 else ''} "
            f"disagree{'' if len(found) > 1 else 's'} with this machine: try --glibc-tunables "
            f"{glibc.tunables_spec(found)} to time glibc tuned beside memkit")


# ---- what is stored ----

def program_name(argv: list[str]) -> str:
    return Path(argv[0]).name or argv[0]


def measurement(series: str, params: dict, metric: str, unit: str, values: list[float],
                baseline: Optional[tuple[str, dict, list[float]]]) -> dict:
    """One configuration's per-pair values as a format 2 record
    (memkit.results.records): every run is a process of its own, so the values are
    per-process samples as much as per-round ones, and compare judges them
    as such."""
    ms = sorted(values)
    median = statistics.median(ms)
    rec = {"type": "measurement", "experiment": EXPERIMENT, "series": series, "params": params, "axis": None,
           "metric": metric, "unit": unit, "better": "lower", "stat": "median",
           "value": median, "min": ms[0], "median": median, "max": ms[-1],
           "samples": list(values), "process_samples": list(values), "baseline": None}
    ratios = paired_ratios(baseline[2], values) if baseline is not None else None
    if ratios is not None:
        base_series, base_params, _ = baseline
        rs = sorted(ratios)
        rec.update(baseline={"series": base_series, "params": base_params}, ratios=ratios,
                   process_ratios=ratios, ratio=statistics.median(rs), ratio_min=rs[0], ratio_max=rs[-1])
    return records.measurement(rec, records.FORMAT)


def is_try(experiment_row: dict) -> bool:
    return experiment_row.get("name") == EXPERIMENT


def tried_argv(experiment_row: dict) -> list[str]:
    """The command a `try` experiment ran (its stored arguments)."""
    args = experiment_row.get("args")
    try:
        argv = json.loads(args) if isinstance(args, str) else list(args or [])
    except ValueError:
        argv = []
    return [str(a) for a in argv] if isinstance(argv, list) else []


def label(experiment_row: dict) -> str:
    """How lists name an experiment: a `try` by the program it ran."""
    if is_try(experiment_row):
        argv = tried_argv(experiment_row)
        return f"{EXPERIMENT} {program_name(argv)}" if argv else EXPERIMENT
    return experiment_row["name"]


def run_kind(db, run: dict) -> tuple:
    """What a run measured, for finding an earlier run comparable with it:
    ("try", the command) for a `memkit try`, ("lab", quick) for the lab's."""
    exps = run.get("experiments")
    if exps is None:
        exps = db.experiments(run["id"])
    tries = [e for e in exps if is_try(e)]
    if tries:
        return (EXPERIMENT, json.dumps(tried_argv(tries[0])))
    return ("lab", bool(run["quick"]))


def kind_text(kind: tuple) -> str:
    """A run_kind() in words: "tried `python3 x.py`", "ran the lab's experiments"."""
    if kind[0] == EXPERIMENT:
        return f"tried `{shlex.join(json.loads(kind[1]))}`"
    return "ran the lab's experiments" + (" (quick grid)" if kind[1] else "")


class RunFacts:
    """What comparability asks of each run (its kind, the things it
    measured), read once per run: finding a pair may look at many."""

    def __init__(self, db):
        self.db = db
        self._kinds: dict = {}
        self._keys: dict = {}

    def kind(self, run: dict) -> tuple:
        if run["id"] not in self._kinds:
            self._kinds[run["id"]] = run_kind(self.db, run)
        return self._kinds[run["id"]]

    def keys(self, run: dict) -> frozenset:
        if run["id"] not in self._keys:
            self._keys[run["id"]] = self.db.measurement_keys(run["id"])
        return self._keys[run["id"]]


def previous_comparable(db, runs: list[dict], latest: dict, facts: Optional[RunFacts] = None) -> Optional[dict]:
    """The run `latest` is compared with, wherever a command picks one
    (compare without run ids, run's summary, report, fleet): the latest
    earlier run that shares a measurement with it (the same experiment,
    series, parameters and metric: anything else compares nothing), one of
    the same kind first (a `memkit try` of the same command; a lab run of
    the same grid), else, for a lab run, a lab run of the other grid.  None
    when no earlier run shares one."""
    facts = facts or RunFacts(db)
    kind = facts.kind(latest)
    earlier = [r for r in reversed(runs) if r["id"] < latest["id"]]
    same = [r for r in earlier if facts.kind(r) == kind]
    other = [] if kind[0] == EXPERIMENT else [r for r in earlier
                                              if facts.kind(r)[0] == "lab" and facts.kind(r) != kind]
    return next((r for r in same + other if facts.keys(r) & facts.keys(latest)), None)


def last_comparable_pair(db, runs: list[dict]) -> tuple[Optional[dict], Optional[dict]]:
    """(a, b): the latest run b that has a previous_comparable() run a, and
    a; (None, None) when no run has one.  b is the last run unless that
    one shares nothing with any earlier run (a try of a new command)."""
    facts = RunFacts(db)
    for b in reversed(runs):
        a = previous_comparable(db, runs, b, facts)
        if a is not None:
            return a, b
    return None, None


def stored_bottom_line(db, run_id: int) -> Optional[str]:
    """The bottom line a `try` run printed (its first verdict), or None."""
    vs = db.verdict_records(run_id, EXPERIMENT)
    return vs[0]["text"] if vs else None


def latest_bottom_lines(db, host: Optional[str] = None, up_to: Optional[int] = None) -> list[tuple[int, str]]:
    """[(run id, bottom line)] of the latest `try` of each command (on
    `host`, if given; made by run `up_to`, if given), oldest first."""
    latest: dict = {}
    for r in db.runs(host=host):
        if up_to is not None and r["id"] > up_to:
            continue
        kind = run_kind(db, r)
        if kind[0] == EXPERIMENT:
            latest[kind] = r["id"]
    out = []
    for run_id in sorted(latest.values()):
        line = stored_bottom_line(db, run_id)
        if line:
            out.append((run_id, line))
    return out
