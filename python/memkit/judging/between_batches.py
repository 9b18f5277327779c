# SPDX-License-Identifier: Apache-2.0
"""Between-batch judgement: is a speed-up one that another run on the same
machine would find too?

Rounds inside one run share its processes, its page placement and its
neighbours' spell, so their spread under-states how far two runs differ:
two `memkit tune --dry-run` in a row on Zen 4 (family 25, model 17) moved
different thresholds, each "confident" by the sign test over its own rounds.
Here the unit of evidence is the batch: an independent run (processes of
its own, later in time) with both sides interleaved in it, giving one
estimate.  A difference counts only when every batch finds it in the same
direction, their mean lies beyond zero by a one-sided t test over the
batches (their spread is the between-run noise), and the mean is at least
the margin.  `memkit tune` confirms its moves by this rule (tuning.reproduce);
it is written where other judges can read it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean, stdev

from memkit.judging import stats
from memkit.judging.judge import TUNE_MARGIN

BATCHES = 4          # independent batches: a t test over 3 degrees of freedom
BATCH_ALPHA = 0.05   # one-sided, over the batches' estimates


@dataclass(frozen=True)
class Batches:
    """One difference, estimated once per batch: log speed-ups (> 0: the
    challenger faster)."""
    gains: tuple

    @property
    def mean(self) -> float:
        return fmean(self.gains)

    @property
    def noise(self) -> float:
        """How far batches differ: the standard deviation of their log
        speed-ups (0 with fewer than two)."""
        return stdev(self.gains) if len(self.gains) > 1 else 0.0

    def p(self, faster: bool) -> float:
        return stats.mean_beyond_zero_p(self.gains, faster)

    def verdict(self, alpha: float = BATCH_ALPHA, margin: float = TUNE_MARGIN) -> int:
        """1 faster, -1 slower, 0 not sure: every batch the same way, the
        mean beyond the between-batch noise (p <= alpha) and by the margin."""
        if len(self.gains) < 2:
            return 0
        least = math.log1p(margin)
        if all(g > 0 for g in self.gains) and self.mean >= least and self.p(True) <= alpha:
            return 1
        if all(g < 0 for g in self.gains) and self.mean <= -least and self.p(False) <= alpha:
            return -1
        return 0

    def says(self) -> str:
        """"1.25x (batches 1.21-1.30x, between-batch noise 3%)"."""
        lo, hi = math.exp(min(self.gains)), math.exp(max(self.gains))
        return (f"{math.exp(self.mean):.2f}x (batches {lo:.2f}-{hi:.2f}x, "
                f"between-batch noise {math.expm1(self.noise):.0%})")
