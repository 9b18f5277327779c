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
    machines = REPO / "tests" / "data" / "machines"
    monkeypatch.setenv(machine.ENV, str(machines / "intel-xeon-6-167"))   # below glibc's bound: it keeps its own
    with pytest.raises(MemkitError, match="ignores x86_non_temporal_threshold=4096"):
        gt.reader(None, {})({gt.NT: 4096})
    monkeypatch.setenv(machine.ENV, str(machines / "amd-zen5-26-2"))      # no glibc view recorded there
    with pytest.raises(MemkitError, match="cannot be read"):
        gt.reader(None, {})({})


def fake_times(grid, ns_of, rounds=12, seed=1, ops=None, strategies=("vec", "rep")):
    """{strategy: {(op, size): [ns per round]}}, ns_of(strategy, op, size) with 1% noise."""
    rng = random.Random(seed)
    ops = ops or [op for ops in gt.FAMILIES.values() for op in ops]
    return {s: {(op, size): [ns_of(s, op, size) * rng.uniform(0.995, 1.005) for _ in range(rounds)]
                for op in ops for size in grid} for s in strategies}


def fake_cold(sizes, ns_of, rounds=12, seed=2):
    """The cold copies' times: vec and nt, copied alone and read after."""
    return fake_times(sizes, ns_of, rounds, seed, gt.COLD_OPS, ("vec", "nt"))


COLD_SIZES = catalogue.size_grid(256 * KiB, 128 * MiB, 2)


def zen3_like(rep_misaligned=29.0, rep_aligned=1.0):
    """Zen 3's rep movsb: as fast as the loop aligned, 29x slower misaligned; its
    non-temporal copies: faster alone from 256 KiB, read after slower below
    8 MiB, even at 8-11 MiB, faster from 16 MiB."""
    def hot(strategy, op, size):
        if strategy == "rep" and op in ("copy", "copy3"):
            return size / 10.0 * (rep_misaligned if op == "copy3" else rep_aligned)
        return size / 10.0

    def cold(strategy, op, size):
        if strategy == "vec":
            return size / 10.0
        if op == "alone":
            return size / 10.0 * 0.6
        return size / 10.0 * (1.3 if size < 8 * MiB else 1.0 if size < 16 * MiB else 0.8)
    return hot, cold


def decide_on(view, amd, hot_ns, cold_ns, grid=None):
    paths = gt.GlibcPaths(glibc_like(view, amd=amd))
    grid = grid or gt.size_grid(KiB, 256 * MiB, 2, view, {"l2": 512 * KiB, "l3": 32 * MiB}, 2)
    strategies = {n: paths.view(s) for n, s in gt.forced(grid[0]).items()}
    return gt.decide(fake_times(grid, hot_ns), fake_cold(COLD_SIZES, cold_ns), grid, COLD_SIZES, paths, strategies)


def test_zen3s_misaligned_rep_movsb_moves_out_and_the_trades_are_said():
    """Non-temporal stores where neither a copy alone nor one read after
    loses (8 MiB), not where the copy alone gains (256 KiB); rep movsb out
    for the misaligned copies' cliff, which aligned ones do not have: the
    line takes the safe side and says the other."""
    hot, cold = zen3_like()
    d = decide_on(ZEN3, True, hot, cold)
    got = {c.name: c for c in d.choices}
    assert got[gt.NT].moved and got[gt.NT].value == 8 * MiB
    # no size left to rep movsb: its threshold at glibc's stop (the L2)
    assert got[gt.MOVSB].moved and got[gt.MOVSB].value == 512 * KiB
    assert not got[gt.STOSB].moved and got[gt.STOSB].value == 2048
    assert "12/12 rounds" in got[gt.NT].why or "11/12 rounds" in got[gt.NT].why
    line, moved = gt.line_of(d.choices, ZEN3)
    assert moved and line == ("GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=8388608:"
                              "glibc.cpu.x86_rep_movsb_threshold=524288")
    nt_race, nt_trade, rep_race, rep_trade = d.trades
    assert "copied alone faster at 256 KiB..128 MiB (1.6" in nt_race
    assert "read right after slower at 256 KiB..5.7 MiB" in nt_race and "faster at 16 MiB..128 MiB" in nt_race
    assert "by copies left alone the rule puts non-temporal stores from 256 KiB, by copies read right " \
           "after from 16 MiB; the line takes from 8 MiB" in nt_trade
    assert nt_trade.endswith("glibc.cpu.x86_non_temporal_threshold=262144")
    assert "aligned copies within the noise everywhere" in rep_race
    assert "misaligned copies slower at 1 KiB..362.1 KiB (0.03x)" in rep_race
    assert "by aligned copies the rule puts rep movsb from 2.1 KiB, by misaligned ones never; the line " \
           "takes never" in rep_trade and rep_trade.endswith("glibc.cpu.x86_rep_movsb_threshold=2112")


def test_where_every_program_agrees_no_trade_is_offered():
    """rep movsb without a cliff loses aligned and misaligned alike: no
    'depends' line for it."""
    hot, cold = zen3_like(rep_misaligned=1.5, rep_aligned=1.5)
    d = decide_on(ZEN3, True, hot, cold)
    assert [t for t in d.trades if "depends" in t and "rep movsb" in t] == []
    assert {c.name: c.value for c in d.choices}[gt.MOVSB] == 512 * KiB


def test_nothing_moves_on_noise_and_the_line_is_glibcs_own():
    same = lambda s, op, size: size / 10.0   # noqa: E731
    grid = gt.size_grid(16 * KiB, 4 * MiB, 1, XEON, {}, 2)
    d = decide_on(XEON, False, same, same, grid)
    assert not any(c.moved for c in d.choices)
    assert not any("depends" in t for t in d.trades)
    line, moved = gt.line_of(d.choices, XEON)
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
    (["--for", "somewhere"], "--for somewhere: not a `memkit record` directory"),
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
    # rep movsb and rep stosb in the loop; non-temporal copies into a cold destination, alone and read after
    assert {label for c in doc["cells"] for label in c["ns"]} == {"vec", "rep"}
    assert {label for c in doc["cold_cells"] for label in c["ns"]} == {"vec", "nt", "glibc"}
    assert {c["op"] for c in doc["cold_cells"]} == set(gt.COLD_OPS)
    rounds = doc["rule"]["rounds"]
    assert all(len(ns) == rounds for c in doc["cells"] for ns in c["ns"].values())
    assert all(len(ns) == rounds * gt.COLD_ROUNDS for c in doc["cold_cells"] for ns in c["ns"].values())
    assert "the trade (each strategy against the vector loop" in p.stdout
    assert f"memkit try --glibc-tunables @{tmp_path / gt.LINE_FILE}" in p.stdout


def test_the_timing_program_times_glibc_only_on_its_workloads():
    program = real_bench_dir() / "memkit-tune-experiment"
    p = subprocess.run([str(program), "routines=glibc", "configs=glibc@", "cells=pcopy:4096"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "routines=glibc times set0, set, copy and copy3, not pcopy" in p.stderr
    p = subprocess.run([str(program), "routines=libc", "configs=glibc@", "cells=copy:4096"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "memkit|glibc" in p.stderr, p.stderr


# ---- the recorded runs: what the rule makes of real timings ----

def replayed(evidence: str, amd: bool, cold=None):
    """decide() on an evidence file's timings of the loop (tune --glibc's
    own, recorded), with cold copies' times where given."""
    doc = json.loads((DATA.parent / evidence).read_text())
    view = doc["glibc_view"]
    paths = gt.GlibcPaths(glibc_like(view, amd=amd))
    strategies = {n: s["view"] for n, s in doc["strategies"].items()}
    hot = {label: {} for label in ("vec", "rep")}
    for c in doc["cells"]:
        for label in hot:
            if label in c["ns"]:
                hot[label][(c["op"], c["size"])] = c["ns"][label]
    cold = cold or {}
    sizes = sorted({size for cells in cold.values() for _, size in cells})
    return view, gt.decide(hot, cold, doc["rule"]["grid"], sizes, paths, strategies)


def zen4_copy_read() -> dict:
    """Zen 4's copy-read (make bench): memkit's cached-stores and nt-stores
    per round, destination cold, standing in for glibc's vector loop and
    non-temporal stores (the same stores; glibc's own are what tune times)."""
    doc = json.loads((DATA / "amd-zen4-25-17.copy-read.json").read_text())
    out = {}
    for series, label in (("cached-stores", "vec"), ("nt-stores", "nt")):
        for m in doc["series"][series]:
            out.setdefault(label, {})[(gt.THEN["none" if m["then"] == "none" else "read"], m["size"])] = \
                [m["size"] / g for g in m["gb_per_s"]]
    return out


def test_the_recorded_xeon_run_decides_as_it_did():
    """Intel Xeon 6/167's tune --glibc (tests/data/runs/): rep movsb from 4 KiB
    and rep stosb from 11.3 KiB, as the line it wrote; no cold copies in it,
    so the non-temporal threshold stays."""
    view, d = replayed("runs/intel-xeon-6-167/glibc-tunables.evidence.json", amd=False)
    assert gt.line_of(d.choices, view) == (
        "GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=4095:glibc.cpu.x86_rep_stosb_threshold=11583", True)


def test_the_recorded_zen4_runs_decide_for_programs():
    """Zen 4 (family 25 model 17): its recorded loop moves rep movsb out
    (misaligned copies fall); its recorded copy-read puts non-temporal
    stores where copies read after stop losing (6.3 MiB; they win from 10
    MiB), not at the hot loop's 45 MiB, and says that copies left alone gain
    from 256 KiB."""
    assert recorded("amd-zen4-25-17")["shared_cache_size"] == 320 * MiB
    view, d = replayed("glibc/amd-zen4-25-17.tune-glibc.json", amd=True, cold=zen4_copy_read())
    got = {c.name: c for c in d.choices}
    assert got[gt.MOVSB].moved and got[gt.MOVSB].value == MiB   # at glibc's stop, the L2: never
    assert got[gt.NT].moved and 5 * MiB <= got[gt.NT].value <= 16 * MiB, got[gt.NT]
    [depends] = [t for t in d.trades if "depends" in t and "non-temporal" in t]
    assert "by copies left alone the rule puts non-temporal stores from 256 KiB" in depends
    assert depends.endswith("glibc.cpu.x86_non_temporal_threshold=262144")
    assert any("misaligned copies slower at" in t for t in d.trades)


# ---- the cold copies' runs ----

class FakeResult:
    def __init__(self, measurements):
        self.measurements = measurements


def test_copy_reads_store_kinds_become_ns_per_copy_paired_by_round():
    """copy-read's cached-stores and nt-stores (the two store kinds, taking
    turns in each round) and glibc as shipped, GB/s per round, as ns per
    copy; its other methods are not used."""
    n = 1 << 20
    def m(series, then, gbs):
        return {"series": series, "params": {"size": n, "then": then}, "sample_values": gbs}
    res = FakeResult([m("cached-stores", "none", [10.0, 20.0]), m("nt-stores", "none", [20.0, 40.0]),
                      m("glibc", "none", [10.0, 10.0]), m("memkit", "none", [99.0, 99.0]),
                      m("cached-stores", "read", [5.0]), m("nt-stores", "read", [4.0]), m("glibc", "read", [5.0])])
    assert gt.cold_times(res, None) == {
        ("alone", n): {"vec": [n / 10, n / 20], "nt": [n / 20, n / 40], "glibc": [n / 10, n / 10]},
        ("read", n): {"vec": [n / 5], "nt": [n / 4], "glibc": [n / 5]}}
    # a one-size process stands for the program's size (copy-read takes whole 256-byte blocks)
    assert set(gt.cold_times(res, n + 100)) == {("alone", n + 100), ("read", n + 100)}


    [grid] = gt.cold_runs(None, KiB, 128 * MiB, 2)
    assert grid[:3] == [f"min={256 * KiB}", f"max={128 * MiB}", "per_octave=2"] and "dst=cold" in grid
    assert [r[:2] for r in gt.cold_runs([16 * MiB, 300_000], KiB, None, 2)] == \
        [[f"min={16 * MiB}", f"max={16 * MiB}"], ["min=299776", "max=299776"]]


# ---- for one program: --for REC ----

def numpy_like() -> gt.ForProgram:
    """A recording like numpy_copies.py's: 16 MiB copies, and many small ones."""
    dists = {"memcpy": {16 * MiB: 0.02, 64: 0.7, 200: 0.28}, "memset": {16: 1.0}}
    return gt.ForProgram(REPO / "rec", ["python3", "numpy_copies.py"], dists,
                         {"memcpy": 100_000, "memset": 50_000, "memmove": 0}, KiB, None)


def test_for_a_program_its_sizes_are_timed_and_each_move_weighed():
    prog = numpy_like()
    plan = prog.planned()
    assert plan.nothing is None and plan.grids == {"memcpy": [16 * MiB]}
    paths = gt.GlibcPaths(glibc_like(ZEN3, amd=True))
    setup = gt.prepare({}, {"rounds": 12, "lo": KiB, "hi": None}, paths, prog)
    assert setup.cold_sizes == [16 * MiB] and setup.grid == [16 * MiB]
    assert setup.hot_cells() == [("set0", 16 * MiB), ("set", 16 * MiB)]   # no copy there is rep movsb's
    assert "for the program recorded in" in setup.method

    def decided(nt_factor):
        cold = fake_cold([16 * MiB], lambda s, op, size: size / 10.0 * (nt_factor if s == "nt" else 1))
        measured = gt.Measured({}, cold)
        d = gt.decide({}, cold, [], [16 * MiB], paths, {n: paths.view(c) for n, c in setup.configs.items()})
        return d, gt.weigh_for(prog, d, measured, ZEN3, paths)

    d, weighed = decided(0.8)   # non-temporal faster at the program's 16 MiB, alone and read after
    assert gt.line_of(d.choices, ZEN3)[0] == "GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=16777216"
    assert weighed and weighed[0].startswith("moving x86_non_temporal_threshold to 16 MiB saves")
    d, weighed = decided(1.25)  # slower: nothing moves, nothing to weigh
    assert not any(c.moved for c in d.choices) and weighed == []


def test_a_program_that_copies_little_has_nothing_to_tune():
    prog = gt.ForProgram(REPO / "rec", ["true"], {"memcpy": {64: 1.0}}, {"memcpy": 10}, KiB, None)
    assert "nothing to tune for this program" in prog.planned().nothing


# ---- giving the line to programs ----

def test_how_to_apply_the_line_names_each_place_and_warns():
    line = "GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=16777216"
    text = "\n".join(gt.apply_lines(line, REPO / "rec" / gt.LINE_FILE, ["python3", "numpy_copies.py"]))
    spec = line.removeprefix("GLIBC_TUNABLES=")
    assert f"env GLIBC_TUNABLES={spec} python3 numpy_copies.py" in text
    assert f"export GLIBC_TUNABLES={spec}" in text
    assert f'Environment="GLIBC_TUNABLES={spec}"' in text
    assert f"docker run -e GLIBC_TUNABLES={spec} IMAGE" in text and f"ENV GLIBC_TUNABLES={spec}" in text
    assert "every program started with it" in text
    assert f"memkit try --glibc-tunables @{REPO / 'rec' / gt.LINE_FILE} -- python3 numpy_copies.py" in text


def test_tune_glibc_apply_reads_the_line_written(tmp_path):
    fp = {"cpu_model": "AMD EPYC", "vendor": "AuthenticAMD", "family": 25, "model": 17, "glibc": "2.36"}
    line = "GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1048576"
    gt.write_outputs(tmp_path, gt.line_file_text(line, True, fp, "the method", ["a trade"]), {"line": line})
    p = run_cli("tune", "--glibc", "--apply", "--out", tmp_path, env=cli_env(), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "  " + line in p.stdout.splitlines() and "Environment=" in p.stdout
    p = run_cli("tune", "--glibc", "--apply", "--out", tmp_path / "none", env=cli_env(), timeout=60)
    assert p.returncode != 0 and "no line at" in p.stderr
    p = run_cli("tune", "--apply", env=cli_env(), timeout=60)
    assert p.returncode != 0 and "--apply goes with --glibc" in p.stderr
