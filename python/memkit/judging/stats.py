# SPDX-License-Identifier: Apache-2.0
"""Every statistical decision of memkit's Python side, made by scipy.stats.

The project's rule: statistics from scipy, not by hand; one decision, one
place.  Each function is named for the decision it serves; the modules that
decide (compare, tune, whole_program, report) call these and compute no
p-value, interval or robust scale of their own.

Importing scipy.stats takes about a second (more on a busy machine), so it is
imported inside the functions: `memkit --help` and the commands that decide
nothing never pay for it, and load() lets a caller pay it before a clock
starts.
"""

from __future__ import annotations

import math
from typing import Optional


def load():
    """Imports scipy.stats (about a second on a busy machine), for a caller
    to pay that before its clock starts rather than between two timings."""
    from scipy import stats
    return stats


# ---- tune: is a strategy faster in enough paired rounds? ----

def sign_test_p(wins: int, n: int) -> float:
    """One-sided sign test, P(at least `wins` of n fair coin flips), by
    scipy.stats.binomtest: it assumes nothing of the rounds' noise but
    that a round is as likely won as lost where nothing changed."""
    if n == 0:
        return 1.0
    return float(load().binomtest(wins, n, 0.5, alternative="greater").pvalue)


def sign_test_wins_needed(n: int, alpha: float) -> Optional[int]:
    """Fewest wins of n paired rounds that sign_test_p accepts at `alpha`;
    None when even n of n is not enough."""
    return next((w for w in range(n + 1) if sign_test_p(w, n) <= alpha), None)


# ---- compare: did a measurement move between two runs? ----

def median_ratio_bootstrap(a, b, rng, resamples: int,
                           confidence: float = 0.95) -> tuple[float, float, float, float]:
    """(median(b) / median(a), its percentile interval, the two-sided p of
    a ratio of 1) by scipy.stats.bootstrap, each sample resampled on its own:
    the median of a few rounds of a noisy machine has no usable formula for
    its spread, and resampling needs none.  `rng`, a seeded
    numpy.random.Generator, makes the result reproducible."""
    import numpy as np
    stats = load()
    a_arr, b_arr = np.asarray(a, float), np.asarray(b, float)
    point = float(np.median(b_arr) / np.median(a_arr))

    def ratio_of_medians(x, y, axis):
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    # scipy resamples only samples of two or more; one value resampled is
    # that value, and so is that value twice.
    data = tuple(np.repeat(x, 2) if len(x) == 1 else x for x in (a_arr, b_arr))
    res = stats.bootstrap(data, ratio_of_medians, n_resamples=resamples, vectorized=True, axis=-1,
                          method="percentile", confidence_level=confidence, random_state=rng)
    r = res.bootstrap_distribution
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    # The p-value that inverts the percentile interval: the smallest level
    # at which the interval leaves out 1.
    tail = min(float(np.mean(r <= 1.0)), float(np.mean(r >= 1.0)))
    if tail > 0:
        return point, lo, hi, min(1.0, 2 * tail)
    # No resample reached 1: the p-value is below the resampling's
    # resolution, 2/resamples, too coarse once Benjamini-Hochberg multiplies
    # it by hundreds of measurements.  The normal approximation of the
    # resampled log-ratios tells a clear change from a marginal one.
    sd = float(np.std(np.log(r)))
    p = 2 * float(stats.norm.sf(abs(math.log(point)) / sd)) if sd > 0 else 0.0
    return point, lo, hi, min(p, 2.0 / (resamples + 1))


def signed_rank_p(xs) -> float:
    """Two-sided p of values such as a series' log changes, one per size,
    being centred on 0: scipy.stats.wilcoxon's signed-rank test (zeros
    split between the signs: a quantised timer makes many changes exactly 0,
    which lean neither way)."""
    import numpy as np
    arr = np.asarray(xs, float)
    if not np.any(arr):
        return 1.0
    return float(load().wilcoxon(arr, zero_method="zsplit").pvalue)


def walsh_averages(xs):
    """The Walsh averages (x_i + x_j) / 2, i <= j, of xs (a numpy array)."""
    import numpy as np
    arr = np.asarray(xs, float)
    i, j = np.triu_indices(len(arr))
    return (arr[i] + arr[j]) / 2


def walsh_median(xs) -> float:
    """The Hodges-Lehmann estimate of xs' centre alone: the median of the
    Walsh averages."""
    import numpy as np
    return float(np.median(walsh_averages(xs)))


def hodges_lehmann(xs, confidence: float) -> tuple[float, float, float]:
    """(the Hodges-Lehmann estimate of xs' centre, its interval): the
    estimate the signed-rank test judges, the median of the Walsh averages
    (x_i + x_j) / 2, i <= j, and the interval of the shifts d the test does
    not reject at 1 - confidence, found by asking scipy.stats.wilcoxon of
    xs - d.  The interval's ends are Walsh averages; between two neighbouring
    ones nothing ties or is 0, so each is asked at the midpoint, and the p of
    the test falls monotonically away from the estimate on either side (a
    bisection).  The interval holds 0 exactly when the test at that level
    does not reject, which is what makes a verdict and its interval agree."""
    import numpy as np
    wilcoxon = load().wilcoxon
    arr = np.asarray(xs, float)
    averages = walsh_averages(arr)
    walsh = np.unique(averages)
    est = float(np.median(averages))
    if len(walsh) == 1:
        return est, est, est
    alpha = 1 - confidence
    # probe k >= 1 lies between walsh[k - 1] and walsh[k]; the first and last
    # lie beyond every Walsh average (kept there only when xs are too few for
    # the test to reject anything: the interval is unbounded)
    probes = np.concatenate(([walsh[0] - 1], (walsh[:-1] + walsh[1:]) / 2, [walsh[-1] + 1]))

    def kept(k: int) -> bool:
        return float(wilcoxon(arr - probes[k], zero_method="zsplit").pvalue) > alpha

    def first(lo: int, hi: int, want: bool) -> int:
        """The first k in [lo, hi) with kept(k) == want (kept flips once there), else hi."""
        while lo < hi:
            k = (lo + hi) // 2
            if kept(k) == want:
                hi = k
            else:
                lo = k + 1
        return lo

    centre = int(np.searchsorted(probes, est))     # probes[:centre] lie below the estimate
    k_low = first(0, centre, True)                 # the lowest kept probe below the estimate
    k_high = first(centre, len(probes), False) - 1   # the highest kept probe from it upwards
    low = est if k_low == centre else -math.inf if k_low == 0 else float(walsh[k_low - 1])
    high = (est if k_high < centre else math.inf if k_high == len(probes) - 1
            else float(walsh[k_high]))
    return est, min(low, est), max(high, est)


def separation_p(n: int, m: int) -> float:
    """Two-sided p of n and m samples falling completely apart by chance:
    the exact Mann-Whitney U test (scipy.stats.mannwhitneyu) of fully
    separated ranks, for records that keep only their range."""
    return float(load().mannwhitneyu(range(n), range(n, n + m), method="exact",
                                     alternative="two-sided").pvalue)


def t3_two_sided_p(t: float) -> float:
    """P(|T| >= t) for Student's t with 3 degrees of freedom
    (scipy.stats.t.sf): a busy machine's noise has heavier tails than the
    normal's."""
    return min(1.0, 2 * float(load().t.sf(abs(t), 3)))


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= t) for Student's t with df degrees of freedom (scipy.stats.t.sf;
    the normal's where df is infinite)."""
    st = load()
    sf = st.norm.sf(abs(t)) if math.isinf(df) else st.t.sf(abs(t), df)
    return min(1.0, 2 * float(sf))


def mean_beyond_zero_p(xs, greater: bool) -> float:
    """One-sided p that the mean of xs is above (greater) or below zero:
    the one-sample t test over few independent values (scipy.stats.ttest_1samp).
    Identical values (to rounding): 0 when they lie on the side asked, else 1."""
    xs = list(xs)
    if len(xs) < 2:
        return 1.0
    if max(xs) - min(xs) <= 1e-12 * max(1.0, abs(xs[0])):   # scipy's t is undefined there
        return 0.0 if (xs[0] > 0 if greater else xs[0] < 0) else 1.0
    return float(load().ttest_1samp(xs, 0.0, alternative="greater" if greater else "less").pvalue)


def robust_scale(xs, center: float) -> float:
    """The noise's standard deviation read from its median absolute
    deviation from `center` (scipy.stats.median_abs_deviation,
    scale="normal"): the few values that really moved do not widen it."""
    import numpy as np
    return float(load().median_abs_deviation(np.asarray(xs, float), center=lambda x, axis: center,
                                             scale="normal"))


def quantile_scale(xs, q: float) -> float:
    """The SD of a normal noise whose |x| has the q-quantile of xs'
    (numpy.quantile over scipy.stats.norm.ppf): unlike the median absolute
    deviation it is not 0 where a quantised timer ties half the values at
    exactly 0 and the rest scatter, and it ignores the 1 - q largest."""
    import numpy as np
    return float(np.quantile(np.abs(np.asarray(xs, float)), q)) / float(load().norm.ppf((1 + q) / 2))


def clipped_null(values: list[float], center: Optional[float], clip: float,
                 min_kept: int) -> tuple[float, float]:
    """(center, scale) of values that are mostly noise: the median (unless
    `center` is given) and robust_scale, estimated again over the values
    within `clip` scales of the last estimate until that set stops changing
    (or would fall below min_kept), so the values that moved are set aside
    instead of widening the noise the rest are judged against."""
    import numpy as np
    values = np.sort(np.asarray(values, float))
    kept = values
    for _ in range(len(values)):
        mid = float(np.median(kept)) if center is None else center
        scale = robust_scale(kept, mid)
        inside = values[np.abs(values - mid) <= clip * scale]
        if np.array_equal(inside, kept) or len(inside) < min_kept:
            break
        kept = inside
    return mid, scale


def one_sided_p(two_sided: float, toward: bool) -> float:
    """The one-sided p of a symmetric two-sided test, in the direction the
    result leaned (`toward`) or against it."""
    return two_sided / 2 if toward else 1 - two_sided / 2


def all_lean_p(one_sided: list[float], independent: Optional[float] = None) -> float:
    """Two-sided p of k independent results all leaning one way at least as
    far as the weakest of them: the largest of k uniform p-values is
    Beta(k, 1) (scipy.stats.beta), doubled for the direction not taken.
    `independent`: as many independent results as k correlated ones are
    worth (fewer), where their noise moves together."""
    k = len(one_sided) if independent is None else independent
    return min(1.0, 2 * float(load().beta.cdf(max(one_sided), k, 1)))


def bonferroni_min_p(ps: list[float]) -> float:
    """The smallest of several p-values from looks at the same data,
    Bonferroni-corrected (k x the smallest): scipy has no routine for it,
    and overlapping looks are not independent, which rules out Sidak's
    (scipy.stats.combine_pvalues' Tippett)."""
    return min(1.0, len(ps) * min(ps))


def benjamini_hochberg(ps: list[float]) -> list[float]:
    """Adjusted p-values (q-values) of many measurements compared at once,
    same order as ps, by scipy.stats.false_discovery_control (method "bh"):
    of the changes flagged at q < FDR, about FDR are expected to be noise."""
    if not ps:
        return []
    return [float(q) for q in load().false_discovery_control(ps, method="bh")]


# ---- memkit try: the median speed-up and its interval ----

def median_interval(values, confidence: float) -> tuple[float, float]:
    """The distribution-free interval of the median from binomial order
    statistics (scipy.stats.quantile_test): it assumes nothing about the
    noise's shape, which on a shared machine has long tails."""
    import numpy as np
    values = np.asarray(values, float)
    ci = load().quantile_test(values, q=float(np.median(values)), p=0.5).confidence_interval(confidence)
    return float(ci.low), float(ci.high)


# ---- report: how widely per-round ratios scatter ----

def quartiles(xs) -> tuple[float, float]:
    """The 25th and 75th percentiles (numpy.quantile, linear interpolation)."""
    import numpy as np
    q1, q3 = np.quantile(np.asarray(xs, float), [0.25, 0.75])
    return float(q1), float(q3)


def geomean(xs) -> Optional[float]:
    """The geometric mean of the positive values (scipy.stats.gmean); None without any."""
    xs = [x for x in xs if x and x > 0]
    return float(load().gmean(xs)) if xs else None
