# SPDX-License-Identifier: Apache-2.0
"""Experiment arguments are checked before anything runs (issue #25): a
refused value is one line and exit status 2, and nothing is stored; the
real experiments, through `memkit run`."""

import subprocess

import pytest

from conftest import REPO, cli_env, real_bench_dir, run_cli
from memkit.store.db import Database

SHIPPED = REPO / "data" / "fleet-size-distributions"


@pytest.fixture(scope="module")
def bench():
    return real_bench_dir()


REFUSED = [
    ("memset-sizes", ["reps=0"], "memset-sizes: reps=0 is out of range"),
    ("memset-sizes", ["max=lots"], "bad value 'lots' for max (expected a size"),
    ("memset-sizes", ["processes=0"], "memset-sizes: processes must be 1..64"),
    ("memset-sizes", ["reps=3", "reps=4"], "reps given twice (reps=3, then reps=4): give it once"),
    ("memset-sizes", ["processes=2", "processes=3"], "memset-sizes: processes given twice"),
    ("fill-regions", ["budget=nan"], "bad value 'nan' for budget (expected a finite number)"),
    ("fill-regions", ["budget=inf"], "bad value 'inf' for budget (expected a finite number)"),
    ("fill-regions", ["min=8M", "max=1M"], "fill-regions: min=8M is above max=1M"),
    ("fill-regions", ["per_octave=0"], "per_octave=0 is out of range"),
    ("memset-random", ["rows=no-such-row"], "memset-random: no row matches rows=no-such-row"),
    ("copy-sweep", ["offsets=some"], "offsets: 'some' is not one of all|few"),
    ("copy-sweep", ["only=libc,nosuch"], "only: no copier called 'nosuch'"),
    ("copy-sweep", ["min=64K", "max=4K"], "copy-sweep: min=64K is above max=4K"),
    ("ipc-copy", ["pages=huge"], "pages: 'huge' is not one of normal|thp|hugetlb"),
    ("ipc-copy", ["mt=fastest"], "mt: no usable copier called 'fastest'"),
    ("ipc-copy", ["slots=1"], "slots=1 is out of range"),
    ("parallel-sweep", ["min=1G", "max=1M"], "parallel-sweep: min=1G is above max=1M"),
    ("size-distributions", ["calls=5"], "calls=5 is out of range"),
    ("size-distributions", ["only=no-such-file"], "no distribution file (*.csv naming memset, memcpy or "
                                                  "memmove) in"),
]


@pytest.mark.parametrize("exp,args,message", REFUSED, ids=[f"{e}:{' '.join(a)}" for e, a, _ in REFUSED])
def test_a_refused_argument_is_one_line_exit_2_and_stores_nothing(bench, tmp_path, exp, args, message):
    db = tmp_path / "m.db"
    p = run_cli("run", "--build", bench.parent, "--db", db, "--quick", exp, "--", *args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    (line,) = p.stderr.splitlines()   # the reason once: no echo, no summary
    assert line.startswith("memkit: error: ") and message in line, line
    assert p.stdout == "" and not db.exists()


def test_a_refused_run_adds_no_run_to_a_database(bench, tmp_path):
    db = tmp_path / "m.db"
    p = run_cli("run", "--build", bench.parent, "--db", db, "--quick", "memset-sizes", "--", "max=64", "reps=2",
                "processes=1")
    assert p.returncode == 0, p.stderr
    for bad in ("reps=1", "budget=nan", "max=0"):
        assert run_cli("run", "--build", bench.parent, "--db", db, "--quick", "memset-sizes", "--",
                       bad).returncode == 2
    with Database(db) as d:
        assert len(d.runs()) == 1


def distribution_dir(tmp_path, name, edit):
    """A copy of one shipped file, its three lines changed by edit(lines)."""
    d = tmp_path / name
    d.mkdir()
    lines = (SHIPPED / "Memset_0.csv").read_text().splitlines()
    edit(lines)
    (d / "Memset_test.csv").write_text("\n".join(lines) + "\n")
    return d


def test_a_distribution_file_with_alignment_0_is_refused_with_its_line(bench, tmp_path):
    def zero_alignment(lines):
        lines[2] = "0:0.5," + lines[2].split(",", 1)[1]
    d = distribution_dir(tmp_path, "zero", zero_alignment)
    db = tmp_path / "m.db"
    # Given as data=, or by $MEMKIT_DATA without any argument: refused before the run.
    for args, env in ((["--", f"data={d}"], cli_env()), ([], cli_env(MEMKIT_DATA=str(d)))):
        p = run_cli("run", "--build", bench.parent, "--db", db, "--quick", "size-distributions", *args, env=env)
        assert p.returncode == 2, p.stderr
        assert p.stderr.splitlines() == [f"memkit: error: size-distributions: {d}/Memset_test.csv:3: "
                                         f"alignment 0 is not a power of two from 1 to 64"]
        assert not db.exists()
    # The experiment run on its own says the same, once (not once per process).
    p = subprocess.run([str(bench / "memkit-exp-size-distributions"), "--quick", f"data={d}"],
                                     capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.splitlines() == [
        f"error: {d}/Memset_test.csv:3: alignment 0 is not a power of two from 1 to 64"]


def test_probabilities_not_summing_to_1_are_scaled_with_one_warning(bench, tmp_path):
    def heavier(lines):
        first = lines[0].split(",")
        x, p = first[0].split(":")
        lines[0] = ",".join([f"{x}:{float(p) + 0.2}"] + first[1:])
    d = distribution_dir(tmp_path, "heavy", heavier)
    p = run_cli("run", "--build", bench.parent, "--db", tmp_path / "m.db", "--quick", "size-distributions", "--",
                f"data={d}", "calls=1000", "rounds=3", "processes=2")
    assert p.returncode == 0, p.stderr
    warnings = [l for l in p.stderr.splitlines() if "probabilities sum to" in l]
    assert len(warnings) == 1, p.stderr
    assert warnings[0].endswith(f"warning: {d}/Memset_test.csv: line 1 (sizes): the probabilities sum to 1.2, "
                                f"not 1; scaled to 1")


def test_an_interrupted_recording_is_named_where_there_is_no_file(bench, tmp_path):
    (tmp_path / "rec" / ".parts-abc").mkdir(parents=True)
    p = run_cli("run", "--build", bench.parent, "--db", tmp_path / "m.db", "--quick", "size-distributions", "--",
                f"data={tmp_path / 'rec'}")
    assert p.returncode == 2
    assert f"it holds an interrupted recording; `memkit record --recover {tmp_path / 'rec'}` writes it" in p.stderr


def test_the_shipped_files_hold(bench):
    exe = bench / "memkit-exp-size-distributions"
    p = subprocess.run([str(exe), "--check-args", f"data={SHIPPED}"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr
