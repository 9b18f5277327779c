# SPDX-License-Identifier: Apache-2.0
"""Running memkit-tune-experiment (bench/experiments/tune/): the lab's one
interleave over configurations of libmemkit, each put in force in turn
inside one process, several processes pooled.  Each size band runs in
processes of its own (BANDS)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from memkit.errors import MemkitError
from memkit.lab import experiments
from memkit.results.result import Progress

PROGRAM = "memkit-tune-experiment"


def find_program(bench_dir: Path) -> Path:
    p = bench_dir / PROGRAM
    if not os.access(p, os.X_OK):
        raise MemkitError(f"{p} is not built; run `make` first")
    return p


def clean_env(**extra) -> dict:
    """The environment of a timing process: no tunables or profile but the
    ones given (a configuration's settings apply over the built-in defaults)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEMKIT_TUNABLES", "MEMKIT_PROFILE")}
    env["MEMKIT_PROFILE"] = "none"
    env.update(extra)
    return env


def experiment(program: Path) -> experiments.Experiment:
    return experiments.Experiment("tune", "", "", program)


def fingerprint(program: Path) -> dict:
    """The machine, as the lab's experiments describe it."""
    return experiments.fingerprint([experiment(program)])


@dataclass
class Loaded:
    """What libmemkit made of an environment."""
    tunables: str        # name=value:... in force
    profile: str         # the profile it read, "" for none
    pool_threads: int    # the default pool's size
    stderr: str          # what it complained of


def loaded(program: Path, **env) -> Loaded:
    """program --loaded in a clean environment with env set; its standard
    error is kept (experiments._run_quiet would not hand it back on success)."""
    try:
        p = subprocess.run([str(program), "--loaded"], capture_output=True, text=True,
                           env=clean_env(**env), timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MemkitError(f"cannot run {program.name} --loaded: {e}")
    if p.returncode != 0:
        raise MemkitError(f"{program.name} --loaded failed: {p.stderr.strip() or p.returncode}")
    try:
        got = json.loads(p.stdout)
    except ValueError:
        raise MemkitError(f"{program.name} --loaded printed no valid JSON")
    return Loaded(str(got.get("tunables", "")), str(got.get("profile", "")),
                  int(got.get("pool_threads", 1)), p.stderr.strip())


def profile_loaded(program: Path, path: Path) -> Loaded:
    """What libmemkit takes from the profile at path; a MemkitError saying
    why when it does not load it (it would ignore the profile and run its
    defaults: a corrupt file, not a profile at all)."""
    got = loaded(program, MEMKIT_PROFILE=str(path))
    if got.stderr or got.profile != str(path):
        raise MemkitError(f"libmemkit did not load {path}: "
                          f"{got.stderr or 'it reports profile ' + repr(got.profile)}")
    return got


@dataclass
class Plan:
    """What to time: cells (op, size), each under every configuration
    (label -> MEMKIT_TUNABLES settings over the defaults)."""
    configs: dict[str, str]
    cells: list[tuple[str, int]]
    rounds: int                    # per process
    processes: int
    batch_ns: float                # aim for batches this long
    best_of: int = 3               # each sample: the fastest of this many batches

    @property
    def total_rounds(self) -> int:
        return self.rounds * self.processes


# Size bands timed by separate processes: a process that has just run
# non-temporal or rep copies of 128 MiB was seen to copy 1-2 KiB 1.5-3x
# slower than one that had not (Zen 4, interleaved), so small sizes are never
# timed by a process that also times large ones.
BANDS = (256 << 10, 8 << 20)


def band_of(size: int) -> int:
    """The size band whose cells share processes."""
    return sum(size > edge for edge in BANDS)


def arguments(plan: Plan, cells: list[tuple[str, int]]) -> list[str]:
    return [
        "configs=" + ";".join(f"{label}@{spec}" for label, spec in plan.configs.items()),
        "cells=" + ",".join(f"{op}:{size}" for op, size in cells),
        f"rounds={plan.rounds}", f"processes={plan.processes}", f"batch={plan.batch_ns:g}",
        f"best_of={plan.best_of}",
    ]


def measure(program: Path, plan: Plan,
            on_progress: Optional[Callable[[Progress], None]] = None) -> dict:
    """{label: {(op, size): [ns per call, one per round]}}, the rounds of
    every label paired (the same round of the same process)."""
    times = {label: {} for label in plan.configs}
    bands = [[c for c in plan.cells if band_of(c[1]) == b] for b in range(len(BANDS) + 1)]
    exp = experiment(program)
    done, total, t0 = 0, len(plan.cells), time.monotonic()
    for cells in filter(None, bands):
        def progress(p: Progress, base=done, n=len(cells)):
            if on_progress:
                whole = base + p.done * n / max(p.total, 1)
                on_progress(Progress("tune", int(whole), total, time.monotonic() - t0, p.what))
        res = experiments.run_experiment(exp, False, arguments(plan, cells), on_progress=progress,
                                         env=clean_env())
        if res.status != "ok":
            raise MemkitError(f"{program.name}: {res.error}")
        for m in res.measurements:
            cell = (m["params"].get("op"), m["params"].get("size"))
            if m["series"] in times and cell in cells:
                times[m["series"]][cell] = list(m["sample_values"] or [])
        missing = [(label, c) for label in times for c in cells if c not in times[label]]
        if missing:
            raise MemkitError(f"{program.name} reported no times for {missing[0][0]} at "
                              f"{missing[0][1][0]} {missing[0][1][1]} B")
        done += len(cells)
    return times
