# SPDX-License-Identifier: Apache-2.0
"""compare: the statistical test, the headline metric, fingerprint changes,
and the command's text, JSON and exit status, on synthetic runs."""

import json
import math
import random

from conftest import FINGERPRINT, run_cli
from memkit.comparison.two_runs import fingerprint_banner
from memkit.comparison import compare as cmp
from memkit.results.result import Result
from memkit.lab.fingerprint import changed_keys, differences
from memkit.store.db import Database


def m(series, size, value, noise=0.01, rng=None, n=9, processes=0, metric="ns_per_call", unit="ns",
      better="lower", experiment="exp"):
    """A format 2 measurement whose samples scatter by `noise` around value."""
    rng = rng or random.Random(repr((series, size)))   # hash() of a str differs per process: not reproducible
    rounds = [value * (1 + rng.uniform(-noise, noise)) for _ in range(n)]
    d = {"experiment": experiment, "series": series, "params": {"size": size}, "metric": metric, "unit": unit,
         "better": better, "value": value, "min": min(rounds), "median": value, "max": max(rounds),
         "samples": rounds, "axis": {"name": "size", "unit": "B"}}
    if processes:
        d["process_samples"] = [value * (1 + rng.uniform(-noise, noise)) for _ in range(processes)]
    return d


def run_of(rng, regress=None, factor=1.3, noise=0.03, processes=0, drift=0.0):
    out = []
    for s in ("glibc", "memkit"):
        for i in range(25):
            size = 16 << i
            v = 500.0 * (1 + drift)
            if regress and (s, size) == regress:
                v *= factor
            out.append(m(s, size, v, noise=noise, rng=rng, processes=processes))
    return out


def test_identical_runs_flag_nothing():
    rng = random.Random(1)
    for processes in (0, 5):
        res = cmp.compare_measurements(run_of(rng, processes=processes), run_of(rng, processes=processes))
        assert len(res.changes) == 50 and res.flagged == []


def test_identical_runs_flag_at_most_at_the_nominal_rate():
    # The rule's promise, over many comparisons of runs drawn from the same
    # distribution: a p-value below FDR in at most about FDR of the
    # measurements, and (every one of them unchanged) a comparison flagging
    # anything at most about FDR of the time (Benjamini-Hochberg).  Noise
    # of +-20% between 3 processes, the fewest read per process, puts most
    # ratios beyond the minimum effect: the p-values alone must hold the
    # flags back.  Then the lab's paired records (9 rounds of 10 sizes).
    from scipy.stats import binom
    rng = random.Random(2024)
    comparisons = [(run_of(rng, noise=0.2, processes=3), run_of(rng, noise=0.2, processes=3)) for _ in range(40)]
    sizes = [64 << i for i in range(10)]
    comparisons += [(lab_run(rng, sizes, pair_noise=0.1), lab_run(rng, sizes, pair_noise=0.1)) for _ in range(20)]
    judged = low_p = flagging = beyond = 0
    for a, b in comparisons:
        res = cmp.compare_measurements(a, b)
        cs = [c for c in res.changes if c.judged]
        judged += len(cs)
        low_p += sum(c.p < cmp.FDR for c in cs)
        beyond += sum(abs(c.deviation) > math.log1p(c.min_effect) for c in cs)
        flagging += bool(res.flagged)
    assert judged == 60 * 50 and beyond > judged / 3    # the noise is not held back by the minimum effect
    # Sampling slack: the 99th percentile of the count at exactly the nominal rate.
    assert low_p <= binom.ppf(0.99, judged, cmp.FDR), low_p / judged
    assert flagging <= binom.ppf(0.99, len(comparisons), cmp.FDR), flagging / len(comparisons)


def test_a_machine_wide_shift_is_one_shift_not_many_changes():
    # Every measurement 25% slower: the machine (busy, throttled), reported
    # once as the experiment's shift.
    rng = random.Random(2)
    res = cmp.compare_measurements(run_of(rng, noise=0.01), run_of(rng, noise=0.01, drift=0.25))
    assert res.flagged == [] and 1.2 < res.shifts["exp"] < 1.3
    # A regression on top of the shift is still found, and judged against it
    # (in processes: one size alone, in one process's rounds, could be placement).
    res = cmp.compare_measurements(run_of(rng, noise=0.01, processes=5),
                                   run_of(rng, noise=0.01, processes=5, drift=0.25, regress=("memkit", 1024),
                                          factor=1.5))
    (c,) = res.flagged
    assert c.params == {"size": 1024} and c.direction == "worse" and 1.45 < c.ratio / c.shift < 1.55


def test_the_minimum_effect_depends_on_the_samples():
    # 12% slower on a few measurements: clear in the rounds, but per-round
    # samples cannot see placement noise between processes; per-process ones can.
    rng = random.Random(5)
    def pair(processes):
        a = run_of(rng, noise=0.01, processes=processes)
        b = run_of(rng, noise=0.01, processes=processes)
        for m in b[:3]:
            for k in ("value", "min", "median", "max"):
                m[k] *= 1.12
            m["samples"] = [x * 1.12 for x in m["samples"]]
            if processes:
                m["process_samples"] = [x * 1.12 for x in m["process_samples"]]
        return cmp.compare_measurements(a, b)
    assert pair(0).flagged == []
    res = pair(5)
    assert len(res.flagged) == 3 and {c.direction for c in res.flagged} == {"worse"}


def test_heavy_tailed_noise_is_not_flagged():
    # A busy machine: most measurements scatter by a few %, a few by 2-5x
    # (a descheduled round), with ranges as wide as the jump.
    rng = random.Random(11)
    a, b = run_of(rng, noise=0.05), run_of(rng, noise=0.05)
    for m in b[::10]:
        jump = rng.choice([0.3, 0.5, 2.0, 4.0])
        m["samples"] = [x * rng.choice([1.0, jump]) for x in m["samples"]]
        m["value"] = sorted(m["samples"])[len(m["samples"]) // 2]
    assert cmp.compare_measurements(a, b).flagged == []


def test_only_the_regression_is_flagged_with_its_interval():
    rng = random.Random(7)
    a = run_of(rng, processes=5)
    b = run_of(rng, processes=5, regress=("memkit", 16 << 10), factor=1.5)
    b.append(m("new", 1, 1.0))
    res = cmp.compare_measurements(a, b)
    assert (res.only_a, res.only_b, len(res.changes)) == (0, 1, 50)
    (c,) = res.flagged
    assert (c.series, c.params, c.direction, c.basis) == ("memkit", {"size": 16 << 10}, "worse", "process")
    assert 1.4 < c.low <= c.ratio <= c.high < 1.6
    j = c.as_json()
    assert j["direction"] == "worse" and j["interval"] == [c.low, c.high] and 40 < j["change_pct"] < 60
    s = cmp.summarize(res.changes)[0]
    assert (s.compared, s.worse, s.better) == (50, 1, 0)
    assert 0.97 < s.geomean_ratio < 1.0     # one of 50 got 1.5x slower


def test_one_size_alone_in_one_process_needs_a_large_change():
    # 1.5x at one size, in rounds of one process each: identical quick runs
    # put a pair 1.4x apart in all its rounds now and then, so one size alone
    # is not enough; three neighbouring sizes are, and so is 4x.
    rng = random.Random(8)
    a = run_of(rng)
    assert cmp.compare_measurements(a, run_of(rng, regress=("memkit", 1024), factor=1.5)).flagged == []
    b = run_of(rng)
    for x in b:
        if x["series"] == "memkit" and x["params"]["size"] in (512, 1024, 2048):
            x["samples"] = [v * 1.5 for v in x["samples"]]
    res = cmp.compare_measurements(a, b)
    assert [c.params["size"] for c in res.flagged] == [512, 1024, 2048]
    (c,) = cmp.compare_measurements(a, run_of(rng, regress=("memkit", 1024), factor=4.0)).flagged
    assert c.params == {"size": 1024} and c.direction == "worse"


def test_direction_is_the_records():
    rng = random.Random(3)
    a = [m("x", 64, 10.0, rng=rng, metric="throughput", unit="GB/s", better="higher")]
    b = [m("x", 64, 5.0, rng=rng, metric="throughput", unit="GB/s", better="higher")]
    assert cmp.compare_measurements(a, b).flagged[0].direction == "worse"
    # The record says lower is better: a fall is better whatever the unit looks like.
    a[0]["better"] = b[0]["better"] = "lower"
    assert cmp.compare_measurements(a, b).flagged[0].direction == "better"


def test_one_headline_metric_per_measurement():
    rng = random.Random(4)
    def pair(ns):
        return [m("x", 64, ns, rng=rng), m("x", 64, 64 / ns, rng=rng, metric="GB/s", unit="GB/s", better="higher")]
    res = cmp.compare_measurements(pair(100.0), pair(200.0))
    assert len(res.changes) == 1 and res.changes[0].metric == "ns_per_call"
    assert res.changes[0].direction == "worse"


def test_old_format_records_use_their_range_conservatively():
    def old(v, spread, n=9):
        return {"experiment": "e", "series": "s", "params": {"size": 8}, "metric": "ns_per_call", "unit": "ns",
                "value": v, "min": v * (1 - spread), "median": v, "max": v * (1 + spread), "samples": n}
    res = cmp.compare_measurements([old(100, 0.01)], [old(115, 0.01)])
    assert res.changes[0].basis == "range" and res.flagged == []    # 15%: within placement noise
    res = cmp.compare_measurements([old(100, 0.01)], [old(200, 0.01)])
    assert res.flagged[0].direction == "worse"
    # 3 rounds each: even completely apart, that happens by chance (p = 0.1).
    assert cmp.compare_measurements([old(100, 0.01, 3)], [old(200, 0.01, 3)]).flagged == []
    # Ranges that overlap once the change is removed: not flagged, however large the ratio.
    res = cmp.compare_measurements([old(100, 0.5)], [old(200, 0.5)])
    assert res.flagged == []


def test_short_calls_in_one_process_are_not_judged_and_busy_runs_need_more():
    rng = random.Random(9)
    a = [m("x", 8, 2.0, rng=rng)]
    b = [m("x", 8, 4.0, rng=rng)]
    (c,) = cmp.compare_measurements(a, b).changes
    assert not c.judged and not c.flagged and c.as_json()["min_effect"] is None
    a[0]["process_samples"] = [2.0, 2.02]          # two processes say nothing about their spread
    b[0]["process_samples"] = [4.0, 4.02]
    (c,) = cmp.compare_measurements(a, b).changes
    assert c.basis == "round" and not c.judged
    a[0]["process_samples"] = [2.0, 2.02, 1.98, 2.01]
    b[0]["process_samples"] = [4.0, 4.02, 3.98, 4.01]
    (c,) = cmp.compare_measurements(a, b).changes
    assert c.basis == "process" and c.judged and c.flagged and c.direction == "worse"
    assert c.min_effect == cmp.SHORT_CALL_PROCESS_EFFECT
    # 30% slower: flagged on a quiet machine, not when either run was busy.
    a = [m("x", 4096, 100.0, rng=rng)]
    b = [m("x", 4096, 130.0, rng=rng)]
    assert cmp.compare_measurements(a, b).flagged
    assert not cmp.compare_measurements(a, b, busy=True).flagged


def test_fingerprint_changes_name_only_the_keys():
    fp2 = dict(FINGERPRINT, tunables="threads=0:memset=sse2", memkit_commit="def")
    assert changed_keys(FINGERPRINT, fp2) == ["tunables", "memkit_commit"]
    loud, quiet = differences(FINGERPRINT, fp2)
    assert loud == ["tunables: memset=sse2 added"] and quiet == ["memkit_commit: abc123 -> def"]
    assert differences(FINGERPRINT, dict(FINGERPRINT)) == ([], [])
    loud, _ = differences(FINGERPRINT, dict(FINGERPRINT, microcode="0xea"))
    assert loud == ["microcode: 0xa0 -> 0xea"]
    banner = fingerprint_banner(FINGERPRINT, dict(FINGERPRINT, microcode="0xea"))
    assert any("MACHINE CHANGED" in l and "microcode: 0xa0 -> 0xea" in l for l in banner)
    assert fingerprint_banner(FINGERPRINT, FINGERPRINT) == []


def _store(d, fp, ms):
    r = Result("exp", "seed", "desc", "ok", 1.0, [], fp, ms, ["v"], "", "")
    return d.store_run(started_at="t0", finished_at="t1", quick=False, fingerprint=fp, results=[r])


def test_compare_command(tmp_path):
    path = tmp_path / "m.db"
    rng = random.Random(3)
    with Database(path, create=True) as d:
        r1 = _store(d, FINGERPRINT, run_of(rng, processes=3))
        r2 = _store(d, FINGERPRINT, run_of(rng, processes=3))
        r3 = _store(d, dict(FINGERPRINT, tunables="threads=0:memset=sse2"),
                    run_of(rng, processes=3, regress=("glibc", 4096), factor=2.0))
    p = run_cli("compare", "--db", path, "--json", "--fail-on-regression", r1, r2)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert (j["machine_changed"], j["changes"], j["compared"]) == ([], [], 50)
    p = run_cli("compare", "--db", path, "--json", "--fail-on-regression")   # the last two: 2 -> 3
    assert p.returncode == 1, p.stderr
    j = json.loads(p.stdout)
    assert j["machine_changed"] == ["tunables"] and j["machine_changes"] == ["tunables: memset=sse2 added"]
    (c,) = j["changes"]
    assert (c["experiment"], c["series"], c["params"], c["metric"], c["direction"]) == \
        ("exp", "glibc", {"size": 4096}, "ns_per_call", "worse")
    assert c["interval"][0] > 1.8
    p = run_cli("compare", "--db", path, r2, r3)
    assert p.returncode == 0, p.stderr
    assert "THE MACHINE CHANGED BETWEEN THESE RUNS: tunables: memset=sse2 added" in p.stdout
    assert "1 worse" in p.stdout and "WORSE" in p.stdout and "size=4 KiB" in p.stdout
    p = run_cli("compare", "--db", path, "--all", r1, r2)
    assert p.stdout.count("within noise") == 50 and "0 flagged" in p.stdout


# ---- runs timed as the lab times them: paired speed-ups over a baseline ----

SERIES = ("glibc", "mk_memset", "avx2", "sse2", "old")


def lab_run(rng, sizes, *, slower=lambda series, size, value: 1.0, drift=1.0, spell=0.15, round_noise=0.3,
            pair_noise=0.02, rounds=9, values=(0,), baseline="series", series=SERIES):
    """One run of a grid: per size and value every series in the same
    rounds, as the lab interleaves them.  A round's machine factor (drift x
    a loaded spell over that size x the round's own slowdown) is shared by
    the series timed in it, so absolute times scatter widely while the
    paired speed-ups, over the first series (baseline="series") or over the
    series' own fill with the last value (baseline="value"), stay tight."""
    out = {}
    for size in sizes:
        spell_factor = math.exp(rng.gauss(0, spell))
        for value in values:
            machine = [drift * spell_factor * math.exp(abs(rng.gauss(0, round_noise))) for _ in range(rounds)]
            for k, s in enumerate(series):
                true = (100 + size / 8) * (1 + 0.1 * k) * slower(s, size, value)
                out[(s, size, value)] = [true * f * math.exp(rng.gauss(0, pair_noise)) for f in machine]
    ms = []
    for (s, size, value), times in out.items():
        base = (series[0], size, value) if baseline == "series" else (s, size, values[-1])
        rec = {"experiment": "grid", "series": s, "params": {"size": size, "value": value},
               "metric": "ns_per_call", "unit": "ns", "better": "lower", "axis": {"name": "size", "unit": "B"},
               "value": sorted(times)[len(times) // 2], "samples": times}
        if base != (s, size, value):
            rec["baseline"] = {"series": base[0], "params": {"size": size, "value": base[2]}}
            rec["ratios"] = [b / t for b, t in zip(out[base], times)]
        ms.append(rec)
    return ms


SIZES = [64 << i for i in range(24)]


def test_a_drifting_machine_with_steady_pairs_flags_nothing():
    # Every time 15% slower in B, each size's rounds and spell scattering by
    # tens of %: the pairs did not move, and neither did anything else.
    for seed in (21, 41):
        rng = random.Random(seed)
        res = cmp.compare_measurements(lab_run(rng, SIZES, spell=0.3), lab_run(rng, SIZES, spell=0.3, drift=1.15))
        assert len(res.changes) == 120 and res.flagged == []
        assert sum(c.evidence == "paired" for c in res.changes) == 96
        assert 1.0 < res.shifts["grid"] < 1.5   # 15%, seen through 24 sizes' spells of 30%


def test_one_series_twice_as_slow_at_every_size_on_a_noisy_machine():
    rng = random.Random(22)
    a = lab_run(rng, SIZES, round_noise=0.4, spell=0.25)
    b = lab_run(rng, SIZES, round_noise=0.4, spell=0.25, drift=1.1,
                slower=lambda s, size, value: 2.0 if s == "mk_memset" else 1.0)
    res = cmp.compare_measurements(a, b, busy=True)
    worse = [c for c in res.flagged if c.direction == "worse"]
    assert {c.series for c in res.flagged} == {"mk_memset"} and len(worse) >= 0.9 * len(SIZES)
    for c in worse:
        assert c.evidence == "paired" and c.baseline == "glibc" and 1.7 < c.ratio < 2.3 and c.low > 1.4


def test_a_tight_fall_is_found_where_40_percent_of_the_experiment_moved():
    # The fleet's nt_threshold=64K: memkit (both values) and rep-stosb moved
    # at every size, by 0.5-0.9x; memkit's 4 MiB fill fell to 0.28x.
    # Its pair (zero vs non-zero fill of memkit) moved together: the
    # baseline strayed, so it is judged on its absolute samples.
    rng = random.Random(23)
    sizes = [4096 << i for i in range(11)]      # 4 KiB .. 4 MiB
    moved = {(s, size): rng.uniform(0.5, 0.9) for s in ("memkit", "rep-stosb") for size in sizes}
    moved[("memkit", 4 << 20)] = 0.28
    series = ("vector-loop", "rep-stosb", "nt-stores", "glibc", "memkit")
    a = lab_run(rng, sizes, values=(0, 90), baseline="value", series=series, round_noise=0.02, spell=0.05)
    b = lab_run(rng, sizes, values=(0, 90), baseline="value", series=series, round_noise=0.02, spell=0.05,
                slower=lambda s, size, value: 1 / moved.get((s, size), 1.0))
    res = cmp.compare_measurements(a, b)
    (c,) = [c for c in res.changes if c.series == "memkit" and c.params == {"size": 4 << 20, "value": 0}]
    assert c.flagged and c.evidence == "absolute" and 3.2 < c.ratio / c.shift < 3.9
    assert not [c for c in res.flagged if c.series not in ("memkit", "rep-stosb")]


def test_identical_noisy_runs_flag_nothing_over_hundreds_of_measurements():
    for seed in (31, 32, 33):
        rng = random.Random(seed)
        for kw in ({}, {"values": (0, 90), "baseline": "value"}):
            res = cmp.compare_measurements(lab_run(rng, SIZES, **kw), lab_run(rng, SIZES, **kw))
            assert len(res.changes) >= 120 and res.flagged == [], (seed, kw)
    rng = random.Random(34)
    sizes = [64 + 32 * i for i in range(100)]
    res = cmp.compare_measurements(lab_run(rng, sizes, pair_noise=0.05), lab_run(rng, sizes, pair_noise=0.05))
    assert len(res.changes) == 500 and res.flagged == []


def test_paired_speedups_are_taken_per_process():
    # Placement flips a short call between two speeds for a whole process
    # (1.62 or 2.44 ns, 1.33x or 0.89x glibc): one process more of the slow
    # sort is not a change, however many rounds each process timed.
    def run(speeds):
        glibc = {"experiment": "e", "series": "glibc", "params": {"size": 64}, "metric": "ns_per_call",
                 "unit": "ns", "better": "lower", "value": 2.17, "samples": [2.17] * 45,
                 "process_samples": [2.17] * 3}
        mk = dict(glibc, series="mk_memset", value=min(speeds),
                  samples=[s for s in speeds for _ in range(15)], process_samples=list(speeds),
                  baseline={"series": "glibc", "params": {"size": 64}},
                  ratios=[2.17 / s * (1 + 0.001 * (i % 3)) for s in speeds for i in range(15)])
        return [mk]
    (c,) = cmp.compare_measurements(run((1.62, 2.44, 1.62)), run((2.44, 2.44, 1.62))).changes
    assert c.evidence == "paired" and c.basis == "process" and not c.flagged
    (c,) = cmp.compare_measurements(run((1.62, 1.62, 1.62)), run((2.44, 2.44, 2.44))).changes
    assert c.flagged and c.direction == "worse" and 1.45 < c.ratio < 1.55


def test_paired_samples_prefer_the_records_process_ratios():
    # A record that says each process's median speed-up is read as it is; an
    # older one (no process_ratios) is cut into one block of rounds per
    # process, the order the lab pools them in.
    m = {"experiment": "e", "series": "mk", "params": {"size": 64}, "metric": "ns_per_call", "unit": "ns",
         "better": "lower", "value": 1.0, "samples": [1.0] * 6, "process_samples": [1.0, 1.0, 1.0],
         "baseline": {"series": "glibc", "params": {"size": 64}},
         "ratios": [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]}
    assert cmp.paired_samples(dict(m, process_ratios=[1.5, 1.25, 1.75])) == [1.5, 1.25, 1.75]
    assert cmp.paired_samples(m) == [1.5, 1.5, 1.5]


# ---- a series judged as a whole (compare.py step 6) ----

SHORT = [1 << i for i in range(12)]   # 1 B..2 KiB: calls of a few ns, too short to judge alone


def short_run(rng, slower=lambda series, size, value: 1.0, drift=1.0):
    """A quick grid of short calls, per-round samples only, as memset-sizes'
    quick run writes it: every point too short to judge alone."""
    ms = lab_run(rng, SHORT, slower=slower, drift=drift, pair_noise=0.03, rounds=3)
    for m in ms:
        m["value"] = m["value"] / 100     # ~1-4 ns a call
        m["samples"] = [t / 100 for t in m["samples"]]
    return ms


def test_a_regression_of_a_whole_series_of_short_calls_is_caught_through_a_drifting_machine():
    # Intel Xeon 6/207: sse2 forced, 18% slower over most of memset-sizes'
    # grid, the machine 18% slower too, and every point shorter than 50 ns.
    rng = random.Random(7)
    slower = lambda s, size, v: 1.18 if s == "mk_memset" and size >= 4 else 1.0   # 10 of 12 sizes
    res = cmp.compare_measurements(short_run(rng), short_run(rng, slower=slower, drift=1.18))
    assert all(not c.judged for c in res.changes)          # no point alone ...
    (whole,) = res.flagged_series                            # ... but the series as a whole
    assert whole.series == "mk_memset" and whole.direction == "worse" and res.worse == 1
    assert 1.1 < whole.ratio < 1.3 and whole.low > 1 and whole.moved >= 10
    assert res.unjudged == []


def test_identical_quick_runs_flag_no_series_at_the_rules_rate():
    from scipy.stats import binom
    rng = random.Random(11)
    flagging = sum(bool(cmp.compare_measurements(short_run(rng), short_run(rng, drift=1.2)).flagged_series)
                   for _ in range(30))
    assert flagging <= binom.ppf(0.99, 30, cmp.FDR)


def test_a_series_moved_less_than_the_series_effect_is_not_flagged():
    rng = random.Random(5)
    slower = lambda s, size, v: 1.04 if s == "avx2" else 1.0
    res = cmp.compare_measurements(short_run(rng), short_run(rng, slower=slower))
    assert res.flagged_series == []
    (avx2,) = [s for s in res.series if s.series == "avx2"]
    assert 1.0 < avx2.ratio < 1 + cmp.SERIES_EFFECT   # seen, but within what placement moves a series


def test_the_gate_says_what_it_could_not_judge(tmp_path):
    # Short calls without a baseline (no pairs) and no series of 8 sizes:
    # neither alone nor as a series; the gate exits 3, not 0.
    db = tmp_path / "g.db"
    rng = random.Random(3)
    def few(drift):
        return [m for m in short_run(rng, drift=drift) if m["params"]["size"] <= 4]
    with Database(db, create=True) as d:
        _store(d, FINGERPRINT, few(1.0))
        _store(d, FINGERPRINT, few(1.0))
    p = run_cli("compare", "--fail-on-regression", "1", "2", "--db", db)
    assert p.returncode == 3, p.stdout
    assert "could not be judged (exit 3)" in p.stdout


def test_a_series_without_an_axis_is_judged_as_a_whole():
    # memset-random's rows (size ranges, no axis): every row of mk_memset 20%
    # slower, short calls on per-round samples, the machine drifting too
    def rows(rng, slower=1.0, drift=1.0):
        ms = short_run(rng, slower=lambda s, size, v: slower if s == "mk_memset" else 1.0, drift=drift)
        for m in ms:
            m["params"] = {"rows": f"{m['params']['size']}..{2 * m['params']['size']} B"}
            m.pop("axis")
            if m.get("baseline"):
                m["baseline"]["params"] = dict(m["params"])
        return ms
    rng = random.Random(9)
    res = cmp.compare_measurements(rows(rng), rows(rng, slower=1.2, drift=1.15))
    (whole,) = res.flagged_series
    assert whole.series == "mk_memset" and whole.axis is None and whole.direction == "worse"
    assert whole.span == "12 measurements" and res.unjudged == []
    assert cmp.compare_measurements(rows(rng), rows(rng, drift=1.15)).flagged_series == []


# ---- the noise between runs, and bands of adjacent sizes ----

def test_a_band_is_judged_against_what_identical_runs_did_on_the_host():
    # "old" 1.4x slower from 4 KiB up: a band, against the other series'
    # steady pairs.  A history in which "old" jumped by as much between
    # identical runs (its placement) says that is its noise.
    rng = random.Random(49)
    sizes = [64 << i for i in range(16)]

    def run(jump):
        return lab_run(rng, sizes, pair_noise=0.01,
                       slower=lambda s, size, v: jump if s == "old" and size >= 4096 else 1.0)
    a, b = run(1.0), run(1.4)
    res = cmp.compare_measurements(a, b)
    (band,) = res.flagged_bands
    assert (band.series, band.direction, band.members[0].params["size"]) == ("old", "worse", 4096)
    assert band.finding == "old 4 KiB-2 MiB, 1.4-1.4x slower" and res.noise_source == "this pair"
    res = cmp.compare_measurements(a, b, history=[run(j) for j in (1.0, 1.4, 1.0, 1.4, 1.0)])
    assert res.flagged_bands == [] and res.noise_source == "history"


def test_history_is_the_same_machine_whatever_memkit_version():
    from memkit.comparison.history import same_machine
    assert same_machine(FINGERPRINT, dict(FINGERPRINT, memkit_commit="def"))
    assert not same_machine(FINGERPRINT, dict(FINGERPRINT, tunables="memset=sse2"))
    assert not same_machine({}, {})
