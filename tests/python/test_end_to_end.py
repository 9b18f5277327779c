# SPDX-License-Identifier: Apache-2.0
"""The real experiments through the real command line: quick runs, compare
(identical runs flag nothing; the variant this CPU runs slowest, forced, is flagged worse) and the report."""

import json

import pytest

from conftest import cli_env, real_bench_dir, run_cli
from memkit.store.db import Database

METHODS = {"vector-loop", "rep-stosb", "nt-stores", "glibc", "memkit"}
# fill-regions' quick grid cut to the caches, so three runs take well under a minute.
RUN = ["run", "--quick", "memset-sizes", "fill-regions", "fill-regions:max=1M", "fill-regions:budget=0.02"]


VARIANTS = ("sse2", "avx2", "evex", "avx512")   # memset=V forces one (isa.def)


def slowest_variant(d: Database, run_id: int) -> tuple[str, float]:
    """The forced variant furthest behind mk_memset over memset-sizes' grid
    in one run (the median over sizes of its time / mk_memset's, both timed
    in the same rounds): the regression this CPU can show, whatever it is."""
    import statistics
    by = {}
    for m in d.measurements(run_id, "memset-sizes"):
        if m["metric"] == "ns_per_call":
            by.setdefault(m["series"], {})[m["params"]["size"]] = m["value"]
    mk = by["mk_memset"]
    behind = {v: statistics.median(by[v][n] / mk[n] for n in mk if mk[n] > 0 and n in by[v])
              for v in VARIANTS if v in by}
    v = max(behind, key=behind.get)
    return v, behind[v]


def test_identical_runs_then_a_slower_variant_then_report(tmp_path):
    build = real_bench_dir()
    db = tmp_path / "m.db"
    for i in (1, 2):
        p = run_cli(*RUN, "--build", build, "--db", db, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "fill-regions: ok" in p.stdout and "memset-sizes: ok" in p.stdout
    with Database(db) as d:
        variant, behind = slowest_variant(d, d.runs()[0]["id"])
    p = run_cli(*RUN, "--build", build, "--db", db, env=cli_env(MEMKIT_TUNABLES=f"memset={variant}"), timeout=300)
    assert p.returncode == 0, p.stderr

    with Database(db) as d:
        run = d.runs()[0]
        raw_samples = all(m["format"] >= 2 for m in d.measurements(run["id"], "memset-sizes"))
        assert run["fingerprint"]["cache"]["l1d"] > 0 and run["fingerprint"]["microcode"]
        ms = d.measurements(run["id"], "fill-regions")
        assert {m["series"] for m in ms} >= METHODS
        assert max(m["params"]["size"] for m in ms) <= 1 << 20
        assert {m["series"] for m in d.measurements(run["id"], "memset-sizes")} >= {"glibc", "mk_memset", "sse2"}

    p = run_cli("compare", "--json", "1", "2", "--db", db)
    assert p.returncode == 0, p.stdout
    j = json.loads(p.stdout)
    assert j["machine_changed"] == [] and j["compared"] > 100
    # Identical runs may still differ where a process's placement decides:
    # on a VM shared with other builds fill-regions' non-temporal stores were
    # seen 5x apart between identical runs (3.3 vs 16.7 GB/s) with steady
    # rounds in each, and once in ~20 runs memset-sizes flagged sse2 at
    # 8-32 KiB (one process's physical pages).  A few stray flags are noise
    # this test tolerates (at most 3% of the measurements), not a verdict;
    # no series is flagged as a whole.
    assert len([c for c in j["changes"] if c["experiment"] == "memset-sizes"]) <= 3, j["changes"]
    assert len(j["changes"]) <= 0.03 * j["compared"], j["changes"]
    assert not [c for c in j["changes"] if c.get("scope") == "series"], j["changes"]

    out = tmp_path / "rep"
    p = run_cli("report", "--db", db, "--out", out)
    assert p.returncode == 0, p.stderr
    for exp in ("memset-sizes", "fill-regions"):
        assert list((out / "plots").glob(f"{exp}-*.png")), exp
    html = (out / "index.html").read_text()
    assert "Since the previous run" in html and f"tunables: memset=auto -&gt; {variant}" in html
    p = run_cli("env", "--build", build)
    assert p.returncode == 0 and "microcode" in p.stdout and "load average" in p.stdout

    if not raw_samples:
        pytest.skip("these experiments write no raw samples (record format 1): a change cannot be decided")
    # The forced variant was measured behind mk_memset in run 1, in the same
    # rounds; a series moved by twice the judge's series effect or more must
    # be caught, however much of the grid it moves and however short its
    # calls: judged on its paired speed-ups over glibc, timed in the same
    # rounds, so the machine's drift cancels out.
    from memkit.judging.judge import SERIES_EFFECT
    if behind < 1 + 2 * SERIES_EFFECT:
        pytest.skip(f"no variant this CPU runs is clearly slower than mk_memset ({variant}: x{behind:.2f})")
    p = run_cli("compare", "--json", "--fail-on-regression", "2", "3", "--db", db)
    assert p.returncode == 1, p.stdout
    j = json.loads(p.stdout)
    assert "tunables" in j["machine_changed"] and j["gate"].startswith("regression")
    (whole,) = [c for c in j["changes"] if c.get("scope") == "series" and c["series"] == "mk_memset"]
    assert whole["direction"] == "worse" and whole["interval"][0] > 1 and whole["ratio"] > 1 + SERIES_EFFECT, whole
    assert whole["moved"] > whole["sizes"] / 2


def test_env_names_the_strategy_row_and_its_evidence():
    build = real_bench_dir()
    fp = json.loads(run_cli("env", "--build", build, "--json").stdout)
    assert fp["strategy"] and fp["strategy_matched"] and fp["strategy_evidence"]
    text = run_cli("env", "--build", build).stdout
    assert f"strategy     {fp['strategy']} (" in text
    assert f"  evidence   {fp['strategy_evidence']}" in text


def test_env_tunables_prints_defaults_values_in_force_and_bounds():
    build = real_bench_dir()
    p = run_cli("env", "--build", build, "--tunables",
                env=cli_env(MEMKIT_TUNABLES="nt_threshold=12M:rep_movsb_align=3", MEMKIT_PROFILE=""))
    assert p.returncode == 0, p.stderr
    # the library's own line on the value out of bounds, the default kept
    assert "'rep_movsb_align=3': out of bounds (a power of two from 1 to 4K); default kept" in p.stderr
    table = json.loads(run_cli("env", "--build", build, "--tunables", "--json",
                               env=cli_env(MEMKIT_TUNABLES="nt_threshold=12M", MEMKIT_PROFILE="")).stdout)
    rows = {t["name"]: t for t in table}
    assert rows["nt_threshold"]["in_force"] == "12M" and rows["nt_threshold"]["per_cpu"]
    assert rows["rep_movsb_align"]["in_force"] == rows["rep_movsb_align"]["default"]
    assert rows["threads"]["bounds"] == "0 to 1024" and rows["parallel_threshold"]["default"] == "4M"
    lines = {line.split()[0]: line for line in p.stdout.splitlines()}
    assert set(rows) <= set(lines) and " 12M " in lines["nt_threshold"]
    assert rows["nt_threshold"]["help"] in lines["nt_threshold"]

    fp = json.loads(run_cli("env", "--build", build, "--json").stdout)
    p = run_cli("env", "--build", build, "--strategies")
    assert p.returncode == 0 and f" {fp['strategy']}* " in p.stdout.splitlines()[0] + " ", p.stdout
