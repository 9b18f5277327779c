# SPDX-License-Identifier: Apache-2.0
"""A known regression put into a copy of real measurements, for the tests
that check the judge catches it."""

import copy


def slowed(ms: list[dict], experiment: str, series: str, factor: float) -> list[dict]:
    """A copy of a run's measurements with one series `factor` times slower:
    its times longer (throughputs lower) and its speed-ups over its baseline
    smaller, in every sample."""
    out = copy.deepcopy(ms)
    for m in out:
        if m["experiment"] != experiment or m["series"] != series:
            continue
        f = factor if m.get("better", "lower") == "lower" else 1 / factor
        for k in ("value", "min", "median", "max"):
            if m.get(k) is not None:
                m[k] *= f
        for k in ("sample_values", "process_samples"):
            if m.get(k):
                m[k] = [x * f for x in m[k]]
        for k in ("ratio", "ratio_min", "ratio_max"):
            if m.get(k) is not None:
                m[k] /= factor
        for k in ("ratios", "process_ratios"):
            if m.get(k):
                m[k] = [x / factor for x in m[k]]
    return out


def slowed_at(ms: list[dict], experiment: str, series: str, where, factor: float) -> list[dict]:
    """slowed() at the measurements `where(params)` picks only: a band of
    sizes, at some other params' values the series' own."""
    hit = [m for m in ms if m["experiment"] == experiment and m["series"] == series and where(m["params"])]
    ids = {id(m) for m in hit}
    out = []
    for m in ms:
        out.append(slowed([m], experiment, series, factor)[0] if id(m) in ids else m)
    return out
