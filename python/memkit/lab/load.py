# SPDX-License-Identifier: Apache-2.0
"""Is the machine busy?  The CPU time other processes use (and the
hypervisor steals: /proc/stat), measured over a stretch of time, so a run
made beside other work says so and `compare` can tell.  The load average
(/proc/loadavg) is kept, but judges only where nothing was measured: it is
an average over the last minute, and after a build (`make bench` compiles,
then runs) it stays above 1 for a minute while the CPUs sit idle."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Optional

from memkit.lab import machine

# Busy: more runnable threads than half the CPUs (the lab wants the machine
# to itself), or more than 2% of CPU time stolen by the hypervisor.
LOAD_PER_CPU = 0.5
STEAL_PCT = 2.0
OTHERS_PCT = 25.0


def usable_cpus() -> int:
    return machine.current().usable_cpus()


def parse_cpu_times(text: str) -> Optional[list[int]]:
    """The aggregate "cpu" line of /proc/stat's text: user nice system idle iowait irq softirq steal ..."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            try:
                return [int(x) for x in line.split()[1:]]
            except ValueError:
                return None
    return None


def steal_pct(before: Optional[list[int]], after: Optional[list[int]]) -> Optional[float]:
    """% of all CPU time between two cpu_times readings (memkit.lab.machine) that was stolen."""
    if not before or not after or len(before) < 8 or len(after) < 8:
        return None
    # guest and guest_nice are already counted in user and nice.
    total = sum(after[:8]) - sum(before[:8])
    if total <= 0:
        return None
    return 100.0 * (after[7] - before[7]) / total


def others_pct(before: Optional[list[int]], after: Optional[list[int]], own_seconds: float) -> Optional[float]:
    """% of all CPUs' time between two cpu_times readings spent running work
    other than this process and its children (`own_seconds` of CPU time)."""
    if not before or not after or len(before) < 8 or len(after) < 8:
        return None
    total = sum(after[:8]) - sum(before[:8])
    idle = (after[3] + after[4]) - (before[3] + before[4])
    steal = after[7] - before[7]
    if total <= 0:
        return None
    ticks = machine.current().clock_ticks()
    busy_s = (total - idle - steal) / ticks
    return max(0.0, 100.0 * (busy_s - own_seconds) / (total / ticks))


def _own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class Load:
    load_avg: Optional[float]
    steal_pct: Optional[float]
    cpus: int
    others_pct: Optional[float] = None   # other processes' share of all CPUs (over a run)

    @property
    def reasons(self) -> list[str]:
        out = []
        if (self.others_pct is None and self.load_avg is not None
                and self.load_avg > LOAD_PER_CPU * self.cpus):
            out.append(f"load average {self.load_avg:.2f} on {self.cpus} CPUs")
        if self.steal_pct is not None and self.steal_pct > STEAL_PCT:
            out.append(f"{self.steal_pct:.1f}% of CPU time stolen by the hypervisor")
        if self.others_pct is not None and self.others_pct > OTHERS_PCT:
            out.append(f"other processes used {self.others_pct:.0f}% of the CPUs")
        return out

    @property
    def busy(self) -> str:
        """Why the machine is busy, '' when it is not."""
        return "; ".join(self.reasons)

    def as_record(self) -> dict:
        return {"load_avg": self.load_avg, "steal_pct": self.steal_pct, "busy": self.busy}

    def describe(self) -> str:
        la = "unknown" if self.load_avg is None else f"{self.load_avg:.2f}"
        st = "unknown" if self.steal_pct is None else f"{self.steal_pct:.1f}%"
        others = "" if self.others_pct is None else f", other processes {self.others_pct:.0f}% of the CPUs"
        state = f"BUSY: {self.busy}" if self.busy else "quiet"
        return f"load average {la} ({self.cpus} CPUs){others}, steal {st}: {state}"


def sample(seconds: float = 0.5) -> Load:
    """The load now: what other processes use and the steal, measured over
    `seconds` (while this process sleeps)."""
    m = machine.current()
    before, own = m.cpu_times(), _own_cpu_seconds()
    time.sleep(seconds if before is not None else 0)
    after = m.cpu_times()
    return Load(m.load_average(), _steal(m, before, after), m.usable_cpus(),
                others_pct(before, after, _own_cpu_seconds() - own))


def _steal(m, before, after) -> Optional[float]:
    """Measured between two readings, or as the (recorded) machine says."""
    measured = steal_pct(before, after)
    return measured if measured is not None else m.steal_pct()


def settle(most_seconds: float = 1.5, window: float = 0.3) -> Load:
    """The load at the start of a run: sampled until the machine is quiet,
    for at most most_seconds (the last processes of a build that just ended
    finish), then as it is."""
    deadline = time.monotonic() + most_seconds
    now = sample(window)
    while now.busy and time.monotonic() + window <= deadline:
        now = sample(window)
    return now


class Watch:
    """The load over a stretch of time (a run): the load average at its start
    (later ones would count the run itself), and over all of it the steal and
    the CPU time other processes took."""

    def __init__(self):
        self.machine = machine.current()
        self.start_load = self.machine.load_average()
        self.start_times = self.machine.cpu_times()
        self.start_own = _own_cpu_seconds()

    def result(self) -> Load:
        now = self.machine.cpu_times()
        return Load(self.start_load, _steal(self.machine, self.start_times, now), self.machine.usable_cpus(),
                    others_pct(self.start_times, now, _own_cpu_seconds() - self.start_own))
