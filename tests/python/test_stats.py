# SPDX-License-Identifier: Apache-2.0
"""memkit.judging.stats: each decision's numbers against values worked out by hand
or read from tables (and R, where R has the routine)."""

import math

import numpy as np
import pytest

from memkit.judging import stats


def test_sign_test_p():
    # 9 wins of 10: P(X >= 9) = (C(10,9) + C(10,10)) / 2^10 = 11/1024.
    assert stats.sign_test_p(9, 10) == pytest.approx(11 / 1024, rel=1e-12)
    assert stats.sign_test_p(7, 7) == pytest.approx(1 / 128, rel=1e-12)
    # 6 of 7: (7 + 1) / 128; one-sided, so 0 wins of 5 is no evidence at all.
    assert stats.sign_test_p(6, 7) == pytest.approx(8 / 128, rel=1e-12)
    assert stats.sign_test_p(0, 5) == 1.0
    assert stats.sign_test_p(0, 0) == 1.0


def test_sign_test_wins_needed():
    # 7 of 7: 1/128 <= 0.01 but 6 of 7: 8/128 > 0.01.  11 of 12: 13/4096 =
    # 0.0032, 10 of 12: 79/4096 = 0.019.  5 of 5 is 1/32 = 0.031: never.
    assert stats.sign_test_wins_needed(7, 0.01) == 7
    assert stats.sign_test_wins_needed(12, 0.01) == 11
    assert stats.sign_test_wins_needed(5, 0.01) is None
    assert stats.sign_test_wins_needed(5, 0.05) == 5


def test_benjamini_hochberg_matches_r():
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.5), "BH").  By hand: sorted
    # 0.01 0.03 0.04 0.5 times n/rank = 0.04 0.06 0.0533 0.5, then the
    # running minimum from the largest down: 0.04 0.0533 0.0533 0.5.
    q = stats.benjamini_hochberg([0.01, 0.04, 0.03, 0.5])
    assert q == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5], rel=1e-12)
    # R: p.adjust(c(0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205), "BH")
    # = 0.008 0.032 0.0672 0.0672 0.0672 0.08 0.0845714 0.205.
    q = stats.benjamini_hochberg([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205])
    assert q == pytest.approx([0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.592 / 7, 0.205], rel=1e-12)
    # 0.5 x 2/1 = 1.0 is lowered to the 0.9 above it: q-values never fall as p rises.
    assert stats.benjamini_hochberg([0.5, 0.9]) == pytest.approx([0.9, 0.9], rel=1e-12)
    assert stats.benjamini_hochberg([]) == []


def test_t3_two_sided_p():
    assert stats.t3_two_sided_p(0) == 1.0
    # The t table's 97.5% and 99.5% points for 3 degrees of freedom.
    assert stats.t3_two_sided_p(3.182) == pytest.approx(0.05, abs=1e-4)
    assert stats.t3_two_sided_p(-3.182) == stats.t3_two_sided_p(3.182)
    assert stats.t3_two_sided_p(5.841) == pytest.approx(0.01, abs=1e-4)
    # Closed form for 3 df: 1 - (2/pi) (u / (1 + u^2) + atan u), u = t / sqrt 3.
    u = 2 / math.sqrt(3)
    assert stats.t3_two_sided_p(2) == pytest.approx(1 - 2 / math.pi * (u / (1 + u * u) + math.atan(u)), rel=1e-9)


def test_separation_p():
    # Two of the C(n+m, n) equally likely orders put the samples completely apart.
    assert stats.separation_p(3, 3) == pytest.approx(0.1, rel=1e-12)
    assert stats.separation_p(9, 9) == pytest.approx(2 / math.comb(18, 9), rel=1e-9)
    assert stats.separation_p(2, 5) == pytest.approx(2 / math.comb(7, 2), rel=1e-9)
    assert stats.separation_p(1, 1) == 1.0


def test_robust_scale():
    # |x - 3| = 2 1 0 1 7: median 1; around 0 the median of 1 2 3 4 10 is 3.
    # 1 / Phi^-1(0.75) = 1.482602...
    assert stats.robust_scale([1, 2, 3, 4, 10], 3.0) == pytest.approx(1.482602, rel=1e-6)
    assert stats.robust_scale([1, 2, 3, 4, 10], 0.0) == pytest.approx(3 * 1.482602, rel=1e-6)
    # Normal noise: its standard deviation, whatever a few outliers do.
    x = np.random.default_rng(1).normal(0, 2.0, 20000)
    x[:100] = 1e6
    assert stats.robust_scale(x, 0.0) == pytest.approx(2.0, rel=0.03)


def test_clipped_null_sets_the_moved_values_aside():
    # 60 values of noise (SD 0.01) and 40 that moved by 0.5: the median
    # absolute deviation about 0 of them all is about twice the noise's
    # SD; clipped, the moved values no longer count.
    g = np.random.default_rng(2)
    values = list(g.normal(0, 0.01, 60)) + [0.5] * 40
    assert stats.robust_scale(values, 0.0) > 0.018
    center, scale = stats.clipped_null(values, 0.0, 3.0, 8)
    assert center == 0.0 and 0.007 < scale < 0.013
    center, scale = stats.clipped_null(list(g.normal(0.2, 0.01, 50)) + [3.0] * 5, None, 3.0, 8)
    assert center == pytest.approx(0.2, abs=0.005) and 0.007 < scale < 0.013


def test_quantile_scale():
    # The 80th percentile of |N(0, 1)| is 1.2816: a normal noise's SD back.
    g = np.random.default_rng(3)
    assert stats.quantile_scale(g.normal(0, 0.1, 4000), 0.8) == pytest.approx(0.1, rel=0.05)
    # A quantised timer ties most changes at 0: not 0 while a fifth moved ...
    ties = [0.0] * 70 + list(g.normal(0, 0.1, 30))
    assert stats.quantile_scale(ties, 0.8) > 0.02 and stats.robust_scale(ties, 0.0) == 0.0
    # ... and the largest fifth (the changes that moved) widen it by little, not by their size.
    moved = list(g.normal(0, 0.1, 80)) + [2.0] * 19
    assert stats.quantile_scale(moved, 0.8) < 0.3 < 0.5 < np.std(moved)


def test_t_two_sided_p():
    assert stats.t_two_sided_p(1.959964, math.inf) == pytest.approx(0.05, rel=1e-4)
    assert stats.t_two_sided_p(-3.182446, 3) == pytest.approx(stats.t3_two_sided_p(3.182446)) == pytest.approx(0.05, rel=1e-4)


def test_median_ratio_bootstrap():
    a = [10.0, 10.5, 9.8, 10.2, 10.1]
    b = [15.0, 15.4, 14.9, 15.2, 15.1]
    ratio, lo, hi, p = stats.median_ratio_bootstrap(a, b, np.random.default_rng(5), 2000)
    assert ratio == pytest.approx(15.1 / 10.1)
    # The interval's ends are ratios of resampled medians: within the
    # extremes of b over a, holding the point.
    assert 14.9 / 10.5 <= lo <= ratio <= hi <= 15.4 / 9.8
    # No resample reaches 1: below the resampling's resolution.
    assert p < 2 / 2001
    # Seeded: the same result again; the samples the same: nothing to see.
    assert stats.median_ratio_bootstrap(a, b, np.random.default_rng(5), 2000) == (ratio, lo, hi, p)
    assert stats.median_ratio_bootstrap(a, a, np.random.default_rng(5), 2000)[3] == 1.0
    # One value on a side is resampled as itself.
    ratio, lo, hi, p = stats.median_ratio_bootstrap([10.0], b, np.random.default_rng(5), 2000)
    assert ratio == pytest.approx(1.51) and 1.49 <= lo <= hi <= 1.54


def test_median_ratio_bootstrap_p_is_the_interval_inverted():
    # The p-value is the level at which the interval just reaches 1.
    # (The medians of resampled samples are sample values: the ratios
    # near 1 are a few discrete steps apart.)
    a = [8.5, 9.0, 9.4, 9.7, 10.0, 10.3, 10.6, 11.0, 11.5]
    b = [x + 0.8 for x in a]
    _, lo, _, p = stats.median_ratio_bootstrap(a, b, np.random.default_rng(7), 4000)
    assert 0.05 < p < 0.5 and lo < 1
    _, lo, _, _ = stats.median_ratio_bootstrap(a, b, np.random.default_rng(7), 4000, confidence=1 - p)
    assert lo == pytest.approx(1.0, abs=0.01)


def test_one_sided_and_coherent_p():
    assert stats.one_sided_p(0.1, True) == pytest.approx(0.05) and stats.one_sided_p(0.1, False) == pytest.approx(0.95)
    # Three results, each at most 0.3 one-sided: 0.3^3, twice for either direction.
    assert stats.all_lean_p([0.1, 0.2, 0.3]) == pytest.approx(2 * 0.3 ** 3, rel=1e-9)
    assert stats.all_lean_p([0.9, 0.9, 0.9]) == 1.0
    assert stats.bonferroni_min_p([0.01, 0.2, 0.5]) == pytest.approx(0.03)
    assert stats.bonferroni_min_p([0.4, 0.5, 0.6]) == 1.0


def test_median_interval():
    # Order statistics: with 6 values their range holds the median with
    # 1 - 2/2^6 = 96.9%; with 12, the 3rd..10th with 1 - 2 P(B(12, 1/2) <= 2) = 96.1%.
    six = [1.3, 1.1, 1.2, 1.25, 1.15, 1.4]
    assert stats.median_interval(six, 0.95) == (1.1, 1.4)
    twelve = [1.0 + i / 100 for i in range(12)]
    assert stats.median_interval(twelve, 0.95) == (twelve[2], twelve[9])


def test_quartiles():
    # R's quantile(1:5, c(.25, .75)) and quantile(1:4, ...), its default type 7.
    assert stats.quartiles([5, 1, 4, 2, 3]) == (2.0, 4.0)
    assert stats.quartiles([1, 2, 3, 4]) == (1.75, 3.25)
