# SPDX-License-Identifier: Apache-2.0
"""A recorded program's working set: how many distinct lines its calls
draw from, estimated from record.c's windows of sampled lines, and the
working set size-distributions replays that estimate at."""

from __future__ import annotations

import math
from typing import Optional

from memkit.lab.sizes import fmt_size


LINE = 64         # the estimator draws 64-byte lines


# ---- the working set ----
#
# record.c samples calls and draws lines of each sampled call (one per 2
# KiB, 1 to 64) per side into windows; a window of K draws that found D
# distinct lines says, if the calls' lines come from a region of P lines,
# D = P (1 - e^(-K/P)).  Each window's P, weighted by its draws; their
# median per side; the larger side per function (a copy waits for its
# slower side).  That P is the lab's working-set parameter (random lines of
# an arena per side), so the replay runs at it.

# Fewer draws than this (per side) make no estimate: too few calls sampled.
MIN_DRAWS = 16


def counting_noise(draws: int, bits: int) -> float:
    """The standard deviation of linear counting's distinct count (Whang et
    al. 1990): the hash collisions it corrects for on average but not each time."""
    t = draws / bits
    return math.sqrt(bits * (math.expm1(t) - t))


def region_lines(distinct: float, draws: int, bits: int) -> float:
    """P with P (1 - e^(-draws/P)) = distinct: the lines a window's draws came
    from; inf where the draws repeat no more than the counting's noise (5
    standard deviations, and at least 3 draws): no reuse seen, a region
    larger than the window tells.  At 3 standard deviations a stride over
    256 MiB (~2000 draws) read as a 7 MiB region in 1 recording of 30: the
    counting's tail is wider than a normal one's."""
    if draws - distinct <= max(3.0, 5 * counting_noise(draws, bits)):
        return math.inf
    return _solve_region(distinct, draws)


def _solve_region(distinct: float, draws: float) -> float:
    """P with P (1 - e^(-draws/P)) = distinct < draws (bisection: it rises with P)."""
    distinct = max(distinct, 1.0)
    lo, hi = distinct, distinct
    while hi * -math.expm1(-draws / hi) < distinct:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if mid * -math.expm1(-draws / mid) < distinct:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# Fewer draws at the earlier point cannot tell a share from a region: 4 KiB
# copies of one buffer (64 lines a side, ~70 draws there) read as 14-24%
# cold in 2 recordings of 6.
MIXTURE_MIN_DRAWS = 1024


def occupancy_variance(draws: float, region: float) -> float:
    """The variance of the distinct lines among `draws` uniform draws from
    `region` lines (which lines the draws happened to hit)."""
    if not region or math.isinf(region) or region < 2:
        return 0.0
    p, k = region, draws
    return max(0.0, p * (p - 1) * (1 - 2 / p) ** k + p * (1 - 1 / p) ** k - p * p * (1 - 1 / p) ** (2 * k))


def lines_after(draws: float, cold: float, region: float) -> float:
    """Distinct lines after `draws` draws, a share `cold` of them lines never
    drawn before, the rest from `region` lines."""
    hot = (1 - cold) * draws
    return cold * draws + (region * -math.expm1(-hot / region) if region > 0 and hot > 0 else 0.0)


def mixture(distinct: float, draws: int, half: Optional[tuple], bits: int) -> tuple[float, float]:
    """(cold share, region lines) of one window: the share of its draws that
    found lines never seen (from beyond any cache) and the region the others
    came from, fitted to its distinct lines at an earlier point (half:
    (distinct, draws), record.c's windows_half: half a closed window) and
    at all its draws.  One region finds fewer new lines as it fills; a few
    lines reused with a share of new ones find new ones at a steady rate.
    A cold share of 0 where the two points are one region's within the
    counting's noise (3 standard deviations), or where the earlier point is
    unknown (region_lines alone); 1 where nothing was reused."""
    region = region_lines(distinct, draws, bits)
    if math.isinf(region):
        return 1.0, math.inf
    if half is None or half[1] < MIXTURE_MIN_DRAWS:
        return 0.0, region
    half, half_draws = half
    noise = math.sqrt(counting_noise(half_draws, bits) ** 2 + occupancy_variance(half_draws, region))
    if lines_after(half_draws, 0.0, region) - half <= 3 * noise:
        return 0.0, region
    best = (math.inf, 0.0, region)
    top = distinct / draws
    for i in range(1, 201):
        cold = top * i / 200
        rest = distinct - cold * draws
        hot_draws = (1 - cold) * draws
        if rest >= hot_draws:
            continue   # the rest would be all new too: no region
        p = _solve_region(rest, hot_draws) if rest > 0 else 0.0
        err = abs(lines_after(half_draws, cold, p) - half)
        if err < best[0]:
            best = (err, cold, p)
    return best[1], best[2]


def _weighted_median(pairs) -> float:
    """The median of values weighted (value, weight)."""
    pairs = sorted(pairs)
    half, run = sum(w for _, w in pairs) / 2, 0
    for v, w in pairs:
        run += w
        if run >= half:
            return v
    return pairs[-1][0]


def side_lines(windows) -> tuple[Optional[float], float, int]:
    """(region lines or inf or None, cold share, draws) of one side's
    windows: the weighted medians of their mixtures (see mixture)."""
    draws = sum(w[1] * w[2] for w in windows)
    if draws < MIN_DRAWS:
        return None, 0.0, draws
    # A window of a few draws cannot show reuse (a short-lived process's):
    # it reads as no reuse, so it counts only where no window is larger.
    telling = [w for w in windows if w[1] >= MIN_DRAWS] or windows
    fits = [(mixture(d, k, half, bits), k * n) for d, k, n, bits, half in telling]
    return (_weighted_median([(region, wt) for (_, region), wt in fits]),
            _weighted_median([(cold, wt) for (cold, _), wt in fits]), draws)


# The hot layout of size-distributions keeps each side in a window of 64
# lines (WINDOW_LINES in bench/experiments/exp_size_distributions.c): a
# working set no larger is what `hot` already replays.
HOT_BYTES = 64 * LINE


def replay_ws(bytes_per_side: Optional[float], sides: int, l3_bytes: Optional[int]) -> Optional[str]:
    """The working set size-distributions replays an estimate at: "hot" up to
    the hot layout's window, "dram" beyond the L3 (all sides together) or
    where no reuse was seen, else the estimate as a size (the nearest power
    of two: "256K").  None without an estimate."""
    if bytes_per_side is None:
        return None
    if math.isinf(bytes_per_side) or (l3_bytes and bytes_per_side * sides > l3_bytes):
        return "dram"
    if bytes_per_side <= HOT_BYTES:
        return "hot"
    size = 1 << min(30, max(13, round(math.log2(bytes_per_side))))
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if size >= unit:
            return f"{size // unit}{suffix}"
    return str(size)


def ws_text(entry: Optional[dict]) -> str:
    """'256 KiB per side: ws=256K', for the closing lines and the report."""
    if not entry or not entry.get("ws"):
        return ("no estimate (too few calls sampled)" if entry else
                "no estimate (recorded before memkit estimated working sets)")
    if entry.get("no_reuse_seen"):
        size = "no reuse seen (beyond the caches)"
    else:
        size = f"{fmt_size(entry['bytes_per_side'])} per side"
    cold = entry.get("cold_fraction") or 0
    if 0 < cold < 1:
        return f"{size}, {cold:.0%} of the calls' lines from beyond the caches: ws={entry['ws']} and dram"
    return f"{size}: ws={entry['ws']}"
