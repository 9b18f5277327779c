# SPDX-License-Identifier: Apache-2.0
"""memkit's one judge: every constant that decides "is A faster than B, how
sure, does it count" on the Python side, and the rule each question uses.
docs/judging.md says which statistic answers which question, and why.

The questions, and where each is asked:

- **Did a measurement move between two runs?** (`memkit compare`, the
  report's "since the previous run", `memkit fleet`): compare.py, by the
  bootstrap of the ratio of medians, Benjamini-Hochberg over the run, and a
  minimum effect (the FDR / *_EFFECT constants below).
- **Did a series move as a whole?** (the same commands): a regression that
  moves most of a series (sse2 forced: most of memset-sizes) must be caught
  even where each point alone is too short to judge; judged on its paired
  speed-ups over the baseline timed in the same rounds (SERIES_*).
- **Is a strategy faster at a size, with confidence?** (`memkit tune`): the
  sign test over paired rounds and a margin (TUNE_*).
- **Is a whole program faster?** (`memkit try`): the order-statistics
  interval of the median paired ratio (TRY_*).
- **Which to deploy: glibc as shipped, glibc tuned or memkit?** (`memkit try
  --glibc-tunables`): deploy.py, on the same intervals, and the share of
  memkit's lead glibc tuned closes (TRY_TUNED_CLOSES_MOST).
- **Is memkit losing at a size?** (the lab's own verdicts, in C:
  bench/lab/ranking.c): LOSS_MIN there; it writes it into every ranking
  record, and the Python side reads it from there, never copies it.

The statistics themselves are memkit.judging.stats (scipy.stats); nothing here
computes a p-value.
"""

from __future__ import annotations

import math

# ---- compare: one measurement between two runs (compare.py's steps) ----
BOOTSTRAP = 2000          # resamples of the ratio of medians
SEED = 20240601           # the resampling's seed: a comparison is reproducible
FDR = 0.05                # Benjamini-Hochberg false discovery rate
MIN_EFFECT = 0.05         # on per-process samples
PLACEMENT_EFFECT = 0.20   # on per-round samples: they cannot see placement between processes
SHORT_CALL_NS = 50.0      # a call shorter than this moves up to 15% between processes ...
SHORT_CALL_PROCESS_EFFECT = 0.15   # ... so this on per-process samples, and not judged alone on rounds
PROCESSES_MIN = 3         # fewer processes say nothing about the spread between them
BUSY_FACTOR = 2.0         # every minimum effect of one measurement, when either run was on a busy machine
NULL_MIN = 8              # measurements needed to read an experiment's own noise
NULL_CLIP = 3.0           # values this many scales out are set aside as not noise
EFFECT_SDS = 3.0          # the minimum effect is at most this many SDs of the noise
COHERENT = 3              # neighbouring sizes that lean together are stronger evidence
LOCAL_MIN = 3             # other measurements needed for a local shift

# ---- compare: a series as a whole (its paired speed-ups over the baseline) ----
# What identical quick runs (2 processes, 3 batches) moved a whole series by,
# relative to glibc and net of glibc's own move (compare._baseline_shifts), at
# the Hodges-Lehmann estimate: up to 5.9% on AMD EPYC Zen 5 (10 pairs, the
# median then), 8.8% on Zen 3 (sse2, a busy VM), 9.5% on an Intel Xeon 6/167
# (old_nt; avx512 8.9% in a pair that differed only by MEMKIT_TUNABLES):
# where each variant's code lands differs between processes
# (tests/data/runs/).  Forced regressions: sse2 on Zen 3 26%, on Zen 5
# 26-29%, on an Intel Xeon 6/207 18%; avx2 forced on Zen 5, 13%, is below
# this and no longer caught.  Not doubled on a busy machine: the pairs and
# the baseline's shift cancel the load, and the placement noise above was as
# large on the quiet machine as on the busy one.
SERIES_EFFECT = 0.15      # the series' estimated change must exceed this
SERIES_MIN = 8            # sizes a series needs to be judged as a whole

# ---- compare: the noise between two runs, and bands of adjacent sizes ----
# A pair's change is judged against what identical runs of the same grid did
# on the same host (the history), else against what the other series around
# the same sizes did between these two runs: within-run rounds and a quick
# run's two processes do not show how far two runs part (docs/judging.md).
NOISE_HISTORY_RUNS = 10        # earlier runs of the grid on the host read; older ones say less of it as it is
NOISE_SPAN = 3            # sizes either side whose changes tell a size's between-run noise
NOISE_QUANTILE = 0.8      # the noise's scale is read from this quantile of |change|: up to a fifth of
#                           the changes may have moved, and a quantised timer may tie most of them at 0
BAND_MIN = 3              # adjacent sizes that moved together are one finding, a band
BAND_EFFECT = 0.20        # a band's median change must exceed this (busy identical quick runs on Zen 4:
#                           sse2 3-8 KiB x1.15; the injection test catches 1.3x bands as well at 0.15 or 0.2)
# ... and this where most of it is short calls timed in fewer than PROCESSES_MIN processes and no
# history shows their placement: identical quick runs moved such bands by up to 1.56x (Zen 3 old_nt
# 192-384 B; Zen 4 avx512 48-128 B 1.50x), a whole process's code placement moving them together.
SHORT_BAND_EFFECT = 0.60
BAND_DF = math.inf        # a band's mean against the noise of such means: normal (a mean of sizes)
# Every change must also exceed what identical runs moved the same series by,
# in its scope (a measurement alone, a band, the whole series;
# comparison/identical_runs.py): the host's history where it holds this many
# pairs of the grid, else the reference recorded on every CPU seen
# (judging/identical-runs.json): a pair alone cannot tell a run-wide move
# (Zen 4: nt-stores' zero fills x1.17-1.20 as a whole; old_nt 1.5-64 KiB
# x1.27 relative to glibc) from a change.
HISTORY_MIN_PAIRS = 3
NOISE_MARGIN = 1.25       # ... by this many times its largest move (in logs): a largest of a few draws
#                           understates the tail

# ---- tune: a strategy against the incumbent at one size ----
TUNE_ALPHA = 0.01         # one-sided sign test over paired rounds
TUNE_MARGIN = 0.03        # and the median speed-up at least this
TUNE_NULL_MIN = 8         # identical cells needed to read the noise (--check)
TUNE_BAND_MIN = 4         # ... and in a size band, to read its own center
TUNE_NULL_CLIP = 4.0      # identical cells this many scales out are not noise

# ---- tune: the small-size design (the variant of each function) ----
# A CPU's default small-size design: the best geometric mean over the levels weighed
# equally, on the production distributions, no level below this x glibc.
VARIANT_LEVELS = ("l1", "l2", "l3", "dram")
VARIANT_FLOOR = 0.85

# ---- try: a whole program with and without memkit ----
TRY_CONFIDENCE = 0.95     # the interval of the median paired ratio
TRY_MIN_PAIRS = 6         # pairs before any stopping rule applies
TRY_PRECISION = 0.02      # stop once the interval is within +-this of the median
# Which to deploy after a three-way try (judging/deploy.py): glibc tuned
# "closes most of memkit's lead" when it saves at least this share of the
# time memkit saves over glibc as shipped; the preload then buys at most a
# quarter of its lead, which one environment variable does not.
TRY_TUNED_CLOSES_MOST = 0.75
