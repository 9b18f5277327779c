# SPDX-License-Identifier: Apache-2.0
"""`memkit tune --glibc` (memkit.tuning.glibc_tune): what it times and where,
held to glibc's diagnostics as recorded on real CPUs (tests/data/glibc/);
its rule on made-up timings; the line, its file and its evidence; the
command's refusals; and one short real run, for its shape (never its speed)."""

import json
import random
import subprocess

import pytest

from conftest import REPO, cli_env, real_bench_dir, run_cli
from memkit.errors import MemkitError
from memkit.lab import glibc, machine
from memkit.tuning import glibc_tune as gt
from memkit.tuning import catalogue, tune

DATA = REPO / "tests" / "data" / "glibc"
KiB, MiB = 1 << 10, 1 << 20


def recorded(name: str) -> dict:
    return glibc.parse((DATA / f"{name}.txt").read_text())


def glibc_like(view: dict, amd: bool):
    """read(settings) as glibc 2.36 answers it: the settings over the
    recorded view, the stop of rep movsb derived (the L2 on AMD, the
    non-temporal threshold elsewhere)."""
    def read(settings: dict) -> dict:
        v = dict(view, **{gt.FIELD[t]: x for t, x in settings.items()})
        if not amd:
            v["rep_movsb_stop_threshold"] = v["non_temporal_threshold"]
        return v
    return read


ZEN3 = recorded("amd-zen3-25-1")          # rep movsb 2,112 B..512 KiB, non-temporal from 192 MiB
XEON = recorded("intel-xeon-6-167")       # rep movsb 2,112 B..40.9 MiB, non-temporal from 40.9 MiB


def test_what_glibc_runs_where_follows_its_diagnostics():
    assert [gt.glibc_path(ZEN3, "copy3", s) for s in (2 * KiB, 4 * KiB, 256 * KiB, MiB, 256 * MiB)] == \
        ["vec", "rep", "rep", "vec", "nt"]                # the window ends at the L2 on AMD
    assert [gt.glibc_path(XEON, "copy", s) for s in (2 * KiB, 4 * KiB, 40 * MiB, 41 * MiB)] == \
        ["vec", "rep", "rep", "nt"]                       # at the non-temporal threshold elsewhere
    assert [gt.glibc_path(XEON, op, s) for op in ("set0", "set") for s in (2048, 2049)] == \
        ["vec", "rep", "vec", "rep"]                      # rep stosb above its threshold
    # 2.33 prints no stop: rep movsb runs up to the non-temporal threshold
    old = {k: v for k, v in ZEN3.items() if k != "rep_movsb_stop_threshold"}
    assert gt.glibc_path(old, "copy", MiB) == "rep"


def test_the_grid_holds_tunes_and_the_machines_marks():
    caches = {"l2": 512 * KiB, "l3": 32 * MiB}
    grid = gt.size_grid(KiB, 256 * MiB, 2, ZEN3, caches, cpus=2)
    assert set(catalogue.size_grid(KiB, 256 * MiB, 2)) <= set(grid)
    # glibc's own thresholds, the L2, and the L3's per-thread share at 1/4, 1/2, 1, 2
    for mark in (2112 // 64 * 64, 2048, 512 * KiB, 192 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB):
        assert mark in grid, mark
    assert all(s % 64 == 0 for s in grid) and grid == sorted(set(grid))
    assert gt.size_grid(16 * KiB, 4 * MiB, 1, ZEN3, caches, 2)[-1] == 4 * MiB   # marks outside are left out


def test_each_strategy_is_forced_by_settings_glibc_takes():
    f = gt.forced(KiB)
    assert f["vec"] == {gt.MOVSB: 2 ** 64 - 1, gt.STOSB: 2 ** 64 - 1, gt.NT: 2 ** 60 - 1}
    assert f["rep"][gt.MOVSB] == 1024 and f["rep"][gt.STOSB] == 1 and f["nt"][gt.NT] == 0x4041
    paths = gt.GlibcPaths(glibc_like(XEON, amd=False))
    views = {n: paths.view(s) for n, s in f.items()}
    assert {gt.glibc_path(views[n], "copy", 64 * KiB) for n in f} == {"vec", "rep", "nt"}
    assert gt.glibc_path(views["nt"], "copy", 8 * KiB) == "vec"   # below glibc's lowest threshold
    assert gt.spec_of({gt.NT: 4096, gt.MOVSB: 1}) == \
        "glibc.cpu.x86_non_temporal_threshold=4096:glibc.cpu.x86_rep_movsb_threshold=1"


def test_a_setting_glibc_ignores_is_refused(monkeypatch):
    monkeypatch.setattr(glibc, "read", lambda loader, env: dict(XEON))   # glibc kept its own
    with pytest.raises(MemkitError, match="ignores x86_non_temporal_threshold=4096"):
        gt.reader(None, {})({gt.NT: 4096})
    monkeypatch.setattr(glibc, "read", lambda loader, env: "not available: no loader")
    with pytest.raises(MemkitError, match="cannot be read"):
        gt.reader(None, {})({})


def fake_times(view_paths, grid, ns_of, rounds=12, seed=1):
    """{strategy: {(op, size): [ns per round]}}, ns_of(strategy, op, size) with 1% noise."""
    rng = random.Random(seed)
    return {s: {(op, size): [ns_of(s, op, size) * rng.uniform(0.995, 1.005) for _ in range(rounds)]
                for ops in gt.FAMILIES.values() for op in ops for size in grid} for s in ("vec", "rep", "nt")}


def test_zen3s_misaligned_rep_movsb_moves_out_and_the_line_says_so():
    """Zen 3: rep movsb 29x slower at a misaligned destination, non-temporal
    stores better beyond half the L3: both corrected, rep stosb kept."""
    paths = gt.GlibcPaths(glibc_like(ZEN3, amd=True))
    grid = gt.size_grid(KiB, 256 * MiB, 2, ZEN3, {"l2": 512 * KiB, "l3": 32 * MiB}, 2)
    strategies = {n: paths.view(s) for n, s in gt.forced(grid[0]).items()}

    def ns(strategy, op, size):
        base = size / 10.0
        if strategy == "rep" and op == "copy3":
            return base * 29
        if strategy == "nt" and op in ("copy", "copy3"):
            return base * (0.7 if size >= 16 * MiB else 1.5)
        return base

    choices, picks = gt.decide(fake_times(paths, grid, ns), grid, paths, strategies)
    got = {c.name: c for c in choices}
    assert got[gt.NT].moved and got[gt.NT].value == 16 * MiB
    # no size left to rep movsb: its threshold at glibc's stop (the L2)
    assert got[gt.MOVSB].moved and got[gt.MOVSB].value == 512 * KiB
    assert not got[gt.STOSB].moved and got[gt.STOSB].value == 2048
    assert "11/12 rounds" in got[gt.NT].why or "12/12 rounds" in got[gt.NT].why
    line, moved = gt.line_of(choices, ZEN3)
    assert moved and line == ("GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=16777216:"
                              "glibc.cpu.x86_rep_movsb_threshold=524288")


def test_nothing_moves_on_noise_and_the_line_is_glibcs_own():
    paths = gt.GlibcPaths(glibc_like(XEON, amd=False))
    grid = gt.size_grid(16 * KiB, 4 * MiB, 1, XEON, {}, 2)
    strategies = {n: paths.view(s) for n, s in gt.forced(grid[0]).items()}
    choices, _ = gt.decide(fake_times(paths, grid, lambda s, op, size: size / 10.0), grid, paths, strategies)
    assert not any(c.moved for c in choices)
    line, moved = gt.line_of(choices, XEON)
    assert not moved and line == ("GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=42860544:"
                                  "glibc.cpu.x86_rep_movsb_threshold=2112:glibc.cpu.x86_rep_stosb_threshold=2048")


def test_the_confirmation_judges_by_glibcs_paths():
    """tune.confirm with glibc's paths: a move that is faster where it
    decides holds; the cells it leaves alone are the noise."""
    paths = gt.GlibcPaths(glibc_like(XEON, amd=False))
    sizes = [4 * KiB * 2 ** k for k in range(10)]
    cells = [(op, s) for ops in gt.FAMILIES.values() for op in ops for s in sizes]
    move = tune.Choice(gt.MOVSB, 2112, 64 * KiB - 1, "made up", True)
    rng = random.Random(3)
    faster = {c for c in cells if c[0] in ("copy", "copy3") and c[1] < 64 * KiB}
    times = {"defaults": {c: [100 * rng.uniform(0.98, 1.02) for _ in range(12)] for c in cells},
             "tuned": {c: [(80 if c in faster else 100) * rng.uniform(0.98, 1.02) for _ in range(12)]
                       for c in cells}}
    [conf] = tune.confirm([move], gt.values_of(XEON), cells, times, paths)
    assert set(conf.cells) == faster and conf.holds
    assert gt.confirmation_record(conf)["tunable"] == "glibc.cpu.x86_rep_movsb_threshold"


def one_line(text: str) -> list:
    """What `memkit try --glibc-tunables @FILE` reads of a file: its lines
    that are neither blank nor # comments."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_the_line_file_and_evidence(tmp_path):
    fp = {"cpu_model": "AMD EPYC", "vendor": "AuthenticAMD", "family": 25, "model": 1, "glibc": "2.36"}
    line = "GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=524288"
    text = gt.line_file_text(line, True, fp, "the method")
    assert one_line(text) == [line] and text.startswith(gt.LINE_MARKER.decode())
    doc = {"format": gt.EVIDENCE_FORMAT, "line": line}
    written = gt.write_outputs(tmp_path, text, doc)
    assert written == [tmp_path / gt.LINE_FILE, tmp_path / gt.EVIDENCE_FILE]
    assert json.loads(written[1].read_text())["line"] == line
    gt.write_outputs(tmp_path, text, doc)                 # its own files it replaces
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / gt.LINE_FILE).write_text("GLIBC_TUNABLES=something of the user's\n")
    with pytest.raises(MemkitError):
        gt.check_outputs(foreign)
    # --dry-run: no line, the evidence only where asked
    assert gt.targets(None, None) == (None, None)
    assert gt.write_outputs(None, text, doc, tmp_path / "ev.json") == [tmp_path / "ev.json"]


@pytest.mark.parametrize("extra, says", [
    (["--check"], "--glibc goes without --check"),
    (["--for", "somewhere"], "--glibc goes without --for"),
])
def test_glibc_refuses_what_it_does_not_do(tmp_path, extra, says):
    p = run_cli("tune", "--glibc", "--timer", "/bin/true", *extra, env=cli_env(), timeout=60)
    assert p.returncode != 0 and says in p.stderr, p.stderr


def test_glibc_out_must_be_a_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    p = run_cli("tune", "--glibc", "--timer", "/bin/true", "--out", f, env=cli_env(), timeout=60)
    assert p.returncode != 0 and "a directory" in p.stderr, p.stderr


def test_tune_glibc_quick_for_real(tmp_path, cli):
    """The real timing program under the real glibc: the shape of what it
    prints and writes, whatever this machine's speed."""
    bench = real_bench_dir()
    if not isinstance(machine.LiveMachine().glibc_view(), dict):
        pytest.skip("no glibc diagnostics on this machine")
    # a GLIBC_TUNABLES of the user's is left out: glibc is measured as shipped
    p = cli("tune", "--glibc", "--quick", "--build", bench.parent, "--out", tmp_path, timeout=300,
            env=cli_env(GLIBC_TUNABLES="glibc.cpu.x86_rep_stosb_threshold=1"))
    assert p.returncode == 0, p.stderr
    assert "note: the GLIBC_TUNABLES in this environment" in p.stdout
    [line] = [ln for ln in p.stdout.splitlines() if ln.startswith("GLIBC_TUNABLES=")]
    assert "nothing moved" in p.stdout or "tuned for this machine" in p.stdout
    assert one_line((tmp_path / gt.LINE_FILE).read_text()) == [line]
    doc = json.loads((tmp_path / gt.EVIDENCE_FILE).read_text())
    assert doc["format"] == gt.EVIDENCE_FORMAT and doc["line"] == line
    assert doc["glibc_view"] == machine.LiveMachine().glibc_view(env={})
    assert {d["tunable"] for d in doc["decisions"]} == {gt.NAMESPACE + t for t in gt.TUNABLES}
    assert {label for c in doc["cells"] for label in c["ns"]} == {"vec", "rep", "nt"}
    assert all(len(ns) == doc["rule"]["rounds"] for c in doc["cells"] for ns in c["ns"].values())
    # a strategy times only where it runs its own path: 2.36's memset has no non-temporal one
    assert not any("nt" in c["ns"] for c in doc["cells"] if c["op"] in ("set0", "set"))


def test_the_timing_program_times_glibc_only_on_its_workloads():
    program = real_bench_dir() / "memkit-tune-experiment"
    p = subprocess.run([str(program), "routines=glibc", "configs=glibc@", "cells=pcopy:4096"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "routines=glibc times set0, set, copy and copy3, not pcopy" in p.stderr
    p = subprocess.run([str(program), "routines=libc", "configs=glibc@", "cells=copy:4096"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "memkit|glibc" in p.stderr, p.stderr
