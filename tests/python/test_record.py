"""memkit record with the real preload library and a probe with known calls
(tests/preload/record_probe.c): exact counts, forks, execs, threads, a
SIGKILLed program, standard input and exit status passed through."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import cli_env, real_bench_dir, run_cli
from memkit import recording

PER_ROUND = {"memset": 1000, "memcpy": 500, "memmove": 300}


@pytest.fixture(scope="module")
def build():
    bench = real_bench_dir()
    root = bench.parent.resolve()
    if not (root / "libmemkit_preload.so").exists() or not (root / "tests" / "record_probe").exists():
        pytest.skip("the preload library or record_probe is not built here (sanitizer build?)")
    return root


def probe(build):
    return str(build / "tests" / "record_probe")


def record(build, out, *cmd, stdin_text=None):
    argv = [sys.executable, "-m", "memkit", "record", "--build", str(build), "-o", str(out), "--", *cmd]
    return subprocess.run(argv, input=stdin_text, capture_output=True, text=True, env=cli_env(), timeout=120)


def lines(path):
    return [recording.parse_line(l) for l in path.read_text().splitlines()]


def summary(out):
    return json.loads((out / "summary.json").read_text())


def check_probe_files(out, rounds):
    s = summary(out)
    assert s["calls"] == {op: n * rounds for op, n in PER_ROUND.items()}
    assert s["bytes"] == {"memset": 100 * 1000 * rounds, "memcpy": 4096 * 500 * rounds,
                          "memmove": 24 * 300 * rounds}
    # size, overlap, destination alignment: all of the probe's calls alike.
    assert lines(out / "Memset.csv") == [{100: 1.0}, {0: 1.0}, {64: 1.0}]
    assert lines(out / "Memcpy.csv") == [{4096: 1.0}, {0: 1.0}, {8: 1.0}]
    assert lines(out / "Memmove.csv") == [{24: 1.0}, {1: 1.0}, {4: 1.0}]
    return s


def test_probe_recorded_exactly(build, tmp_path):
    out = tmp_path / "rec"
    p = record(build, out, probe(build), "2")
    assert p.returncode == 0, p.stderr
    s = check_probe_files(out, 2)
    assert s["processes"] == 1 and s["command"] == [probe(build), "2"]
    assert "recorded 2,000 memset" in p.stderr
    assert not [f for f in os.listdir(out) if f.startswith(".parts")]   # the count files are gone


def test_forked_child_records_into_its_own_part(build, tmp_path):
    out = tmp_path / "rec"
    p = record(build, out, probe(build), "fork")
    assert p.returncode == 0, p.stderr
    assert check_probe_files(out, 2)["processes"] == 2


def test_exec_and_shell_children(build, tmp_path):
    out = tmp_path / "rec"
    pr = probe(build)
    p = record(build, out, "/bin/sh", "-c", f"'{pr}' 1; exec '{pr}' 2")
    assert p.returncode == 0, p.stderr
    s = summary(out)
    # The shell may make calls of its own; the probes' are all there.
    assert s["calls"]["memmove"] >= 3 * 300 and s["processes"] >= 2
    sizes = lines(out / "Memset.csv")[0]
    assert sizes[100] * s["calls"]["memset"] == pytest.approx(3000, abs=1)


def test_threads_each_count(build, tmp_path):
    out = tmp_path / "rec"
    p = record(build, out, probe(build), "threads")
    assert p.returncode == 0, p.stderr
    s = check_probe_files(out, 4)
    assert s["processes"] == 1 and s["threads"] == 4


def test_killed_program_leaves_its_counts(build, tmp_path):
    out = tmp_path / "rec"
    p = subprocess.Popen([sys.executable, "-m", "memkit", "record", "--build", str(build), "-o", str(out),
                          "--", probe(build), "hang"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=cli_env())
    try:
        word, pid = p.stdout.readline().split()
        assert word == "ready"
        os.kill(int(pid), signal.SIGKILL)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    # memkit dies of the program's signal, after writing what it recorded.
    assert p.returncode == -signal.SIGKILL, err
    check_probe_files(out, 1)


def test_stdin_stdout_and_exit_status_pass_through(build, tmp_path):
    out = tmp_path / "rec"
    text = "".join(f"line {i} {'x' * i}\n" for i in range(50))
    p = record(build, out, probe(build), "stdin", stdin_text=text)
    assert p.returncode == 3 and p.stdout == text
    s = summary(out)
    assert s["calls"]["memcpy"] == 50 and s["exit_status"] == 3
    sizes = lines(out / "Memcpy.csv")[0]
    assert sorted(sizes) == sorted(len(l) + 1 for l in text.splitlines())
    assert not (out / "Memset.csv").exists()   # only the functions called


def test_large_sizes_are_kept_in_buckets_at_their_mean(build, tmp_path):
    out = tmp_path / "rec"
    p = record(build, out, probe(build), "large")
    assert p.returncode == 0, p.stderr
    s = summary(out)
    assert s["calls"]["memset"] == 22 and s["bytes"]["memset"] == 10 * 5000 + 10 * 5002 + 2 * (1 << 20)
    # 5000 and 5002 share a bucket (8 per power of two above 1 KiB): its mean.
    assert lines(out / "Memset.csv")[0] == pytest.approx({5001: 20 / 22, 1 << 20: 2 / 22}, rel=1e-5)


def test_no_program_is_a_usage_error(build, tmp_path):
    p = run_cli("record", "--build", build, "-o", tmp_path / "x")
    assert p.returncode == 1 and "no program to record" in p.stderr


def test_unknown_program_fails_cleanly(build, tmp_path):
    p = record(build, tmp_path / "x", str(tmp_path / "no-such-program"))
    assert p.returncode == 1 and "cannot run" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x").exists()   # no empty recording left behind


def test_size_distributions_replays_a_recording_by_name(build, tmp_path):
    out = tmp_path / "rec"
    assert record(build, out, probe(build), "1").returncode == 0
    db = tmp_path / "m.db"
    p = run_cli("run", "--build", build, "--db", db, "--quick", "size-distributions",
                env=cli_env(MEMKIT_DATA=str(out)))
    assert p.returncode == 0, p.stderr
    rows = {l.split()[0]: l.split()[1] for l in p.stdout.splitlines()
            if l.split() and l.split()[0] in ("Memset", "Memcpy", "Memmove")}
    assert rows == {"Memset": "memset", "Memcpy": "memcpy", "Memmove": "memmove"}
    from memkit.db import Database
    with Database(db) as d:
        (run,) = d.runs()
        ms = d.measurements(run["id"], "size-distributions")
        assert {m["params"]["data"] for m in ms} == {str(out.resolve())}
    # The report draws the recording (calls and bytes by size) with the speed-up.
    p = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert p.returncode == 0, p.stderr
    index = (tmp_path / "rep" / "index.html").read_text()
    assert "<img src='plots/size-distributions-recording-rec.png'" in index and "record_probe" in index
    assert (tmp_path / "rep" / "plots" / "size-distributions-recording-rec.png").read_bytes()[:4] == b"\x89PNG"


def test_an_existing_recording_is_refused_unless_forced(build, tmp_path):
    out = tmp_path / "rec"
    assert record(build, out, probe(build), "2").returncode == 0
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    p = record(build, out, probe(build), "1")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip() == (f"memkit: error: {out} already holds a recording (Memset.csv, Memcpy.csv, "
                                f"Memmove.csv, summary.json); nothing was run. Choose another -o DIR, or pass "
                                f"--force to replace it")
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before
    argv = [sys.executable, "-m", "memkit", "record", "--build", str(build), "-o", str(out), "--force", "--",
            probe(build), "1"]
    p = subprocess.run(argv, capture_output=True, text=True, env=cli_env(), timeout=120)
    assert p.returncode == 0, p.stderr
    check_probe_files(out, 1)


def test_a_program_that_records_nothing_says_why_and_writes_nothing(build, tmp_path):
    # A set-user-ID program: the loader ignores LD_PRELOAD when that makes
    # it a secure execution.  (This copy of `true` makes no call at all: the
    # reason is read from its mode either way.)
    prog = tmp_path / "suid-true"
    shutil.copy("/bin/true", prog)
    prog.chmod(0o4755)
    p = record(build, tmp_path / "rec", prog)
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip() == (f"memkit: error: nothing was recorded: {prog} is setuid: the loader ignores "
                                f"LD_PRELOAD in such programs (secure execution), so their calls cannot be "
                                f"recorded; no recording was written")
    assert not (tmp_path / "rec").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="a secure execution needs a setuid program of another user")
def test_a_secure_execution_records_nothing_and_says_so(build, tmp_path):
    # The probe makes 1,800 calls, but set-user-ID to another user the
    # loader runs it in secure-execution mode, without the preload.
    prog = tmp_path / "suid-probe"
    shutil.copy(probe(build), prog)
    os.chown(prog, 65534, 65534)
    prog.chmod(0o4755)
    tmp_path.chmod(0o755)
    p = record(build, tmp_path / "rec", prog, "1")
    assert p.returncode == 1 and "nothing was recorded" in p.stderr and "is setuid" in p.stderr, p.stderr
    assert not (tmp_path / "rec").exists()


def running(pid) -> bool:
    """pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_memkit_takes_the_program_with_it_and_recover_assembles_the_counts(build, tmp_path):
    out = tmp_path / "rec"
    p = subprocess.Popen([sys.executable, "-m", "memkit", "record", "--build", str(build), "-o", str(out),
                          "--", probe(build), "hang"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=cli_env())
    pid = None
    try:
        word, pid = p.stdout.readline().split()
        assert word == "ready"
        p.kill()   # memkit itself, SIGKILL: it can pass nothing on
        p.wait(timeout=30)
        # The program dies with it (init reaps it: its parent is gone).
        deadline = time.monotonic() + 30
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(pid), "the program kept running without memkit"
    finally:
        if pid and running(pid):
            os.kill(int(pid), signal.SIGKILL)
        p.kill()
        p.communicate(timeout=30)
    assert not recording.files_in(out) and [d.name for d in out.iterdir()][0].startswith(".parts-")
    p = run_cli("record", "--recover", out)
    assert p.returncode == 0, p.stderr
    s = check_probe_files(out, 1)
    assert s["command"] == [probe(build), "hang"] and s["exit_status"] is None
    assert [f.name for f in out.iterdir() if f.name.startswith(".parts-")] == []
    again = run_cli("record", "--recover", out)
    assert again.returncode == 1 and f"no interrupted recording in {out}" in again.stderr
