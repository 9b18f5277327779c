# SPDX-License-Identifier: Apache-2.0
"""The real experiments through the real command line, on whatever CPU runs
the suite: quick runs stored, compare's gate agreeing with its verdicts and
every verdict with its interval, a known regression put into a copy of a live
run caught, and the report."""

import json
import math

from conftest import cli_env, real_bench_dir, run_cli
from memkit.judging.judge import SERIES_EFFECT
from memkit.results.result import Result
from memkit.store.db import Database
from regressions import slowed

METHODS = {"vector-loop", "rep-stosb", "nt-stores", "glibc", "memkit"}
# fill-regions' quick grid cut to the caches, so three runs take well under a minute.
RUN = ["run", "--quick", "memset-sizes", "fill-regions", "fill-regions:max=1M", "fill-regions:budget=0.02"]


VARIANTS = ("sse2", "avx2", "evex", "avx512")   # memset=V forces one (isa.def)
INJECTED = 1.20   # the known regression: mk_memset 20% slower over memset-sizes


def slowest_variant(d: Database, run_id: int) -> str:
    """The forced variant furthest behind mk_memset over memset-sizes' grid
    in one run (the median over sizes of its time / mk_memset's): the third
    run forces it, a change of tunables the report and compare must name,
    and a regression on the CPUs where it is slower."""
    import statistics
    by = {}
    for m in d.measurements(run_id, "memset-sizes"):
        if m["metric"] == "ns_per_call":
            by.setdefault(m["series"], {})[m["params"]["size"]] = m["value"]
    mk = by["mk_memset"]
    behind = {v: statistics.median(by[v][n] / mk[n] for n in mk if mk[n] > 0 and n in by[v])
              for v in VARIANTS if v in by}
    return max(behind, key=behind.get)


def gate(db, a, b) -> tuple[int, dict]:
    """compare --json --fail-on-regression A B: its exit and its verdicts,
    checked against each other and against their intervals."""
    p = run_cli("compare", "--json", "--fail-on-regression", str(a), str(b), "--db", db)
    j = json.loads(p.stdout)
    worse = [c for c in j["changes"] if c["direction"] == "worse"]
    assert p.returncode == (1 if worse else 3 if j["not_judged"] else 0), (p.returncode, j["gate"])
    assert j["gate"].startswith("regression") == bool(worse), j["gate"]
    for c in j["changes"]:
        assert c["direction"] in ("better", "worse", "changed"), c
        scope = c.get("scope")
        lo, hi = c["interval"] if scope == "series" else c["range"] if scope == "band" else c["vs_shift_interval"]
        assert not lo <= 1 <= hi, c   # a verdict never sits beside an interval holding "no change"
    return p.returncode, j


def test_runs_are_stored_the_gate_agrees_with_its_verdicts_and_a_regression_is_caught(tmp_path):
    build = real_bench_dir()
    db = tmp_path / "m.db"
    for i in (1, 2):
        p = run_cli(*RUN, "--build", build, "--db", db, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "fill-regions: ok" in p.stdout and "memset-sizes: ok" in p.stdout
    with Database(db) as d:
        variant = slowest_variant(d, d.runs()[0]["id"])
    p = run_cli(*RUN, "--build", build, "--db", db, env=cli_env(MEMKIT_TUNABLES=f"memset={variant}"), timeout=300)
    assert p.returncode == 0, p.stderr

    with Database(db) as d:
        run = d.runs()[-1]
        assert [r["id"] for r in d.runs()] == [1, 2, 3] and not any(r.get("incomplete") for r in d.runs())
        assert all(m["format"] >= 2 and m["sample_values"] for m in d.measurements(run["id"], "memset-sizes"))
        assert run["fingerprint"]["cache"]["l1d"] > 0 and run["fingerprint"]["microcode"]
        ms = d.measurements(run["id"], "fill-regions")
        assert {m["series"] for m in ms} >= METHODS
        assert max(m["params"]["size"] for m in ms) <= 1 << 20
        assert {m["series"] for m in d.measurements(run["id"], "memset-sizes")} >= {"glibc", "mk_memset", "sse2"}
        # run 2 again, mk_memset 20% slower: a copy of this CPU's own live run
        r2 = d.run(2)
        injected = d.store_run(
            started_at="injected", finished_at="injected", quick=True, fingerprint=r2["fingerprint"],
            results=[Result(e["name"], e["seed"], e["description"], "ok", 1.0, [], r2["fingerprint"],
                            slowed(d.measurements(2, e["name"]), "memset-sizes", "mk_memset", INJECTED),
                            list(e["args"] or []), "", "")
                     for e in d.experiments(2)])

    # Identical runs: no band and no series flagged either way, few stray
    # measurements at most, and whatever is flagged agrees with its interval.
    # A fresh database has no history of the grid: every change must exceed
    # what identical runs recorded on every CPU moved the same series by
    # (judging/identical-runs.json; Zen 4: nt-stores' zero fills x1.17 as a
    # whole, old_nt 1.5-64 KiB x1.38 as a band).
    rc, j = gate(db, 1, 2)
    assert j["machine_changed"] == [] and j["compared"] > 100
    assert len(j["changes"]) <= 0.03 * j["compared"], j["changes"]
    assert not [c for c in j["changes"] if c.get("scope") in ("series", "band")], j["changes"]

    # The forced variant: a change of tunables, named; whatever it did on this
    # CPU, the gate's exit and the verdicts agree.
    rc, j = gate(db, 2, 3)
    assert "tunables" in j["machine_changed"]

    # The known regression, on this CPU's own samples: mk_memset worse as a
    # whole, by about what was put in, and nothing else worse.
    rc, j = gate(db, 2, injected)
    assert rc == 1, j["gate"]
    (whole,) = [c for c in j["changes"] if c.get("scope") == "series" and c["series"] == "mk_memset"]
    assert whole["direction"] == "worse" and whole["interval"][0] > 1 + SERIES_EFFECT / 2, whole
    assert math.isclose(whole["ratio"], INJECTED, rel_tol=0.02) and whole["moved"] > whole["sizes"] / 2
    assert {c["series"] for c in j["changes"] if c["direction"] == "worse"} == {"mk_memset"}, j["changes"]

    out = tmp_path / "rep"
    p = run_cli("report", "--db", db, "--out", out, "--run", "3")
    assert p.returncode == 0, p.stderr
    for exp in ("memset-sizes", "fill-regions"):
        assert list((out / "plots").glob(f"{exp}-*.png")), exp
    html = (out / "index.html").read_text()
    assert "Since the previous run" in html and f"tunables: memset=auto -&gt; {variant}" in html
    p = run_cli("env", "--build", build)
    assert p.returncode == 0 and "microcode" in p.stdout and "load average" in p.stdout


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
