# SPDX-License-Identifier: Apache-2.0
"""How long `memkit run` will take on this machine: the one rule.

Per experiment, in this order:
1. this host's earlier runs: the median seconds of its last (up to) three
   finished runs of it with the same arguments, --quick or not as now, on a
   machine with the same L3 (a grid that scales with the caches is then the
   same grid);
2. else the reference machine's seconds for its default (or --quick) grid,
   times the grid's work here over its work there for an experiment whose
   grid scales with the caches (--describe's "grid": copy-read);
3. else (an experiment the reference does not know) UNKNOWN_SECONDS.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Optional

from memkit.errors import MemkitError

REFERENCE_MACHINE = "a 2-core Zen 5 VM, 32 MiB L3"
# Seconds of each experiment's default grid on the reference machine: one
# whole `make bench` there, nothing else running (385 s in all; the first
# model, extrapolated from reduced grids, said 7.7 minutes: 20% high).
# copy-read's scales with its grid's work on another L3.
REFERENCE_SECONDS = {
    "memset-sizes": 1.4,
    "memset-random": 90.6,
    "fill-regions": 29.1,
    "copy-sweep": 75.5,
    "copy-read": 12.5,
    "parallel-sweep": 6.7,
    "ipc-copy": 11.7,
    "size-distributions": 10.7,
    "faults": 10.6,
    "zeroing": 40.7,
    "preload-apps": 95.0,
    "record-overhead": 1.1,   # since it runs in 3 processes
}
# --quick, each experiment timed there on its own.
REFERENCE_QUICK_SECONDS = {
    "memset-sizes": 0.3,
    "memset-random": 16.1,
    "fill-regions": 9.1,
    "copy-sweep": 3.4,
    "copy-read": 2.8,
    "parallel-sweep": 3.2,
    "ipc-copy": 1.6,
    "size-distributions": 2.9,
    "faults": 0.6,
    "zeroing": 0.3,
    "preload-apps": 21.9,
    "record-overhead": 0.3,
}
# The work of a cache-scaled default grid on the reference machine (its
# --describe "grid" "work" there), which a grid here is scaled against.
REFERENCE_WORK = {"copy-read": 107447701504}
UNKNOWN_SECONDS = 30.0
HISTORY_RUNS = 3


@dataclass
class Guess:
    seconds: float
    source: str   # "history", "reference", "unknown"
    note: str = ""


@dataclass
class Estimate:
    seconds: float
    guesses: dict[str, Guess] = field(default_factory=dict)

    def line(self, whole_suite: bool = True) -> str:
        """'the suite: about N minutes on this machine (where that comes from)';
        under a minute in seconds."""
        minutes = self.seconds / 60
        amount = (f"{minutes:.0f} minutes" if minutes >= 2 else f"{minutes:.1f} minutes" if minutes >= 1
                  else f"{self.seconds:.0f} seconds")
        by = {}
        for name, g in self.guesses.items():
            by.setdefault(g.source, []).append(name)
        parts = []
        if by.get("history"):
            parts.append(f"this host's earlier runs for {_count(by['history'])}")
        if by.get("reference"):
            parts.append(f"the reference machine's times ({REFERENCE_MACHINE}) for {_count(by['reference'])}")
        if by.get("unknown"):
            parts.append(f"{UNKNOWN_SECONDS:.0f} s for each of {', '.join(by['unknown'])} (not timed before)")
        notes = [f"{n}: {g.note}" for n, g in self.guesses.items() if g.note]
        what = "the suite" if whole_suite else "this run"
        return (f"{what}: about {amount} on this machine (from {'; '.join(parts)}"
                f"{'; ' + '; '.join(notes) if notes else ''})")


def _count(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{len(names)} experiments"


def _l3(fingerprint: Optional[dict]) -> Optional[int]:
    cache = (fingerprint or {}).get("cache")
    return cache.get("l3") if isinstance(cache, dict) else None


def history(db, host: str) -> list[dict]:
    """This host's finished experiments, newest first: {"name", "seconds",
    "args", "quick", "l3"}; what the estimate learns from."""
    out = []
    try:
        runs = [(run, db.experiments(run["id"])) for run in reversed(db.runs(host))]
    except MemkitError:   # a damaged database: the estimate falls back, the run says why later
        return []
    for run, exps in runs:
        for e in exps:
            if e.get("status") != "ok" or not isinstance(e.get("seconds"), (int, float)):
                continue
            try:
                args = json.loads(e["args"]) if e.get("args") else []
            except (TypeError, ValueError):
                continue
            out.append({"name": e["name"], "seconds": float(e["seconds"]), "args": args,
                        "quick": bool(run["quick"]), "l3": _l3(run["fingerprint"])})
    return out


def estimate(experiments, quick: bool, extra_args: dict[str, list[str]],
             fingerprint: Optional[dict], earlier: list[dict]) -> Estimate:
    """The rule above, for these experiments (experiments.Experiment) with these
    arguments on this machine (its fingerprint), given history()."""
    l3 = _l3(fingerprint)
    guesses = {}
    for e in experiments:
        args = list(extra_args.get(e.name) or [])
        same = [h["seconds"] for h in earlier
                if h["name"] == e.name and h["quick"] == quick and h["args"] == args
                and h["l3"] == l3][:HISTORY_RUNS]
        table = REFERENCE_QUICK_SECONDS if quick else REFERENCE_SECONDS
        if same:
            guesses[e.name] = Guess(statistics.median(same), "history")
        elif e.name in table:
            seconds, note = table[e.name], ""
            work = (e.grid or {}).get("work")
            if not quick and e.name in REFERENCE_WORK and isinstance(work, (int, float)) and work > 0:
                seconds *= work / REFERENCE_WORK[e.name]
                if (e.grid or {}).get("largest"):
                    note = f"sizes to {e.grid['largest'] / 2**20:.0f} MiB here"
            if args:
                note = (note + ", " if note else "") + "given arguments: timed as its default grid"
            guesses[e.name] = Guess(seconds, "reference", note)
        else:
            guesses[e.name] = Guess(UNKNOWN_SECONDS, "unknown")
    return Estimate(sum(g.seconds for g in guesses.values()), guesses)
