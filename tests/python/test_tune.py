# SPDX-License-Identifier: Apache-2.0
"""memkit tune: the decision rule on synthetic paired rounds, the whole
command against a fake timing program whose speeds are known (an obviously bad
strategy must not be chosen, a good one must, with its confidence stated),
--out checked before measuring, --check's comparison, and the real
library: the profile carries the CPU and loads; corrupt, missing and
overridden profiles."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from conftest import FINGERPRINT, cli_env, real_bench_dir, run_cli
from memkit.tuning import catalogue, for_program, level_choice, profile_file, tune

# ---- the rule ----


def times_of(config_ns: dict, op="set0", size=4096) -> dict:
    """{config: {(op, size): per-round ns}}"""
    return {c: {(op, size): list(ns)} for c, ns in config_ns.items()}


def test_pick_needs_confidence_and_margin():
    inc = [100.0] * 7
    clear = times_of({"memset:loop": inc, "memset:nt": [80.0] * 7})
    p = tune.pick(clear, "memset", ["loop", "nt"], ["set0"], 4096, "loop")
    assert p.chosen == "nt" and p.evidence.wins == 7 and p.evidence.median == pytest.approx(1.25)
    # faster in 6 of 7 rounds: p = 8/128 > 0.01, the default stays
    six = times_of({"memset:loop": inc, "memset:nt": [80.0] * 6 + [120.0]})
    assert tune.pick(six, "memset", ["loop", "nt"], ["set0"], 4096, "loop").chosen == "loop"
    # always faster but by 1%: within the margin, the default stays
    tiny = times_of({"memset:loop": inc, "memset:nt": [99.0] * 7})
    assert tune.pick(tiny, "memset", ["loop", "nt"], ["set0"], 4096, "loop").chosen == "loop"


def test_pick_rejects_a_challenger_slower_on_one_workload():
    t = {"memcpy:loop": {("copy", 4096): [100.0] * 7, ("copy3", 4096): [100.0] * 7},
         "memcpy:rep_movsb": {("copy", 4096): [25.0] * 7, ("copy3", 4096): [150.0] * 7}}
    # 2x faster in the geometric mean, but 1.5x slower misaligned: not taken
    assert tune.pick(t, "memcpy", ["loop", "rep_movsb"], ["copy", "copy3"], 4096, "loop").chosen == "loop"


def picks_of(default_from, chosen: dict, sizes, win=1.5):
    """Picks over sizes: the default "nt" from default_from, "loop" below;
    `chosen` overrides a size's pick (with evidence of `win`)."""
    out = []
    for s in sizes:
        d = "nt" if s >= default_from else "loop"
        c = chosen.get(s, d)
        out.append(tune.Pick(s, d, c, None if c == d else tune.Evidence(c, d, s, [win] * 7)))
    return out


MB = 1 << 20


def test_window_keeps_a_default_the_measurement_agrees_with():
    sizes = [MB, 2 * MB, 4 * MB]
    c, = tune.window(("nt_threshold",), {"nt_threshold": 3 * MB}, picks_of(3 * MB, {}, sizes), "nt", "nt")
    assert not c.moved and c.value == 3 * MB and "no measured size" in c.why


def test_window_moves_only_where_every_moved_size_is_confident():
    sizes = [4 * MB, 8 * MB, 11 * MB, 16 * MB, 22 * MB, 32 * MB, 64 * MB]
    # nt won at 11 and 22 MiB; at 16 MiB the loop stayed (the default, no confidence
    # either way): the threshold can move to 22 MiB, not to 11
    picks = picks_of(32 * MB, {11 * MB: "nt", 22 * MB: "nt"}, sizes)
    c, = tune.window(("nt_threshold",), {"nt_threshold": 32 * MB}, picks, "nt", "nt")
    assert c.moved and c.value == 22 * MB and "1.50x" in c.why and "7/7 rounds" in c.why
    # the loop won at 32 MiB and at 64 MiB: never
    picks = picks_of(32 * MB, {32 * MB: "loop", 64 * MB: "loop"}, sizes)
    c, = tune.window(("nt_threshold",), {"nt_threshold": 32 * MB}, picks, "nt", "nt")
    assert c.moved and c.value is None
    # the loop won at 32 MiB only: from 64 MiB
    picks = picks_of(32 * MB, {32 * MB: "loop"}, sizes)
    c, = tune.window(("nt_threshold",), {"nt_threshold": 32 * MB}, picks, "nt", "nt")
    assert c.moved and c.value == 64 * MB
    # the loop won at 64 MiB only, nt stays at 32: no single threshold follows that
    picks = picks_of(32 * MB, {64 * MB: "loop"}, sizes)
    c, = tune.window(("nt_threshold",), {"nt_threshold": 32 * MB}, picks, "nt", "nt")
    assert not c.moved and c.value == 32 * MB and "confident wins against the default at 64 MiB" in c.why


def test_window_with_an_end():
    sizes = [16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10]
    picks = [tune.Pick(s, "loop", c, None if c == "loop" else tune.Evidence(c, "loop", s, [2.0] * 7))
             for s, c in zip(sizes, ["loop", "rep_movsb", "rep_movsb", "loop", "loop"])]
    got = tune.window(("rep_movsb_threshold", "rep_movsb_stop"),
                      {"rep_movsb_threshold": None, "rep_movsb_stop": None}, picks, "rep_movsb", "rep")
    assert [(c.name, c.value, c.moved) for c in got] == [
        ("rep_movsb_threshold", 32 << 10, True), ("rep_movsb_stop", 128 << 10, True)]


def test_size_grid():
    assert catalogue.size_grid(1024, 8192, 1) == [1024, 2048, 4096, 8192]
    assert catalogue.size_grid(1024, 4096, 2) == [1024, 1472, 2048, 2880, 4096]
    held_out = catalogue.size_grid(1024, 4096, 2, offset=0.5)
    assert not set(held_out) & set(catalogue.size_grid(1024, 4096, 2))


def test_profile_file(tmp_path):
    path = tmp_path / "sub" / "profile"
    profile_file.write_profile(path, [tune.Choice("nt_threshold", 1 << 25, 1 << 26, "because", True),
                              tune.Choice("rep_stosb_threshold", None, None, "never wins", False)],
                       {"cpu_model": "X", "microcode": "0x1", "vendor": "AuthenticAMD", "family": 26,
                        "model": 2}, "the method")
    text = path.read_text()
    assert "\ncpu=AuthenticAMD family=26 model=2 microcode=0x1\n" in text
    assert "\n# because\nnt_threshold=67108864\n" in text
    assert "\nrep_stosb_threshold" not in text and "#   rep_stosb_threshold=never: never wins" in text
    assert "# method: the method" in text
    assert not (tmp_path / "sub" / "profile.tmp").exists()


def test_default_profile_path():
    assert str(profile_file.default_profile_path({"MEMKIT_PROFILE": "/x/p"})) == "/x/p"
    assert str(profile_file.default_profile_path({"XDG_CONFIG_HOME": "/c", "HOME": "/h"})) == "/c/memkit/profile"
    assert str(profile_file.default_profile_path({"HOME": "/h"})) == "/h/.config/memkit/profile"


# ---- the command, against a fake timing program with known speeds ----

# Defaults: no rep instructions, non-temporal from 1 MiB.  Truth: rep stosb
# 3x slower everywhere (obviously bad); non-temporal fills 2x faster from
# 256 KiB; rep movsb 1.5x faster for aligned copies from 64 KiB (the same
# as the loop misaligned); non-temporal copies 1.3x slower everywhere; the
# 2-thread pool (the default, from 4 MiB) 1.8x faster than one thread from
# 2 MiB, 0.8x below.  Each time +-2% noise.  Each timed cell is logged to
# $FAKE_TIMER_LOG as "time OP SIZE".  It speaks memkit-tune-experiment's
# command line: --fingerprint, --loaded, and `--jsonl FILE configs=LABEL@SPEC;...
# cells=OP:SIZE,... rounds=N processes=N ...` writing the lab's records.
FAKE_TIMER = '''#!{python}
import json, os, random, sys
fp = {fp}
defaults = dict(rep_stosb_threshold="never", nt_threshold=str(1 << 20), nt_threshold_zero=str(1 << 20),
                rep_movsb_threshold="never", rep_movsb_stop="never", rep_movsb_align="64",
                nt_copy_threshold=str(1 << 20), parallel_threshold="4194304", threads="0")
def fmt(t): return ":".join(f"{{k}}={{v}}" for k, v in t.items())
def over(t, spec):
    t = dict(t)
    for item in filter(None, spec.split(":")):
        k, v = item.split("=", 1); t[k] = v
    return t
if sys.argv[1:] == ["--fingerprint"]:
    print(json.dumps(dict(fp, type="fingerprint", tunables=fmt(defaults), profile=""))); sys.exit(0)
base, prof = dict(defaults), ""
path = os.environ.get("MEMKIT_PROFILE", "none")
if path != "none":
    lines = [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]
    base.update(l.split("=", 1) for l in lines if not l.startswith("cpu="))
    prof = path
base = over(base, os.environ.get("MEMKIT_TUNABLES", ""))
if sys.argv[1:] == ["--loaded"]:
    print(json.dumps(dict(tunables=fmt(base), profile=prof, pool_threads=2))); sys.exit(0)
assert sys.argv[1] == "--jsonl", sys.argv
out, args = sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
configs = dict(c.split("@", 1) for c in args["configs"].split(";"))
cells = [(c.split(":")[0], int(c.split(":")[1])) for c in args["cells"].split(",")]
rounds = int(args["rounds"]) * int(args.get("processes", "1"))
rng = random.Random(os.getpid())
def ns(t, op, n):
    num = lambda k: float("inf") if t[k] == "never" else int(t[k])
    if op.startswith("p"):
        return n / (1.0 if n < num("parallel_threshold") else 1.8 if n >= 2 << 20 else 0.8)
    if op.startswith("set"):
        nt = num("nt_threshold_zero" if op == "set0" else "nt_threshold")
        if n >= nt: return n / (2.0 if n >= 256 << 10 else 0.5)
        if n >= num("rep_stosb_threshold"): return n / (1 / 3)
        return n / 1.0
    if num("rep_movsb_threshold") <= n < num("rep_movsb_stop") and op == "copy":
        return n / (1.5 if n >= 64 << 10 else 0.7)
    if n >= num("nt_copy_threshold"): return n / (1 / 1.3)
    return n / 1.0
log = os.environ.get("FAKE_TIMER_LOG")
with open(out, "w") as f:
    f.write(json.dumps(dict(fp, type="fingerprint", format=2)) + "\\n")
    for i, (op, n) in enumerate(cells):
        if log: open(log, "a").write(f"time {{op}} {{n}}\\n")
        for label, spec in configs.items():
            samples = [ns(over(base, spec), op, n) * rng.uniform(0.98, 1.02) for _ in range(rounds)]
            f.write(json.dumps(dict(type="measurement", experiment="tune", series=label,
                                    params=dict(op=op, size=n), metric="ns_per_call", unit="ns",
                                    better="lower", stat="median", value=sorted(samples)[rounds // 2],
                                    samples=samples, baseline=None)) + "\\n")
        print(f"progress: tune {{i + 1}}/{{len(cells)}} 0.1s {{op}} {{n}} B", file=sys.stderr, flush=True)
    f.write(json.dumps(dict(type="end", experiment="tune", processes=1, seconds=0.1)) + "\\n")
'''


@pytest.fixture(scope="module")
def fake_timer(tmp_path_factory):
    p = tmp_path_factory.mktemp("timer") / "fake-timer"
    p.write_text(FAKE_TIMER.format(python=sys.executable, fp=repr(FINGERPRINT)))
    p.chmod(0o755)
    return p


def run_tune(timer, *args, **env):
    return run_cli("tune", "--timer", timer, "--quick", *args, env=cli_env(**env), timeout=300)


@pytest.fixture(scope="module")
def tuned(fake_timer, tmp_path_factory):
    """One tune against the fake timing program: (its output, the profile)."""
    out = tmp_path_factory.mktemp("tuned") / "profile"
    return run_tune(fake_timer, "--out", out), out


def profile_settings(path):
    return dict(l.split("=", 1) for l in path.read_text().splitlines() if l and not l.startswith("#"))


def test_tune_chooses_from_measurements(tuned):
    p, out = tuned
    assert p.returncode == 0, p.stderr
    got = profile_settings(out)
    assert got["cpu"] == "AuthenticAMD family=25 model=17 microcode=0xa0"
    assert got["nt_threshold_zero"] == got["nt_threshold"] == str(256 << 10)
    assert got["rep_movsb_threshold"] == str(64 << 10)
    assert got["nt_copy_threshold"] == "never"
    assert "rep_stosb_threshold" not in got            # 3x slower: left at its default (never)
    assert got["parallel_threshold"] == str(2 << 20) and "threads" not in got
    text = out.read_text()
    assert "7/7 rounds" in text and "sign test" in text
    assert "rep_stosb_threshold" in p.stdout and "(default)" in p.stdout


def test_tune_out_checked_before_measuring(tmp_path, fake_timer):
    blocker = tmp_path / "file"
    blocker.write_text("")
    log = tmp_path / "log"
    p = run_tune(fake_timer, "--out", blocker / "profile", FAKE_TIMER_LOG=str(log))
    assert p.returncode == 1 and "cannot write the profile" in p.stderr
    assert not log.exists()                            # nothing was timed
    p = run_tune(fake_timer, "--out", tmp_path, FAKE_TIMER_LOG=str(log))
    assert p.returncode == 1 and "is a directory" in p.stderr and not log.exists()


def test_check_reports_help_and_harm(tmp_path, fake_timer, tuned):
    p = run_tune(fake_timer, "--check", "--out", tuned[1])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "helped" in p.stdout and "hurt nowhere beyond noise" in p.stdout
    assert "loop -> nt" in p.stdout and "run the same code under both" in p.stdout
    bad = tmp_path / "bad"
    bad.write_text("cpu=AuthenticAMD family=25 model=17\nrep_stosb_threshold=0\n")
    p = run_tune(fake_timer, "--check", "--out", bad)
    assert p.returncode == 1 and "HURT" in p.stdout and "memset of zero" in p.stdout


# ---- the real library reading profiles ----

def fingerprint(env_extra, tmp_path):
    exe = real_bench_dir() / "memkit-exp-fill-regions"
    env = {k: v for k, v in os.environ.items() if k not in ("MEMKIT_TUNABLES", "MEMKIT_PROFILE")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"), **env_extra)
    p = subprocess.run([str(exe), "--fingerprint"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    fp = json.loads(p.stdout)
    tun = dict(item.split("=", 1) for item in fp["tunables"].split(":"))
    return fp, tun, p.stderr


def test_library_loads_profile(tmp_path):
    prof = tmp_path / "xdg" / "memkit" / "profile"
    prof.parent.mkdir(parents=True)
    # this CPU's cpu= line, as memkit tune writes it (a profile without one is
    # applied with a line on stderr saying it is tied to no CPU)
    here, _, _ = fingerprint({"MEMKIT_PROFILE": "none"}, tmp_path)
    prof.write_text(profile_file.cpu_line(here) + "\n# comment\n\nnt_threshold=12345\n  rep_stosb_threshold = 8192\n"
                    .replace(" = ", "="))
    fp, tun, err = fingerprint({}, tmp_path)          # found at the default path
    assert fp["profile"] == str(prof)
    assert tun["nt_threshold"] == "12345" and tun["rep_stosb_threshold"] == "8192"
    assert err == ""
    # MEMKIT_TUNABLES overrides the profile
    fp, tun, _ = fingerprint({"MEMKIT_TUNABLES": "nt_threshold=4096"}, tmp_path)
    assert tun["nt_threshold"] == "4096" and tun["rep_stosb_threshold"] == "8192"
    # MEMKIT_PROFILE=none: no profile
    fp, tun, _ = fingerprint({"MEMKIT_PROFILE": "none"}, tmp_path)
    assert fp["profile"] == "" and tun["nt_threshold"] != "12345"


def test_library_ignores_corrupt_profile(tmp_path):
    prof = tmp_path / "bad"
    prof.write_text("nt_threshold=12345\nthis is not a setting\n")
    fp, tun, err = fingerprint({"MEMKIT_PROFILE": str(prof)}, tmp_path)
    assert fp["profile"] == ""
    assert tun["nt_threshold"] != "12345"              # the good line is ignored too
    assert err.count("\n") == 1 and "corrupt" in err and str(prof) in err


def test_library_reports_missing_named_profile(tmp_path):
    fp, _, err = fingerprint({"MEMKIT_PROFILE": str(tmp_path / "nope")}, tmp_path)
    assert fp["profile"] == "" and "cannot be read" in err and err.count("\n") == 1
    # but a missing profile at the default path is normal and silent
    _, _, err = fingerprint({}, tmp_path)
    assert err == ""


def test_tune_end_to_end_quick(tmp_path, cli):
    """The real timing program and library: a profile for this CPU that loads."""
    bench = real_bench_dir()
    out = tmp_path / "profile"
    p = cli("tune", "--quick", "--max-size", "1M", "--build", bench.parent, "--out", out, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "tunable" in p.stdout and "why" in p.stdout
    fp, _, err = fingerprint({"MEMKIT_PROFILE": str(out)}, tmp_path)
    assert fp["profile"] == str(out) and err == ""
    assert f"\ncpu={fp['vendor']} family={fp['family']} model={fp['model']} " in out.read_text()
    p = cli("tune", "--check", "--quick", "--max-size", "1M", "--build", bench.parent, "--out", out,
            timeout=600)
    assert "helped at" in p.stdout and ("hurt nowhere" in p.stdout or "HURT" in p.stdout), p.stdout


# ---- tune --for a recording ----

def write_recording(d, dists: dict, calls: dict, command=("myprog", "--fast")):
    """A `memkit record` directory: function -> {size: probability}, calls per function."""
    d.mkdir(parents=True, exist_ok=True)
    files = {"memset": "Memset.csv", "memcpy": "Memcpy.csv", "memmove": "Memmove.csv"}
    for fn, dist in dists.items():
        lines = [",".join(f"{s}:{p:.6g}" for s, p in sorted(dist.items())), "0:1", "64:1"]
        (d / files[fn]).write_text("\n".join(lines) + "\n")
    summary = {"format": 2, "calls": {fn: calls.get(fn, 0) for fn in files},
               "bytes": {fn: round(calls.get(fn, 0) * sum(s * p for s, p in dists.get(fn, {}).items()))
                         for fn in files},
               "processes": 1, "threads": 1, "programs": {command[0]: 1}, "command": list(command),
               "exit_status": 0, "seconds": 1.0, "working_set": {}, "l3_bytes": 32 << 20}
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def library_paths():
    """What the real library runs where (memkit-tunables --paths of the build)."""
    return catalogue.Paths(real_bench_dir())


ZEN4 = {"rep_stosb_threshold": None, "nt_threshold_zero": 16 * MB, "nt_threshold": 64 * MB,
        "rep_movsb_threshold": None, "rep_movsb_stop": None, "nt_copy_threshold": 20 * MB}


def test_plan_for_nothing_when_every_call_is_below_every_threshold():
    plan = for_program.plan_for({"memset": {64: 0.9, 1887437: 0.1}, "memcpy": {4096: 1.0}},
                         {"memset": 1000, "memcpy": 50}, ZEN4)
    assert plan.nothing == ("nothing to tune for this program: its largest call, 1.8 MiB, is below every "
                            "threshold (the lowest, 16 MiB)")
    # one memset of 16 MiB reaches nt_threshold_zero
    plan = for_program.plan_for({"memset": {64: 0.999, 16 * MB: 0.001}}, {"memset": 1000}, ZEN4)
    assert plan.nothing is None and plan.grids == {"memset": [16 * MB]}


def test_plan_for_times_only_the_sizes_that_carry_calls_or_bytes():
    dists = {"memset": {64: 0.98, 4096: 0.0199, 48 * MB: 0.0001},
             "memcpy": {100: 0.5, 16384: 0.5}, "memmove": {1 << 20: 1.0}}
    plan = for_program.plan_for(dists, {"memset": 30000, "memcpy": 200, "memmove": 0}, ZEN4)
    assert plan.nothing is None
    # 64 B: most calls, but below 1 KiB; 4 KiB: 2% of the calls; 48 MiB: 3 calls, most bytes;
    # memmove never called: skipped
    assert plan.grids == {"memset": [4096, 48 * MB], "memcpy": [16384]}
    assert plan.calls["memset"][48 * MB] == pytest.approx(3)
    assert plan.calls["memcpy"] == {100: pytest.approx(100), 16384: pytest.approx(100)}
    assert any(n.startswith("memset: 30000 calls; timing 4 KiB") and "48 MiB (3 calls" in n for n in plan.notes)
    assert not any(n.startswith("memmove") for n in plan.notes)
    # a size with 0.5% of the calls and 0.5% of the bytes is not timed
    plan = for_program.plan_for({"memcpy": {2048: 0.995, 4096: 0.005}}, {"memcpy": 1000},
                         dict(ZEN4, nt_copy_threshold=1024))
    assert plan.grids == {"memcpy": [2048]}


def test_weigh_sums_calls_times_saving_and_cost():
    defaults = dict(ZEN4, nt_threshold=32 * MB, nt_threshold_zero=32 * MB)
    times = {"memset:loop": {("set", 24 * MB): [3.1e6, 3.0e6, 2.9e6], ("set0", 24 * MB): [1.0e6] * 3,
                             ("set", 20 * MB): [2.0e6] * 3, ("set0", 20 * MB): [1.0e6] * 3},
             "memset:nt": {("set", 24 * MB): [2.0e6] * 3, ("set0", 24 * MB): [9.0e5] * 3,
                           ("set", 20 * MB): [2.4e6] * 3, ("set0", 20 * MB): [9.0e5] * 3}}
    calls = {1024: 1000, 20 * MB: 2, 24 * MB: 3}
    w = for_program.weigh("memset", defaults, {"nt_threshold": 16 * MB}, times, calls, library_paths())
    # only the non-zero fills change path; half the memsets counted as such:
    # 24 MiB: 3 calls x (3.0e6 - 2.0e6) / 2 saved; 20 MiB: 2 calls x (2.4e6 - 2.0e6) / 2 lost
    assert w.saved == pytest.approx(1.5e6) and w.cost == pytest.approx(0.4e6)
    assert w.net == pytest.approx(1.1e6)
    assert [s for s, _, _ in w.where] == [20 * MB, 24 * MB]      # 1 KiB: path unchanged
    assert for_program.fmt_ns(w.net) == "1.1 ms"
    # the move is kept with its estimate ...
    c = tune.Choice("nt_threshold", 32 * MB, 16 * MB, "nt from 16 MiB", True)
    lines = for_program.weigh_choices("memset", [c], defaults, times, calls, library_paths())
    assert c.moved and lines == ["moving nt_threshold to 16 MiB saves ~1.1 ms per run of this program "
                                 "(3 calls of 24 MiB, 2 calls of 20 MiB); that is net of 400 µs it costs where it loses"]
    # ... and goes back to the default where the program loses more than it gains
    c = tune.Choice("nt_threshold", 32 * MB, 16 * MB, "nt from 16 MiB", True)
    lines = for_program.weigh_choices("memset", [c], defaults, times, {20 * MB: 10, 24 * MB: 1}, library_paths())
    assert not c.moved and c.value == 32 * MB and lines[0].startswith("not moving nt_threshold to 16 MiB")


def test_tune_for_a_program_below_every_threshold(tmp_path, fake_timer):
    rec = write_recording(tmp_path / "rec", {"memset": {64: 0.9, 900 << 10: 0.1}}, {"memset": 1000})
    log = tmp_path / "log"
    p = run_tune(fake_timer, "--for", rec, FAKE_TIMER_LOG=str(log))
    assert p.returncode == 0, p.stderr
    # the fake timer's defaults: non-temporal from 1 MiB, no rep instructions
    assert p.stdout.splitlines()[-1] == ("nothing to tune for this program: its largest call, 900 KiB, "
                                         "is below every threshold (the lowest, 1 MiB)")
    assert not (rec / "profile").exists() and not log.exists()


def test_tune_for_a_program_times_its_sizes_and_weighs(tmp_path, fake_timer):
    # fake truth: non-temporal fills 2x faster from 256 KiB (default from 1 MiB);
    # non-temporal copies 1.3x slower (default from 1 MiB)
    rec = write_recording(tmp_path / "rec", {"memset": {64: 0.99, 512 << 10: 0.01},
                                             "memcpy": {256: 0.9, 2 << 20: 0.1}},
                          {"memset": 10000, "memcpy": 100})
    log = tmp_path / "log"
    p = run_tune(fake_timer, "--for", rec, FAKE_TIMER_LOG=str(log))
    assert p.returncode == 0, p.stderr
    timed = {(l.split()[1], int(l.split()[2])) for l in log.read_text().splitlines()}
    assert {s for _, s in timed} == {512 << 10, 2 << 20}           # only the program's sizes
    assert {op for op, _ in timed} == {"set0", "set", "copy", "copy3"}   # no parallel engine
    assert "timing 512 KiB (100 calls" in p.stdout
    got = profile_settings(rec / "profile")
    assert got["nt_threshold_zero"] == got["nt_threshold"] == str(512 << 10)
    assert got["nt_copy_threshold"] == "never"
    assert "moving nt_threshold_zero to 512 KiB saves ~" in p.stdout and "(100 calls of 512 KiB)" in p.stdout
    # weighed after the copy move before it: the same calls are not credited twice
    assert "moving rep_movsb_threshold to 2 MiB saves ~" in p.stdout and "(after the moves above)" in p.stdout
    assert f"memkit try --profile {rec / 'profile'} -- myprog --fast" in p.stdout


def test_weigh_takes_rep_movsbs_window_as_one_move():
    # rep movsb whatever the alignment (rep_movsb_align=1): 2x faster aligned,
    # 2x slower misaligned; the mean per call loses 25 ns
    defaults = {"rep_movsb_threshold": None, "rep_movsb_stop": None, "rep_movsb_align": 1,
                "nt_copy_threshold": 20 * MB}
    times = {"memcpy:loop": {("copy", 4096): [100.0] * 3, ("copy3", 4096): [100.0] * 3},
             "memcpy:rep_movsb": {("copy", 4096): [50.0] * 3, ("copy3", 4096): [200.0] * 3}}
    start = tune.Choice("rep_movsb_threshold", None, 2048, "from 2 KiB", True)
    stop = tune.Choice("rep_movsb_stop", None, 8192, "below 8 KiB", True)
    lines = for_program.weigh_choices("memcpy", [start, stop], defaults, times, {4096: 10}, library_paths())
    assert lines == ["not moving rep_movsb_threshold to 2 KiB and rep_movsb_stop to 8 KiB: on this program's "
                     "calls it would save 0 ns and cost 250 ns per run (10 calls of 4 KiB)"]
    assert not start.moved and not stop.moved and start.value is None and stop.value is None
    # With rep_movsb_align=64 the library keeps the loop for the misaligned
    # copy (it says so itself: a Python copy of its rule said rep movsb), so
    # the same move only saves: 10 calls x 50 ns / 2 workloads.
    start = tune.Choice("rep_movsb_threshold", None, 2048, "from 2 KiB", True)
    stop = tune.Choice("rep_movsb_stop", None, 8192, "below 8 KiB", True)
    lines = for_program.weigh_choices("memcpy", [start, stop], dict(defaults, rep_movsb_align=64), times, {4096: 10},
                               library_paths())
    assert start.moved and stop.moved and lines[0].startswith(
        "moving rep_movsb_threshold to 2 KiB and rep_movsb_stop to 8 KiB saves ~250 ns per run")


def test_the_library_names_the_strategy_of_each_cell():
    paths = library_paths()
    t = {"rep_stosb_threshold": 8192, "nt_threshold": 1 << 20, "nt_threshold_zero": None,
         "rep_movsb_threshold": 4096, "rep_movsb_stop": 1 << 20, "rep_movsb_align": 64,
         "nt_copy_threshold": 8 << 20, "parallel_threshold": 4 << 20, "pool_threads": 2}
    sizes = [4096, 65536, 2 << 20, 16 << 20]
    assert paths.of(t, "set", sizes) == ["loop", "rep_stosb", "nt", "nt"]
    assert paths.of(t, "set0", sizes) == ["loop", "rep_stosb", "rep_stosb", "rep_stosb"]
    assert paths.of(t, "copy", sizes) == ["rep_movsb", "rep_movsb", "loop", "nt"]
    assert paths.of(t, "copy3", sizes) == ["loop", "loop", "loop", "nt"]
    # the parallel engine: one thread or the pool, then what the routine runs
    # (on each 2 MiB chunk in the pool)
    assert paths.of(t, "pset", sizes) == ["one loop", "one rep_stosb", "one nt", "threads=2 nt"]
    # (in the pool a copy's chunks stream from twice its threshold)
    assert paths.of(t, "pcopy", sizes) == ["one rep_movsb", "one rep_movsb", "one loop", "threads=2 nt"]
    assert paths.of(dict(t, nt_copy_threshold=9 << 20), "pcopy", [16 << 20]) == ["threads=2 loop"]
    with pytest.raises(Exception, match="memkit-tunables"):
        paths.of(dict(t, nt_threshold="bogus"), "set", [4096])


def test_check_judges_changes_against_what_identical_code_shows():
    # --check's rounds share processes: here the profile ran 4-5% faster in
    # three processes of four (a lean identical code can show: tune timed
    # each configuration in processes of its own when this was seen), so
    # every cell leans the same way.  120 cells run identical code under both.
    import math
    import random
    # Above 8 MiB (processes of their own) they ran 6-9% faster still.
    rng = random.Random(7)
    offsets = {0: [0.05, 0.04, 0.045, -0.01], 2: [0.11, 0.13, 0.12, 0.02]}

    def evidence(true_log, size=4096):
        ups = []
        for o in offsets[tune.band_of(size)]:
            cell = rng.gauss(0, 0.01)
            ups += [math.exp(true_log + o + cell + rng.gauss(0, 0.01)) for _ in range(6)]
        return tune.Evidence("profile", "defaults", size, ups)

    same = [evidence(0.0, 4096 if i % 3 else 64 << 20) for i in range(120)]
    # The sign test and the margin alone call most identical cells faster ...
    assert sum(ev.faster() or ev.slower() for ev in same) > 0.5 * len(same)
    # ... judged against the others' noise, about the rule's 1%.
    assert tune.identical_flags(same) <= 3
    noise = tune.check_noise(same)
    assert noise.cells == 120 and abs(noise.centers[0] - 0.045) < 0.02 and abs(noise.centers[2] - 0.115) < 0.02
    assert tune.check_verdict(evidence(math.log(1.25)), noise) == 1
    assert tune.check_verdict(evidence(math.log(0.8)), noise) == -1
    assert tune.check_verdict(evidence(0.0), noise) == 0
    assert tune.check_verdict(evidence(0.0, 64 << 20), noise) == 0
    # a 9% change in the large band is not mistaken for its processes' 7% lean
    assert tune.check_verdict(evidence(math.log(1.09), 64 << 20), noise) == 1
    # A few identical cells far out (a busy neighbour): the changed cells must
    # go further than they did, whatever the model's scale says.
    wild = same + [evidence(math.log(1.2)) for _ in range(4)]
    noise = tune.check_noise(wild)
    assert noise.bound() > math.log(1.15)
    assert tune.check_verdict(evidence(math.log(1.12)), noise) == 0
    assert tune.check_verdict(evidence(math.log(1.4)), noise) == 1
    assert tune.identical_flags(wild) <= 3
    # Too few identical cells to tell: the sign test alone, as before.
    assert tune.check_noise(same[:tune.NULL_MIN - 1]) is None
    assert tune.check_verdict(same[0], None) == (1 if same[0].faster() else -1 if same[0].slower() else 0)


# ---- the real timing program ----

def test_timing_program_interleaves_configurations_and_refuses_bad_ones(tmp_path):
    from memkit.tuning import tune_experiment
    timer = tune_experiment.find_program(real_bench_dir())
    plan = tune_experiment.Plan({"loop": "nt_threshold_zero=never", "nt": "nt_threshold_zero=0"},
                                [("set0", 4096), ("copy3", 100), ("pset", 3 << 20)],
                                rounds=2, processes=2, batch_ns=2e4, best_of=1)
    seen = []
    times = tune_experiment.measure(timer, plan, on_progress=seen.append)
    assert set(times) == {"loop", "nt"}
    for label in times:
        assert set(times[label]) == set(plan.cells)
        assert all(len(v) == 4 and all(x > 0 for x in v) for v in times[label].values())
    assert seen and seen[-1].done == seen[-1].total == 3
    got = tune_experiment.loaded(timer)
    assert got.profile == "" and got.pool_threads >= 1 and "nt_threshold_zero=" in got.tunables
    for configs, cells, why in [
            ("a@nt_threshold=banana", "set:4096", "configuration a: "),
            ("a@memset=sse2", "set:4096", "forces a variant"),
            ("a@", "set9:4096", "not a cell: set9:4096"),
            ("noat", "set:4096", "LABEL@SETTINGS")]:
        p = subprocess.run([str(timer), "--jsonl", str(tmp_path / "out"), f"configs={configs}", f"cells={cells}"],
                           capture_output=True, text=True, env=tune_experiment.clean_env(), timeout=60)
        assert p.returncode == 2 and why in p.stderr and p.stderr.count("\n") == 1, p.stderr
        assert not (tmp_path / "out").exists()


# ---- rep_movsb_align: the misaligned copy inside rep movsb's window ----

def align_times(flip_ns: dict, base_ns=100.0, rounds=7):
    """copy3 under the defaults' rep movsb and under the flipped condition."""
    return {"memcpy:rep_movsb": {("copy3", s): [base_ns] * rounds for s in flip_ns},
            "memcpy:" + catalogue.ALIGN_FLIP: {("copy3", s): [ns * (1 + 0.001 * k) for k in range(rounds)]
                                          for s, ns in flip_ns.items()}}


def test_align_moves_only_when_every_size_in_the_window_says_so():
    grid = [4096, 8192, 16384, 32768]
    window = [tune.Choice("rep_movsb_threshold", 8192, 8192, "", False),
              tune.Choice("rep_movsb_stop", None, None, "", False)]
    defaults = {"rep_movsb_align": 1}   # rep movsb misaligned: the flip is 64 (the loop for copy3)
    # the window is 8 KiB.. : 4 KiB does not count
    got, picks = tune.decide_align(tune.TimedPicks(align_times({4096: 200.0, 8192: 50.0, 16384: 50.0,
                                                                32768: 50.0})), grid, defaults, window)
    assert [(c.name, c.value, c.moved) for c in got] == [("rep_movsb_align", 64, True)]
    assert [p.size for p in picks] == [8192, 16384, 32768] and "not allowed" in got[0].why
    # one size in the window without confidence: kept
    got, _ = tune.decide_align(tune.TimedPicks(align_times({4096: 50.0, 8192: 50.0, 16384: 100.0,
                                                            32768: 50.0})), grid, defaults, window)
    assert (got[0].value, got[0].moved) == (1, False) and "2 of the 3 sizes" in got[0].why
    # from 64 the flip is 1; no window, no decision to make
    got, _ = tune.decide_align(tune.TimedPicks(align_times({8192: 50.0})), [8192], {"rep_movsb_align": 64},
                               window)
    assert (got[0].value, got[0].moved) == (1, True)
    off = [tune.Choice("rep_movsb_threshold", None, None, "", False),
           tune.Choice("rep_movsb_stop", None, None, "", False)]
    got, picks = tune.decide_align(tune.TimedPicks(align_times({8192: 50.0})), [8192], defaults, off)
    assert not got[0].moved and picks == []
    # times without the flip (an evidence file from before): no decision
    assert tune.decide_align(tune.TimedPicks({"memcpy:rep_movsb": {}}), grid, defaults, window) == ([], [])


# ---- the variant of each function (the small-size design) ----

def scores_of(**by_variant):
    """variant -> (l1, l2, l3, dram) speed-ups, one function (memcpy)."""
    return [level_choice.LevelScore(v, "memcpy", dict(zip(level_choice.VARIANT_LEVELS, ups)))
            for v, ups in by_variant.items()]


def test_the_variant_is_the_best_geometric_mean_that_keeps_the_floor():
    # avx512 is far ahead in the caches but 0.6x glibc in DRAM: the floor rules it out
    scores = scores_of(avx512=(2.4, 2.2, 1.3, 0.6), evex=(1.9, 1.8, 1.6, 0.97), avx2=(1.1, 1.1, 1.1, 1.0))
    c = level_choice.choose_by_levels("memcpy", "memcpy", scores, "avx512")
    assert c.moved and c.value == "evex" and c.setting() == "memcpy=evex"
    assert "every level at 0.85x glibc or better" in c.why and "avx512 l1 2.40" in c.why


def test_the_default_variant_stays_within_the_margin():
    scores = scores_of(avx512=(1.9, 1.8, 1.6, 0.95), evex=(1.92, 1.82, 1.62, 0.96))
    c = level_choice.choose_by_levels("memcpy", "memcpy", scores, "avx512")
    assert not c.moved and c.value == "avx512" and "kept" in c.why


def test_where_no_variant_keeps_the_floor_the_best_geometric_mean_wins_and_says_so():
    scores = scores_of(avx512=(1.2, 1.2, 1.05, 0.72), evex=(1.6, 1.5, 1.4, 0.76))
    c = level_choice.choose_by_levels("memcpy", "memcpy", scores, "avx512")
    assert c.value == "evex" and "none keeps every level at 0.85x glibc" in c.why


def test_variant_scores_read_size_distributions_records():
    recs = [{"series": f"memkit {fn}", "metric": "ns_per_call", "params": {"ws": lv, "distribution": d},
             "ratio": r} for fn in ("memset", "memcpy") for lv in level_choice.VARIANT_LEVELS
            for d, r in (("A", 1.0), ("B", 4.0))]
    recs.append({"series": "glibc memcpy", "metric": "ns_per_call", "params": {"ws": "l1"}, "ratio": 1.0})
    got = {sc.function: sc for sc in level_choice.candidate_scores("evex", recs)}
    assert set(got) == {"memset", "memcpy"} and got["memcpy"].levels["l2"] == pytest.approx(2.0)
    assert got["memset"].geomean == pytest.approx(2.0)


def test_for_a_recording_the_variant_counts_the_programs_own_working_set_only():
    from memkit.commands.tune import recorded_levels
    summary = {"calls": {"memset": 10, "memcpy": 20, "memmove": 0},
               "working_set": {"memset": {"ws": "32K"}, "memcpy": {"ws": "dram"}, "memmove": {"ws": "hot"}}}
    over = recorded_levels(summary)
    assert over == {"memset": {"32K": 1.0}, "memcpy": {"dram": 1.0}}   # memmove: never called
    recs = [{"series": f"memkit {fn}", "metric": "ns_per_call", "params": {"ws": ws}, "ratio": r}
            for fn in ("memset", "memcpy") for ws, r in (("32K", 1.5), ("dram", 0.8))]
    got = {sc.function: sc for sc in level_choice.candidate_scores("avx512", recs, over)}
    assert got["memset"].levels == {"32K": 1.5} and got["memcpy"].geomean == pytest.approx(0.8)
    # a variant better where the program lives wins, whatever it does elsewhere
    evex = level_choice.LevelScore("evex", "memcpy", {"dram": 0.97}, ("dram",))
    c = level_choice.choose_by_levels("memcpy", "memcpy", [got["memcpy"], evex], "avx512")
    assert c.value == "evex" and "dram 0.97" in c.why


# ---- a threshold weighed over the levels (level_choice.LEVEL_TUNABLES) ----

def threshold_scores(**by_size):
    """size -> (l1, l2, l3, dram) speed-ups of memset with rep stosb from there."""
    return {"rep_stosb_threshold": [level_choice.LevelScore(s, "memset", dict(zip(level_choice.VARIANT_LEVELS, ups)))
                                    for s, ups in by_size.items()]}


def sizes_of(**kw):
    return {int(k[1:]) << 10 if k[0] == "k" else 1 << 20: v for k, v in kw.items()}


def test_rep_stosb_moves_down_where_the_cached_threshold_leaves_dram_below_the_floor():
    # the timed stage kept rep stosb from 1 MiB (it wins in cache only there); from 8 KiB
    # DRAM rises above the floor at a small cost in L1
    timed = [tune.Choice("rep_stosb_threshold", 1 << 20, 1 << 20, "timed: loop faster below 1 MiB", False)]
    scores = {"rep_stosb_threshold": [
        level_choice.LevelScore(1 << 20, "memset", dict(zip(level_choice.VARIANT_LEVELS, (1.22, 1.17, 1.07, 0.76)))),
        level_choice.LevelScore(8 << 10, "memset", dict(zip(level_choice.VARIANT_LEVELS, (1.18, 1.14, 1.11, 0.90)))),
        level_choice.LevelScore(2 << 10, "memset", dict(zip(level_choice.VARIANT_LEVELS, (1.10, 1.10, 1.10, 0.92))))]}
    decided, merged = level_choice.decide_levels(scores, timed, {"rep_stosb_threshold": 1 << 20})
    assert [c.value for c in decided] == [8 << 10] and decided[0].moved
    (c,) = merged
    assert c.value == 8 << 10 and c.moved and c.default == 1 << 20
    assert "every level at 0.85x glibc or better" in c.why and "1 MiB l1 1.22" in c.why


def test_a_threshold_the_levels_keep_keeps_the_timed_stages_choice_and_both_whys():
    timed = [tune.Choice("rep_stosb_threshold", 1 << 20, 256 << 10, "timed: rep stosb faster from 256 KiB", True)]
    scores = {"rep_stosb_threshold": [
        level_choice.LevelScore(256 << 10, "memset", dict(zip(level_choice.VARIANT_LEVELS, (1.2, 1.2, 1.0, 0.95)))),
        level_choice.LevelScore(8 << 10, "memset", dict(zip(level_choice.VARIANT_LEVELS, (1.19, 1.19, 1.0, 0.96))))]}
    decided, merged = level_choice.decide_levels(scores, timed, {"rep_stosb_threshold": 1 << 20})
    assert not decided[0].moved
    (c,) = merged
    assert c.value == 256 << 10 and c.moved and "timed: rep stosb" in c.why and "over the levels" in c.why


def test_level_candidates_lie_below_the_incumbent():
    assert level_choice.level_candidates("rep_stosb_threshold", 16 << 10) == [2 << 10, 4 << 10, 8 << 10, 16 << 10]
    assert level_choice.level_candidates("rep_stosb_threshold", None)[-1] is None   # never: every candidate


def test_a_programs_levels_weigh_by_the_time_its_calls_take_there():
    # 75% of the calls at 8K (10 ns on glibc), 25% in DRAM (100 ns): DRAM holds 25/32.5 of the time
    recs = []
    for lv, g, up in (("8K", 10.0, 2.0), ("dram", 100.0, 0.8)):
        p = {"ws": lv, "distribution": "Memcpy"}
        recs += [{"series": "glibc memcpy", "metric": "ns_per_call", "params": p, "value": g},
                 {"series": "memkit memcpy", "metric": "ns_per_call", "params": p, "value": g / up, "ratio": up}]
    (sc,) = level_choice.candidate_scores("evex", recs, {"memcpy": {"8K": 0.75, "dram": 0.25}})
    assert sc.weights == pytest.approx({"8K": 7.5, "dram": 25.0})
    want = math.exp((7.5 * math.log(2.0) + 25.0 * math.log(0.8)) / 32.5)
    assert sc.geomean == pytest.approx(want) and sc.geomean < 1 < math.sqrt(2.0 * 0.8)
    assert "weighed by the time there" in sc.text()


def test_tune_for_a_recording_bounds_its_replays_batches(monkeypatch, tmp_path):
    """The variant and threshold stages replay a recording as `memkit record`
    does: each function's batch bounded in bytes (numpy's 16 MiB memmoves,
    50,000 a batch, never ended)."""
    from memkit.tuning import stages
    seen = []

    class Done:
        status, error, measurements = "ok", None, []

    def fake_run(exp, quick, args, env=None, on_progress=None):
        seen.append(list(args))
        return Done()
    monkeypatch.setattr(stages.lab, "run_experiment", fake_run)

    class Quiet:
        def update(self, *a):
            pass

        def clear(self):
            pass
    timer = real_bench_dir() / "memkit-tune-experiment"
    (tmp_path / "Memset.csv").write_text("64:1\n0:1\n64:1\n")   # a recording, as --for loads one
    (tmp_path / "summary.json").write_text(json.dumps({"calls": {"memset": 1}, "processes": 1, "command": ["p"]}))
    stages.measure_levels(timer, False, Quiet(), "1/1", "variant", {"evex": "memset=evex"},
                          data=str(tmp_path), over={"memset": {"dram": 1.0}})
    assert seen and f"batch={stages.recording.REPLAY_BATCH}" in seen[0] and f"data={tmp_path}" in seen[0]


# ---- confirming the moves before the profile is written ----

class ThresholdPaths(catalogue.Paths):
    """Paths answered by two thresholds, as the library would: memset above
    rep_stosb_threshold runs rep stosb, memcpy above rep_movsb_threshold rep
    movsb (the real table is asked in test_paths_*; here the rule is the
    subject)."""

    def __init__(self):
        super().__init__(None)

    def ask(self, spec, op, sizes):
        t = catalogue.parse_tunables(spec)
        name = "rep_stosb_threshold" if op == "set" else "rep_movsb_threshold"
        return ["rep" if t.get(name) is not None and s >= t[name] else "loop" for s in sizes]


def confirm_times(cells, slower_where, rounds=12, rng=None):
    """Per-round ns of "defaults" and "tuned": alike (1% noise) except
    `slower_where(cell)`, the tuned side's factor there."""
    import random
    rng = rng or random.Random(9)
    out = {"defaults": {}, "tuned": {}}
    for c in cells:
        base = [100.0 * (1 + rng.gauss(0, 0.01)) for _ in range(rounds)]
        out["defaults"][c] = base
        out["tuned"][c] = [b * slower_where(c) * (1 + rng.gauss(0, 0.01)) for b in base]
    return out


def test_confirm_keeps_a_move_that_holds_and_drops_one_that_hurts():
    paths = ThresholdPaths()
    defaults = {"rep_stosb_threshold": 64 << 10, "rep_movsb_threshold": 64 << 10}
    moved = [tune.Choice("rep_stosb_threshold", 64 << 10, 16 << 10, "why", True),
             tune.Choice("rep_movsb_threshold", 64 << 10, 8 << 10, "why", True)]
    cells = [(op, 1 << k) for op in ("set", "copy") for k in range(10, 24)]
    # memset's move: 20% faster at 16-32 KiB; memcpy's: 30% slower at 8-32 KiB
    factor = {("set", 16 << 10): 0.8, ("set", 32 << 10): 0.8,
              ("copy", 8 << 10): 1.3, ("copy", 16 << 10): 1.3, ("copy", 32 << 10): 1.3}
    got = {c.choice.name: c for c in tune.confirm(moved, defaults, cells, confirm_times(cells, lambda c: factor.get(c, 1.0)), paths)}
    st, mv = got["rep_stosb_threshold"], got["rep_movsb_threshold"]
    assert st.holds and sorted(st.cells) == [("set", 16 << 10), ("set", 32 << 10)] and len(st.helped) == 2
    assert not mv.holds and len(mv.hurt) == 3 and "DROPPED" in mv.says()


def test_confirm_drops_a_move_that_no_longer_wins():
    # what a busy spell decided: timed again, the moved sizes run as the defaults do
    paths = ThresholdPaths()
    defaults = {"rep_stosb_threshold": 64 << 10, "rep_movsb_threshold": 64 << 10}
    moved = [tune.Choice("rep_stosb_threshold", 64 << 10, 16 << 10, "why", True)]
    cells = [(op, 1 << k) for op in ("set", "copy") for k in range(10, 24)]
    (c,) = tune.confirm(moved, defaults, cells, confirm_times(cells, lambda c: 1.0), paths)
    assert c.cells and not c.helped and not c.hurt and not c.holds
