"""Driving memkit-tune-probe: one process per configuration of libmemkit
(the tunables are read once, at load time), kept alive and asked for one
timed batch at a time, so configurations interleave A B C A B C ... while
each keeps its buffers.  The processes are started afresh for each
generation of rounds, so what one process happened to get (page placement,
huge pages) is part of the noise and not of the result."""

from __future__ import annotations

import json
import os
import random
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from memkit.errors import MemkitError
from memkit.lab import Progress

PROBE = "memkit-tune-probe"


def find_probe(bench_dir: Path) -> Path:
    p = bench_dir / PROBE
    if not os.access(p, os.X_OK):
        raise MemkitError(f"{p} is not built; run `make` first")
    return p


def clean_env(**extra) -> dict:
    """The environment of a probe: no tunables or profile but the ones given."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEMKIT_TUNABLES", "MEMKIT_PROFILE")}
    env["MEMKIT_PROFILE"] = "none"
    env.update(extra)
    return env


def fingerprint(probe: Path) -> dict:
    p = subprocess.run([str(probe), "--fingerprint"], capture_output=True, text=True,
                       env=clean_env(), timeout=60)
    if p.returncode != 0:
        raise MemkitError(f"{probe.name} --fingerprint failed: {p.stderr.strip() or p.returncode}")
    fp = json.loads(p.stdout)
    fp.pop("type", None)
    return fp


def pool_threads(probe: Path) -> int:
    """The default pool's size under the built-in defaults."""
    p = Process(probe, 4096, clean_env(), "defaults")
    try:
        return int(p.ask("pool"))
    finally:
        p.close()


class Process:
    """One probe process: libmemkit as configured by `env`."""

    def __init__(self, probe: Path, max_size: int, env: dict, label: str):
        self.label = label
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen([str(probe), str(max_size)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)

    def ask(self, line: str) -> str:
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            out = self.p.stdout.readline()
        except BrokenPipeError:
            out = ""
        if not out or out.startswith("error"):
            raise MemkitError(f"the {self.label} probe: {out.strip() or 'exited'} (asked '{line}')"
                              + (f"; stderr: {self.stderr()}" if self.stderr() else ""))
        return out.strip()

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read().strip()

    def tunables(self) -> tuple[str, str]:
        """(the tunables in force, the profile in force)."""
        line = self.ask("tunables")
        tun, _, prof = line[len("tunables "):].partition("  profile")
        return tun, prof.strip()

    def time(self, op: str, size: int, reps: int, best_of: int = 1) -> float:
        """ns per call: the fastest of best_of batches of reps calls."""
        return float(self.ask(f"time {op} {size} {reps} {best_of}")) / reps

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.err.close()


@dataclass
class Config:
    """One configuration of libmemkit: the environment that sets it, and
    what the library must then report (so a rejected setting is an error,
    not a silently measured default)."""
    env: dict
    tunables: dict = field(default_factory=dict)   # name -> value as the library prints it
    profile: str = ""                               # the profile it must have loaded


@dataclass
class Plan:
    """What to time: cells (op, size), each run under every configuration."""
    configs: dict[str, Config]     # by label
    cells: list[tuple[str, int]]
    rounds: int
    generations: int
    batch_ns: float                # aim for batches this long
    best_of: int = 3               # each sample: the fastest of this many batches
    seed: int = 1


def start(probe: Path, plan: Plan, max_size: int) -> dict[str, Process]:
    procs = {}
    try:
        for label, cfg in plan.configs.items():
            p = procs[label] = Process(probe, max_size, cfg.env, label)
            tun, prof = p.tunables()
            if p.stderr():
                raise MemkitError(f"libmemkit complained under the {label} configuration: {p.stderr()}")
            got = dict(item.partition("=")[::2] for item in tun.split(":"))
            wrong = [f"{k}={got.get(k)} (not {v})" for k, v in cfg.tunables.items() if got.get(k) != v]
            if wrong or prof != cfg.profile:
                raise MemkitError(f"libmemkit did not take the {label} configuration: "
                                  + ", ".join(wrong or [f"profile '{prof}' (not '{cfg.profile}')"]))
    except BaseException:
        for p in procs.values():
            p.close()
        raise
    return procs


# Size bands timed by separate processes: a process that has just run
# non-temporal or rep copies of 128 MiB was seen to copy 1-2 KiB 1.5-3x
# slower than one that had not (Zen 4, interleaved), so small sizes are never
# timed by a process that also times large ones.
BANDS = (256 << 10, 8 << 20)


def measure(probe: Path, plan: Plan,
            on_progress: Optional[Callable[[Progress], None]] = None) -> dict:
    """{label: {(op, size): [ns per call, one per round]}}: per size band,
    in each round every cell in a shuffled order, and in each cell every
    configuration in a shuffled order, back to back."""
    times = {label: {} for label in plan.configs}
    edges = (0,) + BANDS + (float("inf"),)
    bands = [[c for c in plan.cells if lo < c[1] <= hi] for lo, hi in zip(edges, edges[1:])]
    done, total, t0 = 0, plan.rounds * len(plan.cells), time.monotonic()
    for band in filter(None, bands):
        got = measure_band(probe, plan, band, done, total, t0, on_progress)
        for label in times:
            times[label].update(got[label])
        done += plan.rounds * len(band)
    return times


def measure_band(probe, plan, cells, done, total, t0, on_progress) -> dict:
    rng = random.Random(plan.seed)
    max_size = max(s for _, s in cells)
    times = {label: {cell: [] for cell in cells} for label in plan.configs}
    reps = {}
    per_gen = -(-plan.rounds // plan.generations)
    for g in range(plan.generations):
        procs = start(probe, plan, max_size)
        try:
            if not reps:
                # One call of each cell in each process: the batch length
                # (the same for every configuration of a cell), and a warm-up.
                for cell in cells:
                    fastest = min(p.time(cell[0], cell[1], 1) for p in procs.values())
                    reps[cell] = max(1, min(1_000_000, int(plan.batch_ns / max(fastest, 1.0))))
            for _ in range(min(per_gen, plan.rounds - g * per_gen)):
                order_cells = list(cells)
                rng.shuffle(order_cells)
                for cell in order_cells:
                    order = list(procs)
                    rng.shuffle(order)
                    for label in order:
                        times[label][cell].append(procs[label].time(*cell, reps[cell], plan.best_of))
                    done += 1
                    if on_progress and (done % 16 == 0 or done == total):
                        on_progress(Progress("tune", done, total, time.monotonic() - t0,
                                             f"{cell[0]} {cell[1]} B, generation {g + 1}/{plan.generations}"))
        finally:
            for p in procs.values():
                p.close()
    return times
