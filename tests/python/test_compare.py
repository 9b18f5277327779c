"""compare: noise, regressions, fingerprint changes, on synthetic runs."""

import math
import random

from conftest import FINGERPRINT, run_cli
from memkit import compare as cmp
from memkit.commands.compare import fingerprint_banner
from memkit.db import Database
from memkit.fingerprint import differences
from memkit.lab import Result


def m(series, size, value, spread=0.02, metric="fill_throughput", unit="GB/s", ratio=None):
    d = {"experiment": "exp", "series": series, "params": {"size": size}, "metric": metric, "unit": unit,
         "value": value, "min": value * (1 - spread), "max": value * (1 + spread)}
    if ratio:
        d.update(ratio_to="other", ratio=ratio[0], ratio_min=ratio[1], ratio_max=ratio[2])
    return d


def test_judge_noise_rules():
    # Overlapping ranges: within the noise however large the ratio looks.
    assert cmp.judge(10, 8, 14, 12, 9, 15, True)[2:] == (False, "same")
    # Disjoint ranges, 20% lower throughput: worse.
    r, noise, beyond, verdict = cmp.judge(10, 9.9, 10.1, 8, 7.9, 8.1, True)
    assert beyond and verdict == "worse" and math.isclose(r, 0.8) and math.isclose(noise, 0.0125)
    # The same for a time: lower is better.
    assert cmp.judge(10, 9.9, 10.1, 8, 7.9, 8.1, False)[3] == "better"
    # Unknown direction: "changed".
    assert cmp.judge(10, 9.9, 10.1, 8, 7.9, 8.1, None)[3] == "changed"
    # One sample each (min = max): a 2% change is under the floor, 10% is not.
    assert not cmp.judge(100, 100, 100, 102, 102, 102, True)[2]
    assert cmp.judge(100, 100, 100, 110, 110, 110, True)[2]
    # Disjoint ranges but a change smaller than the spread seen: not called.
    assert not cmp.judge(100, 70, 101, 105, 102, 140, True)[2]


def test_direction_of_metrics():
    assert cmp.higher_is_better("fill_throughput", "GB/s") is True
    assert cmp.higher_is_better("ns_per_call", "ns") is False
    assert cmp.higher_is_better("pct_improvement", "%") is True
    assert cmp.higher_is_better("mystery", "widgets") is None


def synthetic_run(rng, regress=None, noise=0.01):
    out = []
    for s in ("glibc", "memkit"):
        for i in range(25):
            size = 1024 << i
            v = 50.0 * (1 + rng.uniform(-noise, noise))
            if regress and (s, size) == regress:
                v *= 0.7
            out.append(m(s, size, v, spread=0.03, ratio=(1.0, 0.97, 1.03)))
    return out


def test_only_the_regression_is_beyond_noise():
    rng = random.Random(7)
    a = synthetic_run(rng)
    b = synthetic_run(rng, regress=("memkit", 1 << 20))
    b.append(m("new", 1, 1.0))
    changes, only_a, only_b = cmp.compare_measurements(a, b)
    assert (only_a, only_b) == (0, 1)
    assert len(changes) == 100   # 50 values + 50 ratios
    beyond = [c for c in changes if c.beyond]
    assert len(beyond) == 1
    c = beyond[0]
    assert (c.series, c.params, c.verdict) == ("memkit", {"size": 1 << 20}, "worse")
    assert 0.65 < c.ratio < 0.75
    s = cmp.summarize(changes)[0]
    assert (s.compared, s.worse, s.better) == (50, 1, 0)
    assert 0.98 < s.geomean_ratio < 1.0
    assert math.isclose(s.median_noise, 0.03, rel_tol=0.05)


def test_identical_noisy_runs_show_no_change():
    rng = random.Random(1)
    changes, _, _ = cmp.compare_measurements(synthetic_run(rng, noise=0.02), synthetic_run(rng, noise=0.02))
    assert not any(c.beyond for c in changes)


def test_ratio_change_is_reported():
    a = [m("nt", 1 << 28, 80.0, ratio=(3.0, 2.9, 3.1))]
    b = [m("nt", 1 << 28, 80.0, ratio=(1.0, 0.98, 1.02))]   # the zero-store effect is gone
    changes, _, _ = cmp.compare_measurements(a, b)
    ratio = [c for c in changes if c.metric.startswith("ratio to")]
    assert len(ratio) == 1 and ratio[0].beyond and math.isclose(ratio[0].ratio, 1 / 3)


def test_fingerprint_differences():
    loud, quiet = differences(FINGERPRINT, dict(FINGERPRINT, microcode="0xea", memkit_commit="def"))
    assert loud == ["microcode 0xa0 -> 0xea"] and quiet == ["memkit_commit abc123 -> def"]
    assert differences(FINGERPRINT, dict(FINGERPRINT)) == ([], [])
    loud, _ = differences(FINGERPRINT, dict(FINGERPRINT, kernel="6.2", glibc="2.37", tunables="x=1",
                                            profile="/p"))
    assert [l.split()[0] for l in loud] == ["kernel", "glibc", "tunables", "profile"]
    banner = fingerprint_banner(FINGERPRINT, dict(FINGERPRINT, microcode="0xea"))
    assert any("MACHINE CHANGED" in l and "microcode 0xa0 -> 0xea" in l for l in banner)
    assert fingerprint_banner(FINGERPRINT, FINGERPRINT) == []


def _store(d, fp, ms):
    r = Result("exp", "seed", "desc", "ok", 1.0, [], fp, ms, ["v"], "", "")
    return d.store_run(started_at="t0", finished_at="t1", quick=False, fingerprint=fp, results=[r])


def test_compare_command(tmp_path):
    path = tmp_path / "m.db"
    rng = random.Random(3)
    with Database(path, create=True) as d:
        r1 = _store(d, FINGERPRINT, synthetic_run(rng))
        r2 = _store(d, FINGERPRINT, synthetic_run(rng, regress=("glibc", 4096)))
        r3 = _store(d, dict(FINGERPRINT, microcode="0xea"), synthetic_run(rng))
    p = run_cli("compare", "--db", path, r1, r2)
    assert p.returncode == 0, p.stderr
    assert "MACHINE CHANGED" not in p.stdout
    assert "1 worse" in p.stdout and "WORSE" in p.stdout and "size=4 KiB" in p.stdout
    p = run_cli("compare", "--db", path)   # the last two: 2 -> 3
    assert p.returncode == 0, p.stderr
    assert f"run {r2}" in p.stdout and f"run {r3}" in p.stdout
    assert "THE MACHINE CHANGED" in p.stdout and "microcode 0xa0 -> 0xea" in p.stdout
    p = run_cli("compare", "--db", path, "--all", r1, r3)
    assert p.stdout.count("within noise") >= 90
