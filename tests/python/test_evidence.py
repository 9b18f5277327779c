# SPDX-License-Identifier: Apache-2.0
"""Evidence files (docs/evidence.md): every measured row of the strategy
table re-derived from its file with tune's own rule, and the row as the
library prints it for the file's CPU (memkit-tunables --cpu) must agree;
tune --evidence writes a file that re-derives to what tune printed; one
function says whether a CPU runs a measured row.  None of this depends on
the CPU the tests run on."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from conftest import FINGERPRINT, REPO, cli_env, make_fake_build, real_bench_dir, run_cli
from memkit.lab import machine
from memkit.report.run_report import write_report
from memkit.store.db import Database
from test_report import store_suite
from memkit.tuning import catalogue, evidence, level_choice, tune
from test_tune import fake_timer  # noqa: F401  (the fixture: a timing program of known speeds)

EVIDENCE_DIR = REPO / "data" / "evidence"


def table():
    out = subprocess.run([str(real_bench_dir() / "memkit-tunables")], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def row_for(doc):
    """The row the library gives the evidence's CPU, its defaults there."""
    out = subprocess.run([str(real_bench_dir() / "memkit-tunables"), "--cpu", *machine.cpu_arguments(doc["cpu"])],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def evidence_files():
    return sorted(EVIDENCE_DIR.glob("*.json"))


def test_every_measured_row_has_its_file_and_every_file_a_row():
    rows = {s["name"]: s for s in table()["strategies"]}
    named = {s["evidence_file"] for s in rows.values() if s["evidence_file"]}
    on_disk = {str(p.relative_to(REPO)) for p in evidence_files()}
    assert named == on_disk
    assert all(rows[p.stem]["measured"] for p in evidence_files())
    assert not rows["intel-fsrm"]["measured"] and not rows["generic"]["measured"]


@pytest.mark.parametrize("path", evidence_files(), ids=lambda p: p.stem)
def test_row_is_what_its_evidence_implies(path):
    """The row named by the file (its stem) is the row the file's CPU gets,
    and each default tune decides agrees with what the evidence implies
    by tune's rule: a fixed size exactly, a rule of the caches (L3/4, L2)
    evaluated on the evidence's CPU when the evidence's value is one of the
    grid points either side of it (evidence.agrees); the row's variant is
    the one the evidence ran."""
    doc = evidence.load(path)
    row = row_for(doc)
    assert row["strategy"] == path.stem
    rules = next(s for s in table()["strategies"] if s["name"] == path.stem)["defaults"]
    assert evidence.row_mismatches(doc, row, rules) == []


@pytest.mark.parametrize("path", evidence_files(), ids=lambda p: p.stem)
def test_evidence_rederives_its_own_decisions(path):
    """The decisions a file records follow from its data by the rule as it
    is now: a change of the rule shows here, and the row's file is redone."""
    doc = evidence.load(path)
    got = [(f, c.name, c.value, c.moved) for f, c in evidence.derive(doc)]
    assert got == [(d["family"], d["tunable"], d["value"], d["moved"]) for d in doc["decisions"]]


def test_a_row_that_drifts_from_its_evidence_fails():
    """The check can fail: a row one grid step off, a fixed size where a
    rule would be allowed its neighbours, another variant."""
    path = EVIDENCE_DIR / "intel-emr.json"
    doc = evidence.load(path)
    row = row_for(doc)
    rules = next(s for s in table()["strategies"] if s["name"] == "intel-emr")["defaults"]
    moved = copy.deepcopy(row)
    moved["defaults"]["rep_stosb_threshold"] = 32 << 10
    assert any(m.startswith("rep_stosb_threshold") for m in evidence.row_mismatches(doc, moved, rules))
    moved = copy.deepcopy(row)
    moved["variants"]["memmove"] = "avx512"
    assert any(m.startswith("variant: the row runs memmove avx512") for m in evidence.row_mismatches(doc, moved, rules))
    # evidence that moved a threshold the row kept
    drifted = copy.deepcopy(doc)
    for p in drifted["families"]["memcpy"]["picks"]:
        if p["size"] >= 16 << 20 and p["chosen"] == "rep_movsb":
            p["chosen"] = "nt"
            p["evidence"] = {"rounds": 12, "speedups": None}
    assert any(m.startswith("nt_copy_threshold") for m in evidence.row_mismatches(drifted, row, rules))


def test_a_row_whose_variant_is_not_the_evidences_choice_fails():
    """Where the file holds tune's variant scores, the row's variant must be
    the one tune's rule chooses from them (here, evex: avx512 loses in DRAM)."""
    path = EVIDENCE_DIR / "intel-emr.json"
    doc = evidence.load(path)
    row = row_for(doc)
    rules = next(s for s in table()["strategies"] if s["name"] == "intel-emr")["defaults"]
    doc["variants"] = {"levels": list(level_choice.VARIANT_LEVELS), "floor": level_choice.VARIANT_FLOOR,
                       "defaults": {fn: "avx512" for fn in level_choice.VARIANT_FUNCTIONS},
                       "scores": [{"variant": v, "function": fn, "levels": dict(zip(level_choice.VARIANT_LEVELS, ups))}
                                  for fn in level_choice.VARIANT_FUNCTIONS
                                  for v, ups in (("avx512", (1.8, 1.7, 0.73, 0.83)), ("evex", (1.8, 1.8, 0.95, 0.96)))]}
    derived = evidence.derived_values(doc)
    assert derived["memcpy"] == ("evex", "variant")
    assert evidence.row_mismatches(doc, row, rules) == []          # the row runs evex
    moved = copy.deepcopy(row)
    moved["variants"]["memcpy"] = "avx512"
    assert evidence.row_mismatches(doc, moved, rules) == [
        "variant: the row runs memcpy avx512, the evidence implies evex"]


def test_a_row_runs_each_function_s_chosen_variant():
    """tune decides a variant per function: where the evidence chooses avx2
    for memmove alone (evex under the floor in DRAM), a row running evex for
    all three fails on memmove only, and one running evex, memmove avx2 agrees."""
    path = EVIDENCE_DIR / "intel-emr.json"
    doc = evidence.load(path)
    row = row_for(doc)
    rules = next(s for s in table()["strategies"] if s["name"] == "intel-emr")["defaults"]
    ups = {("memmove", "evex"): (2.3, 1.9, 1.4, 0.80), ("memmove", "avx2"): (1.3, 1.1, 1.1, 0.97)}
    doc["variants"] = {"levels": list(level_choice.VARIANT_LEVELS), "floor": level_choice.VARIANT_FLOOR,
                       "defaults": {fn: "evex" for fn in level_choice.VARIANT_FUNCTIONS},
                       "scores": [{"variant": v, "function": fn, "levels": dict(zip(
                                       level_choice.VARIANT_LEVELS, ups.get((fn, v), (1.5, 1.4, 1.3, 1.0))))}
                                  for fn in level_choice.VARIANT_FUNCTIONS for v in ("evex", "avx2")]}
    all_evex = copy.deepcopy(row)
    all_evex["variants"] = {fn: "evex" for fn in level_choice.VARIANT_FUNCTIONS}
    assert evidence.row_mismatches(doc, all_evex, rules) == [
        "variant: the row runs memmove evex, the evidence implies avx2"]
    per_function = copy.deepcopy(all_evex)
    per_function["variants"]["memmove"] = "avx2"
    assert evidence.row_mismatches(doc, per_function, rules) == []


def test_agreement_of_cache_rules_is_by_the_neighbouring_grid_points():
    grid = catalogue.size_grid(1 << 10, 256 << 20, 2)
    l3_4 = (260 << 20) // 4                                 # 65 MiB: between 64 and 90.5 MiB
    assert evidence.neighbours(grid, l3_4) == {64 << 20, 94906240}   # 64 MiB, 90.5 MiB
    assert evidence.agrees(64 << 20, l3_4, "L3/4", grid)
    assert not evidence.agrees(45 << 20, l3_4, "L3/4", grid)
    assert not evidence.agrees(64 << 20, l3_4, "65M", grid)   # a fixed size: exactly
    assert evidence.agrees(None, None, "never", grid) and not evidence.agrees(None, l3_4, "L3/4", grid)


def test_tune_writes_evidence_that_rederives_what_it_printed(tmp_path, fake_timer):
    """With --dry-run as well: the file has the CPU, the rule, per-round
    times, picks and decisions, and evidence.derive gives what tune chose."""
    out = tmp_path / "ev.json"
    p = run_cli("tune", "--timer", fake_timer, "--quick", "--dry-run", "--evidence", out,
                env=cli_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    doc = evidence.load(out)
    assert {"vendor", "family", "model", "stepping", "microcode", "cache", "strategy"} <= set(doc["cpu"])
    assert doc["rule"]["alpha"] == tune.ALPHA and doc["rule"]["margin"] == tune.MARGIN
    assert doc["rule"]["rounds"] >= 2 and doc["source"] == evidence.MEASURED
    cell = doc["families"]["memset"]["cells"][0]
    assert len(cell["ns"]["loop"]) == doc["rule"]["rounds"]
    moved = {d["tunable"]: d["value"] for d in doc["decisions"] if d["moved"]}
    assert moved, p.stdout   # the fake timer's rep stosb and nt are worth moving to
    assert {c.name: c.value for _, c in evidence.derive(doc)} == {d["tunable"]: d["value"]
                                                                   for d in doc["decisions"]}
    for name in moved:
        assert name in p.stdout


def test_evidence_refused_with_for(tmp_path, fake_timer):
    p = run_cli("tune", "--timer", fake_timer, "--quick", "--for", tmp_path, "--evidence", tmp_path / "e.json",
                env=cli_env(), timeout=60)
    assert p.returncode != 0 and "--evidence goes without --for" in p.stderr


def test_unmeasured_note_is_one_decision():
    fp = {"strategy": "intel-fsrm", "strategy_measured": False, "profile": ""}
    line = evidence.unmeasured_note(fp)
    assert "intel-fsrm" in line and "memkit tune" in line and "\n" not in line
    assert evidence.unmeasured_note(dict(fp, strategy_measured=True)) is None
    assert evidence.unmeasured_note(dict(fp, profile="/home/u/.config/memkit/profile")) is None
    assert evidence.unmeasured_note({"strategy": "x"}) is None   # a fingerprint from before the flag


# ---- where the note is said: env, try, the report ----

def test_env_says_when_the_row_is_unmeasured(tmp_path):
    for measured in (False, True):
        fp = dict(FINGERPRINT, strategy="intel-fsrm", strategy_measured=measured)
        build = make_fake_build(tmp_path / f"b{measured}", ["ok"], fingerprint=fp)
        p = run_cli("env", "--build", build)
        assert p.returncode == 0, p.stderr
        assert ("unmeasured" in p.stdout) == (not measured), p.stdout


def test_the_report_says_when_the_run_s_row_is_unmeasured(tmp_path):
    for measured in (False, True):
        db_path = tmp_path / f"m{measured}.db"
        run_id = store_suite(db_path, fp=dict(FINGERPRINT, strategy="intel-fsrm", strategy_measured=measured))
        with Database(db_path) as d:
            text = write_report(d, run_id, tmp_path / f"rep{measured}").read_text()
        assert ("which is unmeasured" in text) == (not measured)


def test_try_says_it_of_this_cpu_as_the_one_function_decides(tmp_path):
    """Whatever this CPU's row: try prints the note exactly when
    unmeasured_note says so of this machine's fingerprint."""
    build = real_bench_dir().parent.resolve()
    if not (build / "libmemkit_preload.so").exists():
        pytest.skip("the preload library is not built here")
    fp = json.loads(run_cli("env", "--build", build, "--json").stdout)
    p = run_cli("try", "--build", build, "--db", tmp_path / "m.db", "--budget", "0", "--runs", "1", "--",
                "/bin/true")
    note = evidence.unmeasured_note(fp)
    assert (note is not None) == ("which is unmeasured" in p.stderr), p.stderr
    if note:
        assert note in p.stderr
