# SPDX-License-Identifier: Apache-2.0
"""One judge: on a real run's records, the lab's rankings (each "fastest"
verdict's data), its loss verdicts, the run's summary and the report's
headline say the same about every loss and every "fastest"."""

import re

from conftest import real_bench_dir, run_cli
from memkit.lab import ranking
from memkit.store.db import Database

EXPERIMENTS = ("memset-sizes", "copy-sweep", "size-distributions")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size_of(label: str):
    m = re.fullmatch(r"(\d+) (B|KiB|MiB|GiB)", label)
    return int(m[1]) * UNITS[m[2]] if m else None


def loss_runs(rk: dict) -> list[list[dict]]:
    """The points at -1, cut where the lab's loss verdicts cut them: runs of
    consecutive points on an ordered axis, one point each otherwise."""
    runs, cur = [], []
    for p in rk["points"]:
        if p["verdict"] == -1 and (rk["ordered"] or not cur):
            cur.append(p)
            continue
        if cur:
            runs.append(cur)
        cur = [p] if p["verdict"] == -1 else []
    return runs + ([cur] if cur else [])


def test_headline_summary_and_verdicts_agree_on_a_real_run(tmp_path):
    build, db = real_bench_dir(), tmp_path / "m.db"
    p = run_cli("run", "--quick", *EXPERIMENTS, "--build", build, "--db", db, timeout=600)
    assert p.returncode == 0, p.stderr
    with Database(db) as d:
        run_id = d.runs()[0]["id"]
        verdicts = d.verdict_records(run_id)
        contract = {m["series"] for m in d.measurements(run_id, "copy-sweep") if m.get("contract")}
        memset = {m["params"]["size"]: m for m in d.measurements(run_id, "memset-sizes")
                  if m["series"] == "mk_memset" and m["metric"] == "ns_per_call"}
    rks = ranking.rankings(verdicts)
    assert {exp for exp, _ in rks} == set(EXPERIMENTS)

    # Every loss verdict is a run of points the ranking put at -1, and each such run has its verdict.
    for exp, rk in rks:
        texts = [v["text"] for v in verdicts if v["experiment"] == exp and v["kind"] == "loss"
                 and v["text"].startswith(rk["what"] + ":")]
        runs = loss_runs(rk)
        assert len(texts) == len(runs), (rk["what"], texts, runs)
        for r in runs:
            assert any(f"at {r[0]['at']}" in t or f"from {r[0]['at']} to {r[-1]['at']}" in t for t in texts), (r, texts)
    all_losses = [v["text"] for v in verdicts if v["kind"] == "loss"]
    assert len(all_losses) == sum(len(loss_runs(rk)) for _, rk in rks)

    # The headline: a row is red exactly where the ranking has points at -1, and counts them all.
    rows = ranking.headline_rows(verdicts)
    assert sum(r["losses"] for r in rows) == sum(p["verdict"] == -1 for _, rk in rks for p in rk["points"])
    out = tmp_path / "rep"
    assert run_cli("report", "--db", db, "--out", out).returncode == 0
    html = (out / "index.html").read_text()
    head = html[html.index("<h2>Headline"):html.index("<h2>Experiments")]
    assert head.count("<td class='loss'>") == sum(map(ranking.is_loss, rows))
    for t in all_losses:
        assert t.replace("<", "&lt;").replace(">", "&gt;") in html or t in html

    # The summary prints the same losses, and the fastest of every ranking.
    summary = p.stdout[p.stdout.index("== summary"):]
    losses_part = summary[summary.index("memkit's losses"):summary.index("fastest where:")]
    assert sorted(line.split(": ", 1)[1] for line in losses_part.splitlines()[1:] if line.strip() != "none") \
        == sorted(all_losses)
    for exp, rk in rks:   # a range's leader (on an ordered axis), every case's winner (else)
        leaders = [r[0]["fastest"] for r in ranking.ranges(rk)] if rk["ordered"] \
            else [p_["fastest"] for p_ in rk["points"]]
        assert all(f"{name} at" in summary or f"{name} in" in summary for name in leaders), (leaders, summary)

    # A method with a contract (aligned, whole blocks) ranks from 4 KiB up only.
    sweep = dict(rks)["copy-sweep"]
    assert contract and all(size_of(p_["at"]) >= 4096 for p_ in sweep["points"]
                            if p_["fastest"] in contract or p_["rival"] in contract)
    # memset-sizes' table row (mk vs glibc) never points against its verdict.
    for p_ in dict(rks)["memset-sizes"]["points"]:
        if p_["verdict"] == -1 and p_["rival"] == "glibc":
            assert memset[size_of(p_["at"])]["ratio"] < 1, p_
