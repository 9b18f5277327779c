# SPDX-License-Identifier: Apache-2.0
"""Which to deploy after `memkit try --glibc-tunables`: glibc as shipped,
glibc tuned (one GLIBC_TUNABLES line, no preload) or memkit (the preload),
from the program's paired speed-ups.  docs/judging.md's table has its row.

The honest baseline for memkit is glibc configured for the machine: memkit
is chosen only when it is faster than glibc as shipped and than glibc tuned;
glibc tuned when it is faster than glibc as shipped and memkit is not faster
than it (an environment variable is cheaper to deploy than a preload);
memkit, "not shown faster than glibc tuned", when it alone is faster than
glibc as shipped; else glibc as shipped.  A configuration that changed the
program's output is never chosen.

"Faster" is the verdict of each speed-up's interval (whole_program.Estimate):
this rule adds none of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

from memkit.judging.judge import TRY_TUNED_CLOSES_MOST

GLIBC = "glibc as shipped"
GLIBC_TUNED = "glibc tuned"
MEMKIT = "memkit"


class Speedup(Protocol):
    """A median paired speed-up (> 1: faster) and its interval's verdict:
    "faster", "slower", "noise" or "too few"."""
    median: float
    verdict: str


@dataclass(frozen=True)
class Deploy:
    choice: Optional[str]         # GLIBC, GLIBC_TUNED or MEMKIT; None: too few pairs to tell
    closed: Optional[float]       # lead_closed(); None when memkit has no lead
    memkit_beats_tuned: bool      # memkit is faster than glibc tuned, beyond the noise

    @property
    def tuned_closes_most(self) -> bool:
        return self.closed is not None and self.closed >= TRY_TUNED_CLOSES_MOST


def lead_closed(tuned: Speedup, memkit: Speedup) -> Optional[float]:
    """The share of the time memkit saves over glibc as shipped that glibc
    tuned saves too, from the median speed-ups (1 - 1/tuned) / (1 - 1/memkit):
    0 when tuned saves nothing, 1 when it saves as much; None unless memkit
    is faster than glibc as shipped."""
    if memkit.verdict != "faster" or memkit.median <= 1:
        return None
    return max(0.0, (1 - 1 / tuned.median) / (1 - 1 / memkit.median))


def choose(tuned: Speedup, memkit: Speedup, memkit_over_tuned: Speedup,
           tuned_changed_output: bool = False, memkit_changed_output: bool = False) -> Deploy:
    """`tuned` and `memkit`: speed-ups over glibc as shipped; `memkit_over_tuned`:
    memkit's over glibc tuned, paired in the same pairs."""
    beats_tuned = memkit_over_tuned.verdict == "faster"
    closed = lead_closed(tuned, memkit)
    if "too few" in (tuned.verdict, memkit.verdict, memkit_over_tuned.verdict):
        return Deploy(None, closed, beats_tuned)
    memkit_faster = memkit.verdict == "faster" and not memkit_changed_output
    tuned_faster = tuned.verdict == "faster" and not tuned_changed_output
    if memkit_faster and (beats_tuned or tuned_changed_output):
        choice = MEMKIT
    elif tuned_faster:
        choice = GLIBC_TUNED
    elif memkit_faster:
        choice = MEMKIT
    else:
        choice = GLIBC
    return Deploy(choice, closed, beats_tuned)
