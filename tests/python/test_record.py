# SPDX-License-Identifier: Apache-2.0
"""memkit record with the real preload library and a probe with known calls
(tests/preload/record_probe.c): exact counts, source alignments, working
sets, forks, execs, threads, a SIGKILLed program, standard input and exit
status passed through; older recordings loading; the replay of a
recording's four-line files; the prediction's arithmetic."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_env, real_bench_dir, run_cli
from memkit.programs import count_files, recording, ws_estimate

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
    # size, overlap, destination alignment (copies: source alignment): all
    # of the probe's calls alike.
    # Then (the fifth line) how often a call repeated its call site's last
    # size: every call but each site's first in each thread.
    got = {f: lines(out / f) for f in ("Memset.csv", "Memcpy.csv", "Memmove.csv")}
    assert got["Memset.csv"][:4] == [{100: 1.0}, {0: 1.0}, {64: 1.0}, {}]   # no source: line 4 blank
    assert got["Memcpy.csv"][:4] == [{4096: 1.0}, {0: 1.0}, {8: 1.0}, {64: 1.0}]
    assert got["Memmove.csv"][:4] == [{24: 1.0}, {1: 1.0}, {4: 1.0}, {16: 1.0}]
    for f, ls in got.items():
        assert len(ls) == 5 and set(ls[4]) <= {0, 1} and ls[4][1] > 0.99, (f, ls[4])
    assert all(0.99 < s["repeats"][op] <= 1 for op in PER_ROUND)
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
    assert p.returncode == 2 and "no program to record" in p.stderr


def test_unknown_program_fails_cleanly(build, tmp_path):
    p = record(build, tmp_path / "x", str(tmp_path / "no-such-program"))
    assert p.returncode == 127 and "cannot run" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x").exists()   # no empty recording left behind


def test_size_distributions_replays_a_recording_by_name(build, tmp_path):
    out = tmp_path / "rec"
    # enough calls for every function to be sampled (one call in 256) into an estimate
    assert record(build, out, probe(build), "40").returncode == 0
    db = tmp_path / "m.db"
    p = run_cli("run", "--build", build, "--db", db, "--quick", "size-distributions",
                env=cli_env(MEMKIT_DATA=str(out)))
    assert p.returncode == 0, p.stderr
    rows = {l.split()[0]: l.split()[1] for l in p.stdout.splitlines()
            if l.split() and l.split()[0] in ("Memset", "Memcpy", "Memmove")}
    assert rows == {"Memset": "memset", "Memcpy": "memcpy", "Memmove": "memmove"}
    from memkit.store.db import Database
    with Database(db) as d:
        (run,) = d.runs()
        ms = d.measurements(run["id"], "size-distributions")
        assert {m["params"]["data"] for m in ms} == {str(out.resolve())}
        # at hot and the working sets recorded (each a few lines: hot, or
        # 8K for the 4 KiB copies), not the --quick default's hot and dram
        want = recording.recorded_ws(summary(out))
        assert want[0] == "hot" and set(want) <= {"hot", "8K"}
        assert {m["params"]["ws"] for m in ms} == set(want)
        pred = recording.predict(summary(out), recording.latest_replay(d, out))
        assert [o.op for o in pred.ops] == ["memset", "memcpy", "memmove"] and not pred.unreplayed
    # The report draws the recording (calls and bytes by size) with the
    # speed-up, the working sets and the prediction.
    p = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert p.returncode == 0, p.stderr
    index = (tmp_path / "rep" / "index.html").read_text()
    assert "<img src='plots/size-distributions-recording-rec.png'" in index and "record_probe" in index
    assert pred.headline() in index and "Working sets: memset " in index
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


def ran_marker(tmp_path):
    """A program that leaves a file behind when it runs."""
    mark = tmp_path / "ran"
    return mark, ["sh", "-c", f"touch {mark}; ls / >/dev/null"]


@pytest.mark.parametrize("kind", ["file", "fifo", "device", "dangling link"])
def test_a_directory_that_is_not_one_is_refused_before_the_program_runs(build, tmp_path, kind):
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("the user's")
    elif kind == "fifo":
        os.mkfifo(out)
    elif kind == "device":
        out = Path("/dev/null")
    else:
        out.symlink_to(tmp_path / "nowhere")
    mark, cmd = ran_marker(tmp_path)
    p = record(build, out, *cmd)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    it_is = {"file": "a file, not a directory", "fifo": "a FIFO, not a directory",
             "device": "a character device, not a directory",
             "dangling link": f"a symbolic link to {tmp_path / 'nowhere'}, which does not exist"}[kind]
    assert p.stderr.strip() == (f"memkit: error: will not write the recording into {out}: it is {it_is}; the "
                                f"recording goes into a new directory or an existing one")
    assert not mark.exists() and not (tmp_path / "nowhere").exists()
    if kind == "file":
        assert out.read_text() == "the user's"


def test_a_folder_of_the_users_is_refused_as_report_refuses_it(build, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    mark, cmd = ran_marker(tmp_path)
    p = run_cli("record", "-q", "--build", build, "-o", out, "--", *cmd)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip() == (f"memkit: error: {out} is not empty and memkit did not write it (no recording; it "
                                f"holds notes.txt): the recording goes into a new or empty directory, or one memkit "
                                f"wrote before; it never replaces other files. Choose another -o")
    assert not mark.exists() and [f.name for f in out.iterdir()] == ["notes.txt"]
    # an empty folder is fine
    (out / "notes.txt").unlink()
    p = run_cli("record", "-q", "--build", build, "-o", out, "--", *cmd)
    assert p.returncode == 0 and mark.exists(), p.stderr
    assert sorted(f.name for f in out.iterdir()) == sorted(recording.files_in(out))


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


def test_source_alignment_recorded_beside_the_destinations(build, tmp_path):
    out = tmp_path / "rec"
    p = record(build, out, probe(build), "srcalign")
    assert p.returncode == 0, p.stderr
    # line 3 the destinations (all 64-aligned), line 4 the sources
    assert lines(out / "Memcpy.csv")[2:4] == [{64: 1.0}, {1: 0.75, 8: 0.25}]
    assert lines(out / "Memmove.csv")[2:4] == [{64: 1.0}, {2: 1.0}]


def test_working_set_separates_one_small_buffer_from_a_stride_over_256_mib(build, tmp_path):
    ws = {}
    for mode in ("ws-small", "ws-stride"):
        p = record(build, tmp_path / mode, probe(build), mode)
        assert p.returncode == 0, p.stderr
        ws[mode] = summary(tmp_path / mode)["working_set"]["memcpy"]
        assert f"memcpy working set: {ws_estimate.ws_text(ws[mode])}" in p.stderr
    small, stride = ws["ws-small"], ws["ws-stride"]
    # ~780 sampled calls, one line each; ~1000 of 4 KiB, three lines each
    assert small["lines_drawn"] > 300 and stride["lines_drawn"] > 900
    # the same two lines, over and over: a line per side, replayed hot
    assert small["bytes_per_side"] <= 128 and small["ws"] == "hot" and not small["no_reuse_seen"]
    # 1 GiB read from 256 MiB of pages: no sampled line comes back
    assert stride["no_reuse_seen"] and stride["bytes_per_side"] is None and stride["ws"] == "dram"


def test_a_count_file_of_the_first_layout_still_loads(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    data = gzip.decompress((Path(__file__).parent / "data" / "record-v1.mkrec.gz").read_bytes())
    assert data.startswith(b"MKREC01\n")
    (parts / "4242.0.mkrec").write_bytes(data)
    rec = count_files.merge_parts(parts)
    assert {op: c.calls for op, c in rec.ops.items()} == {"memset": 2000, "memcpy": 1000, "memmove": 600}
    assert rec.ops["memcpy"].sizes == {4096: 1000} and rec.ops["memcpy"].align == {8: 1000}
    assert rec.ops["memmove"].overlap == 600 and rec.processes == 1
    assert rec.programs == {"record_probe": 1}
    # no source alignments nor windows in that layout: three lines, no estimate
    assert not rec.ops["memcpy"].src_align and rec.ops["memcpy"].windows == ([], [])
    s = recording.write(rec, tmp_path / "rec", ["record_probe", "2"], 0, seconds=1.0)
    assert lines(tmp_path / "rec" / "Memcpy.csv") == [{4096: 1.0}, {0: 1.0}, {8: 1.0}]
    assert s["working_set"]["memcpy"]["ws"] is None
    assert recording.recorded_ws(s) == []


def test_a_newer_layout_is_refused_with_a_reason(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "1.0.mkrec").write_bytes(b"MKREC99\n" + bytes(4096))
    with pytest.raises(recording.MemkitError, match="MKREC99 is not one this memkit reads"):
        count_files.merge_parts(parts)


def old_recording(d: Path) -> Path:
    """A recording directory as memkit record wrote them before source
    alignments and working sets: three lines, summary without format."""
    d.mkdir()
    (d / "Memcpy.csv").write_text("16:0.5,4096:0.5\n0:1\n8:0.25,64:0.75\n")
    (d / "summary.json").write_text(json.dumps({
        "calls": {"memset": 0, "memcpy": 1000, "memmove": 0}, "bytes": {"memset": 0, "memcpy": 2056000,
                                                                       "memmove": 0},
        "processes": 1, "threads": 1, "programs": {"p": 1}, "command": ["p"], "exit_status": 0}))
    return d


def test_an_older_recording_directory_replays_and_predicts(tmp_path):
    d = old_recording(tmp_path / "old")
    assert recording.is_recording(d)
    # no estimates: the experiment's own working sets, not just hot
    assert recording.replay_arguments(["rounds=5"], str(d)) == ["rounds=5", f"batch={recording.REPLAY_BATCH}"]
    pred = recording.predict(recording.load_summary(d), {("Memcpy", "hot"): {"glibc": 30.0, "memkit": 20.0},
                                                         ("Memcpy", "dram"): {"glibc": 90.0, "memkit": 99.0}})
    (o,) = pred.ops
    assert (o.ws, o.note) == ("hot", "no working-set estimate: hot; memkit called directly: the preload's jump "
                                     "not counted")
    assert pred.saving_s == pytest.approx(1000 * 10e-9)
    assert pred.headline() == "predicted: memkit saves 1e-05 s (the recording has no run time)"


def new_summary(**working_sets):
    return {"format": 2, "calls": {"memset": 2_000_000, "memcpy": 3_000_000, "memmove": 500},
            "seconds": 1.69, "working_set": working_sets}


def test_the_prediction_is_calls_times_the_saving_at_the_recorded_working_set():
    s = new_summary(memset={"ws": "hot", "bytes_per_side": 128},
                    memcpy={"ws": "256K", "bytes_per_side": 250_000},
                    memmove={"ws": "dram", "bytes_per_side": None, "no_reuse_seen": True})
    replay = {("Memset", "hot"): {"glibc": 10.0, "memkit": 12.0, "ws_bytes": 4096},
              ("Memcpy", "hot"): {"glibc": 50.0, "memkit": 40.0, "ws_bytes": 4096},
              ("Memcpy", "256K"): {"glibc": 100.0, "memkit": 25.0, "preload": 30.0, "ws_bytes": 262144},
              ("Memcpy", "dram"): {"glibc": 300.0, "memkit": 500.0, "ws_bytes": 1 << 26}}
    pred = recording.predict(s, replay)
    got = {o.op: (o.ws, o.glibc_ns, o.memkit_ns) for o in pred.ops}
    # memcpy at its own 256K, not hot nor dram, through the preload (as the program
    # calls it) where the replay raced it; memmove never replayed: left out, said
    assert got == {"memset": ("hot", 10.0, 12.0), "memcpy": ("256K", 100.0, 30.0)}
    assert [o.note for o in pred.ops] == ["memkit called directly: the preload's jump not counted", ""]
    assert pred.unreplayed == ["memmove"]
    # 2e6 x -2 ns + 3e6 x 70 ns = -0.004 + 0.21 s
    assert pred.saving_s == pytest.approx(0.206)
    assert pred.glibc_seconds == pytest.approx(1.896)
    assert pred.speedup == pytest.approx(1.896 / 1.69)
    # no per-round ratios: the interval is the point
    assert pred.headline() == "predicted: memkit saves 0.206 s of 1.9 s (1.122x, replay noise 1.122-1.122)"
    text = "\n".join(pred.lines())
    assert "memcpy: 3,000,000 calls x (100.0 - 30.0 ns) at ws=256K = +0.21 s" in text
    assert "not replayed: memmove" in text


def test_a_working_set_not_replayed_takes_the_nearest_and_says_so():
    s = new_summary(memcpy={"ws": "4M", "bytes_per_side": 3_900_000})
    replay = {("Memcpy", "hot"): {"glibc": 50.0, "memkit": 40.0, "ws_bytes": 4096},
              ("Memcpy", "l3"): {"glibc": 80.0, "memkit": 90.0, "ws_bytes": 4 << 20},
              ("Memcpy", "dram"): {"glibc": 300.0, "memkit": 500.0, "ws_bytes": 64 << 20}}
    (o,) = recording.predict(s, replay).ops
    assert o.ws == "l3" and o.note.startswith("ws=4M not replayed, nearest: l3")
    pred = recording.predict(dict(s, seconds=1.0), {("Memcpy", "l3"): replay[("Memcpy", "l3")]})
    assert pred.headline().startswith("predicted: memkit costs 0.03 s more of 0.97 s (0.970x")


def test_replay_ws_is_hot_a_size_or_dram():
    l3 = 32 << 20
    assert ws_estimate.replay_ws(None, 2, l3) is None
    assert ws_estimate.replay_ws(128, 2, l3) == "hot"
    assert ws_estimate.replay_ws(300_000, 2, l3) == "256K"
    assert ws_estimate.replay_ws(5 << 20, 2, l3) == "4M"
    assert ws_estimate.replay_ws(20 << 20, 2, l3) == "dram"          # both sides beyond the L3
    assert ws_estimate.replay_ws(20 << 20, 1, l3) == "16M"           # memset's one side fits
    assert ws_estimate.replay_ws(float("inf"), 1, l3) == "dram"      # no reuse seen


def mix(x):
    """record.c's hash of a line (MurmurHash3's finaliser)."""
    m = 2**64
    x = (x ^ (x >> 33)) * 0xFF51AFD7ED558CCD % m
    x = (x ^ (x >> 33)) * 0xC4CEB9FE1A85EC53 % m
    return x ^ (x >> 33)


def test_the_region_estimate_inverts_random_draws():
    import random
    rnd = random.Random(7)
    bits = 1 << 16
    for region in (50, 3000, 200_000):
        draws = 20_000
        lines_seen = {rnd.randrange(region) for _ in range(draws)}
        hashed = {mix(l) >> 48 for l in lines_seen}
        est = ws_estimate.region_lines(count_files.distinct_lines(len(hashed), bits), draws, bits)
        assert est == pytest.approx(region, rel=0.15)
    # all distinct: no reuse seen
    assert ws_estimate.region_lines(1000.0, 1000, bits) == float("inf")


def test_a_stride_over_256_mib_never_reads_as_reuse():
    # record_probe ws-stride as record.c samples it: ~1000 sampled 4 KiB
    # calls at random pages of 256 MiB over 4 passes, one line drawn in each
    # 2 KiB half; 300 recordings' worth.  At 3 standard deviations of the
    # counting's noise about 1 in 30 showed a region of a few MiB.
    import random
    rnd = random.Random(11)
    bits = 1 << 16
    pages = (256 << 20) // 4096
    for _ in range(300):
        lines = []
        for _ in range(1014):
            page = rnd.randrange(pages)
            lines += [page * 64 + rnd.randrange(32), page * 64 + 32 + rnd.randrange(32)]
        hashed = {mix(l) >> 48 for l in lines}
        est = ws_estimate.region_lines(count_files.distinct_lines(len(hashed), bits), len(lines), bits)
        assert est == float("inf"), est


def test_replay_arguments_add_the_recorded_working_sets(tmp_path):
    d = old_recording(tmp_path / "rec")
    s = json.loads((d / "summary.json").read_text())
    s["working_set"] = {"memcpy": {"ws": "dram"}, "memset": {"ws": "256K"}, "memmove": {"ws": "hot"}}
    (d / "summary.json").write_text(json.dumps(s))
    batch = f"batch={recording.REPLAY_BATCH}"
    assert recording.replay_arguments(["rounds=5"], str(d)) == ["rounds=5", "ws=hot,256K,dram", batch]
    assert recording.replay_arguments([f"data={d}"], None) == [f"data={d}", "ws=hot,256K,dram", batch]
    assert recording.replay_arguments(["ws=l2"], str(d)) == ["ws=l2", batch]           # the user's own
    assert recording.replay_arguments([], str(tmp_path)) == []                         # not a recording


# A peer library whose memcpy tallies the sources' alignments it is given,
# appended to $ALIGN_TALLY when the process ends.
TALLY = r"""
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static unsigned long tally[7];
void *memcpy(void *d, const void *s, size_t n)
{
    tally[__builtin_ctzll((uintptr_t)s | 64)]++;
    char *a = d; const char *b = s; while (n--) *a++ = *b++;
    return d;
}
__attribute__((destructor)) static void report(void)
{
    FILE *f = fopen(getenv("ALIGN_TALLY"), "a");
    for (int k = 0; k < 7; k++) fprintf(f, "%d %lu\n", 1 << k, tally[k]);
    fclose(f);
}
"""


def sources_seen(tmp_path, csv_text):
    """The source alignments size-distributions gives a peer's memcpy on a
    file Memcpy.csv holding csv_text: {alignment: calls}."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build a peer library with")
    (tmp_path / "tally.c").write_text(TALLY)
    so = tmp_path / "libtally.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-fno-builtin", "-fno-tree-loop-distribute-patterns",
                    str(tmp_path / "tally.c"), "-o", str(so)], check=True)
    data = tmp_path / "data"
    data.mkdir()
    (data / "Memcpy.csv").write_text(csv_text)
    tally = tmp_path / "tally.txt"
    exp = real_bench_dir() / "memkit-exp-size-distributions"
    p = subprocess.run([str(exp), f"data={data}", f"peer={so}", "ws=hot", "calls=1000", "rounds=3",
                        "processes=1"], capture_output=True, text=True, env=dict(os.environ, ALIGN_TALLY=str(tally)),
                       timeout=120)
    assert p.returncode == 0, p.stderr
    seen = {}
    for line in tally.read_text().splitlines():
        a, n = map(int, line.split())
        seen[a] = seen.get(a, 0) + n
    return {a: n for a, n in seen.items() if n}


def test_size_distributions_draws_sources_from_a_fourth_line(tmp_path):
    # destinations 64-aligned, sources odd: every source the peer sees is odd
    assert set(sources_seen(tmp_path, "64:1\n0:1\n64:1\n1:1\n")) == {1}


def test_size_distributions_three_lines_draw_sources_from_the_third(tmp_path):
    assert set(sources_seen(tmp_path, "64:1\n0:1\n64:1\n")) == {64}


def test_record_predict_replays_and_prints_the_prediction(build, tmp_path):
    out, db = tmp_path / "rec", tmp_path / "m.db"
    argv = [sys.executable, "-m", "memkit", "record", "--predict", "--quick", "--db", str(db), "--build",
            str(build), "-o", str(out), "--", probe(build), "40"]
    p = subprocess.run(argv, capture_output=True, text=True, env=cli_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""   # standard output is the program's: the replay's table goes to stderr
    from memkit.store.db import Database
    with Database(db) as d:
        times = recording.latest_replay(d, out)
        pred = recording.predict(summary(out), times)
    # the replay raced the preload library: memkit as the program calls it
    assert times and all("preload" in t for t in times.values())
    assert summary(out)["seconds"] > 0 and pred.speedup is not None
    assert f"memkit: {pred.headline()}" in p.stderr
    for o in pred.ops:
        assert f"memkit:   {o.op}: {o.calls:,} calls x" in p.stderr


def test_a_replay_bounds_each_functions_batch_by_bytes(build, tmp_path):
    # numpy's 16 MiB memmoves beside small memsets: each function's batch
    # holds at most REPLAY_BATCH bytes (the memmoves few calls, the memsets
    # their 50,000), not one count for all
    d = old_recording(tmp_path / "rec")
    assert recording.replay_arguments(["rounds=5"], str(d))[-1] == f"batch={recording.REPLAY_BATCH}"
    assert recording.replay_arguments(["calls=100"], str(d))[-1] == "calls=100"     # the user's own
    (d / "Memmove.csv").write_text(f"{16 << 20}:0.9,64:0.1\n0:1\n64:1\n")
    (d / "Memset.csv").write_text("64:1\n0:1\n64:1\n")
    jsonl = tmp_path / "r.jsonl"
    exe = build / "bench" / "memkit-exp-size-distributions"
    p = subprocess.run([str(exe), f"data={d}", "ws=hot", "rounds=3", "processes=1", "batch=128M",
                        "--jsonl", str(jsonl)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    calls = {json.loads(l)["params"]["op"]: json.loads(l)["params"]["calls"]
             for l in jsonl.read_text().splitlines() if '"measurement"' in l}
    # 128 MiB at a mean of 0.9 x 16 MiB: 8 calls; memset's 64 bytes: the default 50,000
    assert calls["memmove"] == 8 and calls["memset"] == 50_000


def test_the_predictions_interval_and_what_it_says_of_a_measurement():
    s = dict(new_summary(memcpy={"ws": "hot", "bytes_per_side": 128}), seconds=1.0)
    s["calls"] = {"memset": 0, "memcpy": 10_000_000, "memmove": 0}
    # glibc 20 ns, memkit 16 ns a call; per round glibc/memkit 1.20..1.30
    ratios = [1.2, 1.22, 1.25, 1.25, 1.25, 1.28, 1.3, 1.25, 1.24, 1.26]
    replay = {("Memcpy", "hot"): {"glibc": 20.0, "memkit": 16.0, "memkit_ratios": ratios, "ws_bytes": 4096}}
    pred = recording.predict(s, replay)
    (o,) = pred.ops
    lo, hi = o.ratio_interval
    assert 1.2 <= lo <= 1.25 <= hi <= 1.3
    # saving 10M x 4 ns = 0.04 s of 1.04 s: 1.04x, the interval around it
    assert pred.speedup == pytest.approx(1.04)
    plo, phi = pred.speedup_interval()
    assert plo < 1.04 < phi and phi - plo < 0.02
    assert pred.against(1.04, (1.03, 1.05)).endswith("the prediction holds")
    assert pred.against(1.06, (1.035, 1.08)).endswith("the intervals overlap")
    # a 10% change of a 1.04 s run is 0.1 s: more than the calls take (0.2 s on glibc)? no: 0.2 > 0.1
    assert "does not stand for the program" in pred.against(0.90, (0.88, 0.92))
    # 1.5x: 0.35 s moved, beyond the 0.2 s its calls take on glibc
    assert "more than the calls can explain" in pred.against(1.5, (1.45, 1.55))


def _window(draw, k=32768):
    """(distinct at k, distinct at k/2) of k draws from draw()."""
    seen, half = set(), None
    for i in range(k):
        seen.add(draw())
        if i + 1 == k // 2:
            half = len(seen)
    return len(seen), half


def test_the_halves_of_a_window_tell_a_cold_share_from_one_larger_region():
    import random
    rnd = random.Random(3)
    bits = 1 << 16
    counter = iter(range(10**9))
    # 40% of the draws at lines never seen, the rest from 500 lines
    d, h = _window(lambda: next(counter) + 10**6 if rnd.random() < 0.4 else rnd.randrange(500))
    cold, region = ws_estimate.mixture(d, 32768, (h, 16384), bits)
    assert 0.37 < cold < 0.43 and 400 < region < 600
    # the same distinct count from one region of ~14k lines: no cold share
    d1, h1 = _window(lambda: rnd.randrange(14_700))
    cold1, region1 = ws_estimate.mixture(d1, 32768, (h1, 16384), bits)
    assert cold1 == 0.0 and 13_000 < region1 < 16_500
    # the region alone would have read the first as one region of ~14k lines
    assert ws_estimate.region_lines(d, 32768, bits) > 10_000
    # few draws (4 KiB copies of one 64-line buffer): which lines they hit is
    # noise enough to look like a cold share, so none is fitted
    for seed in range(20):
        rs = random.Random(seed)
        d2, h2 = _window(lambda: rs.randrange(64), k=160)
        assert ws_estimate.mixture(d2, 160, (h2, 80), bits)[0] == 0.0
    # no half (an older layout): the region alone
    assert ws_estimate.mixture(d, 32768, None, bits) == (0.0, ws_estimate.region_lines(d, 32768, bits))


def test_a_cold_share_is_replayed_in_dram_and_mixed_into_the_prediction():
    s = dict(new_summary(memcpy={"ws": "8K", "bytes_per_side": 8000, "cold_fraction": 0.25}), seconds=1.0)
    assert recording.function_ws(s)["memcpy"] == {"8K": 0.75, "dram": 0.25}
    assert recording.recorded_ws(s) == ["hot", "8K", "dram"]
    replay = {("Memcpy", "8K"): {"glibc": 10.0, "memkit": 5.0, "ws_bytes": 8192},
              ("Memcpy", "dram"): {"glibc": 100.0, "memkit": 110.0, "ws_bytes": 1 << 26}}
    (o,) = recording.predict(s, replay).ops
    # 0.75 x 10 + 0.25 x 100 = 32.5 ns on glibc; 0.75 x 5 + 0.25 x 110 = 31.25 on memkit
    assert o.glibc_ns == pytest.approx(32.5) and o.memkit_ns == pytest.approx(31.25)
    assert o.ws == "8K (75%) + dram (25%)"


def test_a_prediction_off_on_large_calls_names_the_fresh_pages():
    s = dict(new_summary(memmove={"ws": "dram", "bytes_per_side": None, "no_reuse_seen": True}), seconds=1.0)
    s["calls"] = {"memset": 0, "memcpy": 0, "memmove": 1000}
    s["bytes"] = {"memset": 0, "memcpy": 0, "memmove": 1000 * (16 << 20)}
    replay = {("Memmove", "dram"): {"glibc": 1.0e6, "memkit": 0.8e6, "ws_bytes": 1 << 26}}
    pred = recording.predict(s, replay)   # saves 0.2 s of 1.2 s: 1.2x
    line = pred.against(1.05, (1.04, 1.06))
    assert "calls of 16 MiB on average" in line and "page faults" in line
