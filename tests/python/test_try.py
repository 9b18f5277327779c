# SPDX-License-Identifier: Apache-2.0
"""memkit try: a real program of the test's own (a C copier compiled here,
python3 -c) run without and with the real preload library; the bottom line,
the output check, the pair count, what is stored and how runs, compare,
report and fleet show it.  No test says which configuration is faster: the
timings are whatever this machine gives."""

import html
import json
import math
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, cli_env, make_fake_build, real_bench_dir, run_cli
from memkit.judging import deploy
from memkit.judging.judge import TRY_TUNED_CLOSES_MOST
from memkit.programs import whole_program as wp
from memkit.store.db import Database

COPIER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Copies, moves and fills 256 KiB buffers; prints a checksum of them. */
int main(int argc, char **argv)
{
    size_t n = 256 << 10;
    int reps = argc > 1 ? atoi(argv[1]) : 100;
    unsigned char *a = malloc(n), *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 131u);
    unsigned long sum = 0;
    for (int r = 0; r < reps; r++) {
        memcpy(b + r % 64, a, n - 64);
        memmove(b, b + 1, n - 128);
        memset(a + r % 32, r, 4096);
        sum += b[(size_t)r * 4099 % n] + a[(size_t)r * 7 % n];
    }
    printf("checksum %lu\n", sum);
    return 0;
}
"""

# try reads the machine through memkit.lab.machine: these tests read a
# recorded Zen 4, whose glibc disagrees with it, so every bottom line ends
# with the setting that corrects glibc (tests/python/test_machine.py runs
# try's advice on every recorded machine).
MACHINE = REPO / "tests" / "data" / "machines" / "amd-zen4-25-17"
SUGGESTION = ("; glibc's non-temporal and rep movsb thresholds disagree with this machine: try --glibc-tunables "
              "glibc.cpu.x86_non_temporal_threshold=16777216:glibc.cpu.x86_rep_movsb_threshold=1048576 to time "
              "glibc tuned beside memkit")
BOTTOM = re.compile(r"^(\S+): (\d+\.\d+x faster with memkit|no difference beyond the noise|"
                    r"\d+\.\d+x slower with memkit) \((\d+\.\d+)-(\d+\.\d+), (\d+) pairs\)"
                    + re.escape(SUGGESTION) + "$")


@pytest.fixture(scope="module")
def build():
    root = real_bench_dir().parent.resolve()
    if not (root / "libmemkit_preload.so").exists():
        pytest.skip("the preload library is not built here (sanitizer build?)")
    return root


@pytest.fixture(scope="module")
def copier(tmp_path_factory):
    cc = shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("copier")
    (d / "copier.c").write_text(COPIER)
    # -fno-builtin: the calls go to the library, where the preload takes them.
    subprocess.run([cc, "-O2", "-fno-builtin", "-o", str(d / "copier"), str(d / "copier.c")], check=True)
    return d / "copier"


def try_cli(build, db, *args, cwd=None, env=None):
    env = dict(env or cli_env())
    env.setdefault("MEMKIT_MACHINE", str(MACHINE))
    return run_cli("try", "--build", build, "--db", db, *args, cwd=cwd, env=env)


def stored(db, run_id=None):
    with Database(str(db)) as d:
        run_id = run_id or d.runs()[-1]["id"]
        return ({(m["series"], m["metric"]): m for m in d.measurements(run_id)},
                d.verdict_records(run_id), d.experiments(run_id))


def test_bottom_line_output_once_and_the_stored_run(build, copier, tmp_path):
    db = tmp_path / "m.db"
    p = try_cli(build, db, "--runs", "6", "--", str(copier), "200", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    # The program's output once, first; memkit's bottom line last.
    assert lines[0].startswith("checksum ") and p.stdout.count("checksum ") == 1
    m = BOTTOM.match(lines[-1])
    assert m, lines[-1]
    assert m[1] == "copier" and m[5] == "6"
    assert float(m[3]) <= float(m[4])
    assert "identical in all 14 runs" in p.stdout          # 2 warm-ups + 6 pairs of 2
    assert "pair 6:" in p.stderr and "stored as run 1" in p.stderr

    ms, verdicts, exps = stored(db)
    assert [e["name"] for e in exps] == ["try"] and json.loads(exps[0]["args"]) == [str(copier), "200"]
    assert verdicts[0]["text"] == lines[-1]
    without, with_ = ms[("without memkit", "wall_s")], ms[("with memkit", "wall_s")]
    assert with_["params"] == {"program": "copier", "argv": [str(copier), "200"]}
    assert with_["baseline"] == {"series": "without memkit", "params": with_["params"]}
    assert without["baseline"] is None and with_["format"] == 2 and with_["better"] == "lower"
    # Each pair's ratio is the time without / the time with, pair by pair.
    assert len(with_["ratios"]) == 6 and with_["process_ratios"] == with_["ratios"]
    for r, a, b in zip(with_["ratios"], without["sample_values"], with_["sample_values"]):
        assert r == pytest.approx(a / b)
    e = wp.estimate(with_["ratios"])
    # the line gives the interval in its words' direction: as is, or as how many times slower,
    # with three decimals where two would print a number off 1 as 1.00
    ends = {(e.low, e.high), (1 / e.high, 1 / e.low)}
    assert (float(m[3]), float(m[4])) in {(round(a, len(m[3].split(".")[1])), round(b, len(m[4].split(".")[1])))
                                          for a, b in ends}
    assert ("with memkit", "cpu_s") in ms

    runs = run_cli("runs", "--db", db)
    assert runs.returncode == 0 and "try copier" in runs.stdout and lines[-1] in runs.stdout


def test_runs_caps_the_pairs_below_the_minimum(build, copier, tmp_path):
    db = tmp_path / "m.db"
    p = try_cli(build, db, "--runs", "2", "-q", "--", str(copier), "20")
    assert p.returncode == 0, p.stderr
    assert re.match(r"^copier: \d+\.\d+x the speed with memkit, too few pairs to tell \(2; an interval "
                    r"needs 6\)" + re.escape(SUGGESTION) + "$", p.stdout.splitlines()[-1]), p.stdout
    assert "pair 1:" not in p.stderr and "stored as" not in p.stderr   # --quiet: no progress
    ms, _, _ = stored(db)
    assert len(ms[("with memkit", "wall_s")]["ratios"]) == 2


def test_the_minimum_holds_against_the_budget(build, tmp_path):
    # Run times drawn from 5..60 ms: the interval cannot come within the
    # precision in MIN_PAIRS pairs, so only the spent budget can stop it
    # (a steady program may stop on precision at the same pair).
    code = "import random, time; time.sleep(random.uniform(0.005, 0.06))"
    p = try_cli(build, tmp_path / "m.db", "--budget", "0", "--", sys.executable, "-c", code)
    assert p.returncode == 0, p.stderr
    assert BOTTOM.match(p.stdout.splitlines()[-1])[5] == str(wp.MIN_PAIRS), p.stdout
    assert "budget of 0 s is spent" in p.stdout


def test_output_that_depends_on_the_preload_is_reported_and_stored(build, tmp_path):
    db = tmp_path / "m.db"
    code = "import os; print(os.environ.get('LD_PRELOAD'))"
    p = try_cli(build, db, "--runs", "2", "--", sys.executable, "-c", code)
    assert p.returncode == 3, p.stderr
    assert p.stdout.splitlines()[0] == "None"                 # the first run's output, once
    assert "OUTPUT DIFFERS" in p.stderr and "standard output differs at byte 0" in p.stderr
    last = p.stdout.splitlines()[-1]
    assert last.startswith("python") and "OUTPUT DIFFERS with memkit (3 of 3 runs with memkit)" in last
    _, verdicts, _ = stored(db)
    assert verdicts[0] == {"experiment": "try", "text": last, "kind": "loss"}
    assert any("differs at byte 0" in v["text"] and v["kind"] == "loss" for v in verdicts[1:])


def test_exit_status_is_compared_too(build, tmp_path):
    code = "import os, sys; sys.exit(4 if os.environ.get('LD_PRELOAD') else 0)"
    p = try_cli(build, tmp_path / "m.db", "--runs", "1", "--", sys.executable, "-c", code)
    assert p.returncode == 3
    assert "exit status 4 where the first run without memkit had exit status 0" in p.stdout


def test_standard_error_and_a_steady_failure_are_notes(build, tmp_path):
    db = tmp_path / "m.db"
    code = "import os, sys; sys.stderr.write(str(os.environ.get('LD_PRELOAD')) + '\\n'); sys.exit(2)"
    p = try_cli(build, db, "--runs", "1", "--", sys.executable, "-c", code)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("None\n") == 1                     # the first run's standard error, once
    assert "note: the program's standard error differs with memkit" in p.stdout
    assert "note: the program ended with exit status 2 in every run" in p.stdout
    _, verdicts, _ = stored(db)
    assert [v["kind"] for v in verdicts] == ["note", "note", "note"]


def test_output_that_differs_without_memkit_is_not_blamed_on_it(build, tmp_path):
    db = tmp_path / "m.db"
    p = try_cli(build, db, "--runs", "1", "--", sys.executable, "-c", "import time; print(time.perf_counter_ns())")
    assert p.returncode == 3
    assert "OUTPUT DIFFERS from run to run even without memkit" in p.stdout.splitlines()[-1]
    _, verdicts, _ = stored(db)
    assert verdicts[0]["kind"] == "note"


def test_stdin_is_the_file_given_or_nothing(build, tmp_path):
    data = tmp_path / "input"
    data.write_bytes(b"x" * 1000)
    code = "import sys; print(len(sys.stdin.buffer.read()))"
    p = try_cli(build, tmp_path / "m.db", "--runs", "1", "--stdin", data, "--", sys.executable, "-c", code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "1000"
    p = try_cli(build, tmp_path / "m.db", "--runs", "1", "--no-output", "--", sys.executable, "-c", code)
    assert p.returncode == 0, p.stderr
    assert not p.stdout.startswith("0\n") and "standard output (2 bytes)" in p.stdout


def test_the_runs_happen_in_the_current_directory(build, tmp_path):
    code = "open('trace', 'a').write('x')"
    p = try_cli(build, tmp_path / "m.db", "--runs", "1", "--", sys.executable, "-c", code, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "trace").read_text() == "x" * 4   # 2 warm-ups + 1 pair: every run wrote


def test_a_profile_is_a_third_configuration(build, copier, tmp_path):
    db = tmp_path / "m.db"
    prof = tmp_path / "prof"
    prof.write_text("nt_copy_threshold=never\n")
    p = try_cli(build, db, "--runs", "6", "--profile", prof, "--", str(copier), "20")
    assert p.returncode == 0, p.stderr
    assert "; with the profile prof: " in p.stdout.splitlines()[-1]
    assert "identical in all 21 runs" in p.stdout
    ms, _, _ = stored(db)
    m = ms[("with memkit+profile", "wall_s")]
    assert m["params"]["profile"] == str(prof) and len(m["ratios"]) == 6
    assert m["baseline"]["series"] == "without memkit"


SEEN = ("import os; open('seen', 'a').write(repr((os.environ.get('LD_PRELOAD', ''), "
        "os.environ.get('GLIBC_TUNABLES'))) + '\\n'); print('same')")
TUNED = "glibc.cpu.x86_rep_movsb_threshold=23170:glibc.cpu.x86_non_temporal_threshold=23726566"
THREE_WAY = re.compile(r"^python\S*: [^;]+ \(\S+, 6 pairs\); glibc tuned: [^;]+; memkit against glibc tuned: "
                       r"[^;]+; (deploy memkit|deploy glibc tuned|keep glibc as shipped)")


def test_three_ways_the_setting_reaches_only_the_glibc_tuned_runs(build, tmp_path):
    db = tmp_path / "m.db"
    (tmp_path / "line").write_text(f"GLIBC_TUNABLES={TUNED}\n")
    p = try_cli(build, db, "--runs", "6", "--glibc-tunables", f"@{tmp_path / 'line'}", "--",
                sys.executable, "-c", SEEN, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "same" and THREE_WAY.match(lines[-1]), lines[-1]
    assert "identical in all 21 runs" in p.stdout           # 3 warm-ups + 6 pairs of 3
    assert [ln.split()[:2] for ln in lines if ln.startswith("  ") and "wall median" in ln] == \
        [["without", "memkit"], ["with", "memkit"], ["glibc", "tuned"]]
    # memkit's runs are over glibc as shipped: the setting went to the glibc tuned runs alone
    seen = [eval(x) for x in (tmp_path / "seen").read_text().splitlines()]
    assert len(seen) == 21
    runs = [("libmemkit_preload.so" in preload, tunables) for preload, tunables in seen]
    assert {r: runs.count(r) for r in runs} == {(False, None): 7, (True, None): 7, (False, TUNED): 7}
    ms, verdicts, _ = stored(db)
    tuned = ms[("glibc tuned", "wall_s")]
    assert tuned["params"]["glibc_tunables"] == TUNED and tuned["baseline"]["series"] == "without memkit"
    assert "glibc_tunables" not in ms[("with memkit", "wall_s")]["params"] and len(tuned["ratios"]) == 6
    assert verdicts[0]["text"] == lines[-1]


def test_output_that_glibc_tuned_changes_is_not_blamed_on_memkit(build, tmp_path):
    db = tmp_path / "m.db"
    code = "import os; print(os.environ.get('GLIBC_TUNABLES'))"
    p = try_cli(build, db, "--runs", "1", "--glibc-tunables", TUNED, "--", sys.executable, "-c", code)
    assert p.returncode == 3, p.stderr
    last = p.stdout.splitlines()[-1]
    assert "OUTPUT DIFFERS with glibc tuned (2 of 2 runs glibc tuned)" in last, last
    _, verdicts, _ = stored(db)
    assert {v["kind"] for v in verdicts} == {"note"}


def test_glibc_tunables_errors_before_anything_runs(build, tmp_path):
    def refused(*args, env=None):
        p = try_cli(build, tmp_path / "m.db", *args, "--", sys.executable, "-c", SEEN, cwd=tmp_path, env=env)
        assert p.returncode != 0 and not (tmp_path / "seen").exists(), p.stdout
        return p.stderr
    err = refused("--glibc-tunables", "x86_rep_movsb_threshold=4096")
    assert err.strip() == ("memkit: error: glibc tunables: 'x86_rep_movsb_threshold=4096': only glibc's own "
                           "tunables (glibc.NAMESPACE.NAME=VALUE, e.g. glibc.cpu.x86_non_temporal_threshold=0x1000000)")
    assert "cannot read the glibc tunables file /no/such/file" in refused("--glibc-tunables", "@/no/such/file")
    assert "an empty value: give a GLIBC_TUNABLES setting" in refused("--glibc-tunables=")
    err = refused("--glibc-tunables", TUNED, env=cli_env(GLIBC_TUNABLES="glibc.malloc.check=3"))
    assert "GLIBC_TUNABLES is already set (glibc.malloc.check=3): the runs of glibc as shipped would have it" in err


@pytest.fixture(scope="module")
def history(build, copier, tmp_path_factory):
    """Runs 1 and 2: tries of one command; 3: a lab run; 4: the same try again."""
    tmp = tmp_path_factory.mktemp("history")
    db = tmp / "m.db"
    env = cli_env(MEMKIT_HOST="box")
    out = {"db": db, "tmp": tmp}
    for _ in range(2):
        p = try_cli(build, db, "--runs", "6", "-q", "--", str(copier), "50", env=env)
        assert p.returncode == 0, p.stderr
    fake = make_fake_build(tmp / "fake", ["ok"])
    out["lab"] = run_cli("run", "--build", fake, "--db", db, "ok", env=env)
    assert out["lab"].returncode == 0, out["lab"].stderr
    p = try_cli(build, db, "--runs", "6", "-q", "--", str(copier), "50", env=env)
    assert p.returncode == 0, p.stderr
    out["bottom"] = p.stdout.splitlines()[-1]
    return out


def test_compare_two_tries_and_fleet(history):
    db, bottom = history["db"], history["bottom"]
    c = run_cli("compare", "--db", db, "1", "4", "--json")
    assert c.returncode == 0, c.stderr
    out = json.loads(c.stdout)
    assert out["compared"] == 2 and out["paired"] == 1     # without memkit absolute, with memkit paired
    c = run_cli("compare", "--db", db, "1", "4")
    assert c.returncode == 0 and "try: 2 measurements in both" in c.stdout
    c = run_cli("compare", "--db", db, "3", "4")
    assert "no measurement is in both runs: run 3 ran the lab's experiments; run 4 tried `" in c.stdout

    # The latest try is compared with the earlier try, not with the lab run between.
    f = run_cli("fleet", "--db", db, "--json")
    host = json.loads(f.stdout)["groups"][0]["hosts"][0]
    assert host["run"] == 4 and host["previous_run"] == 2 and host["bottom_line"] == bottom
    f = run_cli("fleet", "--db", db)
    assert f"(memkit try: {bottom}); vs run 2" in f.stdout


def test_report_and_the_lab_summary_show_the_bottom_line(history):
    db, tmp, bottom = history["db"], history["tmp"], history["bottom"]
    r = run_cli("report", "--db", db, "--out", tmp / "rep")
    assert r.returncode == 0, r.stderr
    page = (tmp / "rep" / "index.html").read_text()
    shown = html.escape(bottom)
    assert f"<p class='bottom-line'>{shown}</p>" in page or f"<p class='loss'>{shown}</p>" in page
    assert "Since the previous try of this command" in page and "Compared with run 2" in page
    assert (tmp / "rep" / "plots" / "try-pairs.png").read_bytes().startswith(b"\x89PNG")
    # A lab run's report and summary open with the latest try of each command on its host.
    r = run_cli("report", "--db", db, "--run", "3", "--out", tmp / "rep3")
    assert r.returncode == 0, r.stderr
    page = (tmp / "rep3" / "index.html").read_text()
    assert "Real programs" in page and re.search(r"<li>copier: .*\(run 2\)</span></li>", page)
    summary = history["lab"].stdout[history["lab"].stdout.index("== summary"):].splitlines()
    assert summary[1] == "real programs (memkit try on this host, the latest of each):"
    assert re.match(r"^  copier: .* \(run 2\)$", summary[2]) and summary[3].startswith("memkit's losses")


def test_errors_are_one_line_with_their_status(build, tmp_path):
    p = try_cli(build, tmp_path / "m.db", "--", "/no/such/program")
    assert p.returncode == 127 and p.stderr.strip() == \
        "memkit: error: cannot run /no/such/program: No such file or directory"
    p = try_cli(build, tmp_path / "m.db", "--", "no-such-program-here")
    assert p.returncode == 127 and "cannot run no-such-program-here: No such file" in p.stderr
    (tmp_path / "script").write_text("#!/bin/sh\n")
    p = try_cli(build, tmp_path / "m.db", "--", tmp_path / "script")
    assert p.returncode == 126 and "Permission denied" in p.stderr
    p = try_cli(build, tmp_path / "m.db", "--preload", tmp_path / "none.so", "--", "true")
    assert p.returncode == 1 and "no preload library at" in p.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run_cli("try", "--db", tmp_path / "m.db", "--", "true", env=cli_env(MEMKIT_BUILD=str(empty)))
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "no libmemkit_preload.so found" in p.stderr
    p = try_cli(build, tmp_path / "m.db", "--", "true", env=cli_env(LD_PRELOAD=str(build / "libmemkit_preload.so")))
    assert p.returncode == 1 and "LD_PRELOAD already holds" in p.stderr
    p = try_cli(build, tmp_path / "m.db")
    assert p.returncode == 2 and "no program to try" in p.stderr


def test_help_says_how_often_the_program_runs():
    p = run_cli("try", "--help")
    text = " ".join(p.stdout.split())
    assert "runs the program 2N+2 times" in text and "must be safe to run repeatedly" in text
    assert "/dev/null" in text and "Exit status: 0" in text
    # The man page and the completions come from the same parser.
    from memkit import docs
    assert "runs the program 2N+2 times" in " ".join(docs.manpage().split())
    assert "--budget" in docs.completion("bash") and "--budget" in docs.completion("zsh")


# ---- the statistics and the words, without running anything ----

def test_the_interval_is_the_order_statistics_of_the_median():
    assert not wp.estimate([1.1] * (wp.MIN_PAIRS - 1)).has_interval
    six = [1.3, 1.1, 1.2, 1.25, 1.15, 1.4]
    e = wp.estimate(six)
    assert (e.low, e.high) == (min(six), max(six))      # 6 pairs: the range holds the median 96.9%
    twelve = [1.0 + i / 100 for i in range(12)]
    e = wp.estimate(twelve)
    assert (e.low, e.high) == (twelve[2], twelve[9])    # binomial(12, 1/2): 96.1%
    assert e.median == pytest.approx(1.055)


def test_the_bottom_line_words():
    def est(median, low, high, n=12):
        return wp.Estimate(median, low, high, n)
    assert wp.bottom_line("p", {wp.WITH: est(1.26, 1.17, 1.46)}) == "p: 1.26x faster with memkit (1.17-1.46, 12 pairs)"
    assert wp.bottom_line("p", {wp.WITH: est(1.0, 0.98, 1.02, 20)}) == \
        "p: no difference beyond the noise (0.98-1.02, 20 pairs)"
    assert wp.bottom_line("p", {wp.WITH: est(1 / 1.05, 1 / 1.08, 1 / 1.03)}) == \
        "p: 1.05x slower with memkit (1.03-1.08, 12 pairs)"
    # Close to 1 but beyond the noise: a third decimal, never "1.00x faster".
    assert wp.bottom_line("p", {wp.WITH: est(1.004, 1.002, 1.006)}) == \
        "p: 1.004x faster with memkit (1.002-1.006, 12 pairs)"
    assert wp.bottom_line("p", {wp.WITH: est(1.2, 1.1, 1.3), wp.WITH_PROFILE: est(1.0, 0.9, 1.1)}, profile="x") == \
        "p: 1.20x faster with memkit (1.10-1.30, 12 pairs); with the profile x: no difference beyond the noise (0.90-1.10)"
    assert wp.bottom_line("p", {wp.WITH: est(1.2, 1.1, 1.3)}, problem="OUTPUT DIFFERS with memkit").startswith(
        "p: OUTPUT DIFFERS with memkit; 1.20x faster")
    assert wp.Estimate(1.0, 0.99, 1.01, 30).precise() and not wp.Estimate(1.0, 0.97, 1.01, 30).precise()
    assert not wp.Estimate(1.0, math.nan, math.nan, 3).precise()


def test_first_difference(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    big = bytes(range(256)) * 10000
    a.write_bytes(big)
    b.write_bytes(big)
    assert wp.first_difference(a, b) is None
    b.write_bytes(big[:-1])
    assert wp.first_difference(a, b) == len(big) - 1
    b.write_bytes(big[:wp.CHUNK + 5] + b"!" + big[wp.CHUNK + 6:])
    assert wp.first_difference(a, b) == wp.CHUNK + 5


# ---- which to deploy after three ways, on synthetic speed-ups ----

def est(median, low, high, n=12):
    return wp.Estimate(median, low, high, n)


FASTER_MEMKIT, NOISE = est(1.50, 1.45, 1.56), est(1.0, 0.97, 1.03)


def three(memkit, tuned, memkit_over_tuned, changed=frozenset()):
    return wp.bottom_line("p", {wp.WITH: memkit, wp.GLIBC_TUNED: tuned, wp.MEMKIT_OVER_TUNED: memkit_over_tuned},
                          changed_output=changed)


def test_memkit_wins_over_both():
    d = deploy.choose(est(1.05, 1.02, 1.08), FASTER_MEMKIT, est(1.43, 1.38, 1.50))
    assert d.choice == deploy.MEMKIT and d.memkit_beats_tuned and not d.tuned_closes_most
    assert d.closed == pytest.approx((1 - 1 / 1.05) / (1 - 1 / 1.5))
    assert three(FASTER_MEMKIT, est(1.05, 1.02, 1.08), est(1.43, 1.38, 1.50)) == (
        "p: 1.50x faster with memkit (1.45-1.56, 12 pairs); glibc tuned: 1.05x faster (1.02-1.08); "
        "memkit against glibc tuned: 1.43x faster (1.38-1.50); deploy memkit")


def test_glibc_tuned_closes_the_gap():
    # memkit no faster than glibc tuned: the environment variable, no preload
    d = deploy.choose(est(1.46, 1.40, 1.52), FASTER_MEMKIT, est(1.02, 0.99, 1.05))
    assert d.choice == deploy.GLIBC_TUNED and d.tuned_closes_most
    line = three(FASTER_MEMKIT, est(1.46, 1.40, 1.52), est(1.02, 0.99, 1.05))
    assert line.endswith("memkit against glibc tuned: no difference beyond the noise (0.99-1.05); deploy glibc "
                         "tuned: the GLIBC_TUNABLES line, no preload (it closes 95% of memkit's lead)")
    # the docs' example is this line
    assert line.replace("p: ", "PROGRAM: ", 1) in (REPO / "docs" / "try-record-tune.md").read_text()
    # memkit still ahead of glibc tuned, which gets most of the way: both said
    d = deploy.choose(est(1.40, 1.36, 1.44), FASTER_MEMKIT, est(1.07, 1.04, 1.10))
    assert d.choice == deploy.MEMKIT and d.closed == pytest.approx((1 - 1 / 1.4) / (1 - 1 / 1.5))
    assert d.closed >= TRY_TUNED_CLOSES_MOST
    assert three(FASTER_MEMKIT, est(1.40, 1.36, 1.44), est(1.07, 1.04, 1.10)).endswith(
        "deploy memkit; glibc tuned closes 86% of memkit's lead: the GLIBC_TUNABLES line gets most of it "
        "without a preload")
    # glibc tuned faster than memkit: all of its lead
    assert three(FASTER_MEMKIT, est(1.60, 1.55, 1.65), est(0.94, 0.91, 0.97)).endswith(
        "deploy glibc tuned: the GLIBC_TUNABLES line, no preload (it closes all of memkit's lead)")
    # just below the share that counts as most: memkit, nothing more said
    below = 1 / (1 - TRY_TUNED_CLOSES_MOST * (1 - 1 / 1.5)) * 0.999
    assert three(FASTER_MEMKIT, est(below, below - 0.02, below + 0.02), est(1.05, 1.03, 1.07)).endswith(
        "; deploy memkit")


def test_glibc_tuned_no_better():
    # memkit faster than glibc as shipped, glibc tuned not: memkit, though not shown faster than tuned
    d = deploy.choose(NOISE, FASTER_MEMKIT, est(1.04, 0.98, 1.60))
    assert (d.choice, d.closed) == (deploy.MEMKIT, 0.0)
    assert three(FASTER_MEMKIT, NOISE, est(1.04, 0.98, 1.60)).endswith(
        "; deploy memkit (not shown faster than glibc tuned)")
    # neither: glibc as shipped; glibc tuned slower says no lead closed
    assert deploy.choose(est(0.9, 0.85, 0.95), NOISE, NOISE) == deploy.Deploy(deploy.GLIBC, None, False)
    assert three(NOISE, NOISE, NOISE).endswith(
        "; keep glibc as shipped: neither glibc tuned nor memkit is faster beyond the noise")
    # glibc tuned faster, memkit slower than glibc: glibc tuned, no lead to close
    assert three(est(0.95, 0.93, 0.97), est(1.1, 1.05, 1.15), est(0.86, 0.82, 0.9)).endswith(
        "; deploy glibc tuned: the GLIBC_TUNABLES line, no preload")


def test_deploy_never_picks_what_changed_the_output_nor_guesses():
    assert deploy.choose(NOISE, FASTER_MEMKIT, FASTER_MEMKIT, memkit_changed_output=True).choice == deploy.GLIBC
    assert deploy.choose(FASTER_MEMKIT, FASTER_MEMKIT, NOISE, tuned_changed_output=True).choice == deploy.MEMKIT
    assert three(FASTER_MEMKIT, est(1.46, 1.40, 1.52), NOISE, changed=frozenset({wp.WITH})).endswith(
        "deploy glibc tuned: the GLIBC_TUNABLES line, no preload (it closes 95% of memkit's lead)")
    few = wp.Estimate(1.5, math.nan, math.nan, 3)
    assert deploy.choose(few, few, few).choice is None
    assert three(few, few, few).endswith("; too few pairs to say which to deploy")
