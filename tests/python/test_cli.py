# SPDX-License-Identifier: Apache-2.0
"""The command line with fake experiments: output, ordering, and every error
path as one line with a non-zero exit status."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from conftest import cli_env, make_fake_build, run_cli
from memkit.lab import experiments
from memkit.store import db as dbmod
from memkit.store.db import Database


def one_line_error(p, rc=1):
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    err = [l for l in p.stderr.splitlines() if l.strip()]
    assert "Traceback" not in p.stderr
    return err[-1]


def wait_for_line(p, needle, timeout=60):
    """Reads p's stderr up to a line containing needle; kills p on timeout."""
    guard = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
    guard.start()
    try:
        for line in p.stderr:
            if needle in line:
                return
        pytest.fail(f"no line with {needle!r} on stderr")
    finally:
        guard.cancel()


def test_list_in_suite_order(tmp_path):
    b = make_fake_build(tmp_path / "b", ["zeta", "fill-regions", "alpha", "memset-sizes"])
    p = run_cli("list", "--build", b)
    assert p.returncode == 0, p.stderr
    names = [l.split()[0] for l in p.stdout.splitlines() if not l.startswith(" ")]
    assert names == ["memset-sizes", "fill-regions", "alpha", "zeta"]
    assert "seed: seed-of-alpha" in p.stdout and "fake zeta" in p.stdout


def test_build_dir_from_env(tmp_path):
    b = make_fake_build(tmp_path / "b", ["ok"])
    p = run_cli("list", env=cli_env(MEMKIT_BUILD=str(b)))
    assert p.returncode == 0 and p.stdout.startswith("ok ")


def test_env_prints_the_fingerprint(fake_build):
    p = run_cli("env", "--build", fake_build)
    assert p.returncode == 0, p.stderr
    for needle in ("microcode    0xa0", "Test CPU", "AVX-512BW", "ERMS", "FSRM", "L2 1 MiB", "L3 32 MiB",
                   "kernel", "glibc        2.36", "abc123", "no tuned profile"):
        assert needle in p.stdout, needle


def test_run_stores_and_prints(fake_build, tmp_path):
    db = tmp_path / "r" / "m.db"
    p = run_cli("run", "--build", fake_build, "--db", db, "--quick", "ok", "zeta")
    assert p.returncode == 0, p.stderr
    assert "table of ok" in p.stdout and "zeta verdict" in p.stdout and "summary: run 1" in p.stdout
    # Not a terminal: progress comes as occasional plain lines.
    assert "ok: 0/4" in p.stderr
    with Database(db) as d:
        (run,) = d.runs()
        assert run["quick"] == 1 and run["fingerprint"]["microcode"] == "0xa0"
        assert [e["name"] for e in d.experiments(run["id"])] == ["ok", "zeta"]
        ms = d.measurements(run["id"], "ok")
        assert len(ms) == 8 and ms[0]["params"] == {"size": 1024, "quick": True}


def test_db_from_env_and_default(fake_build, tmp_path):
    p = run_cli("run", "--build", fake_build, "ok", env=cli_env(MEMKIT_DB=str(tmp_path / "env.db")))
    assert p.returncode == 0 and (tmp_path / "env.db").exists()
    # Outside a checkout (an installed memkit run from /): the user's data
    # directory, never ./results.
    data = tmp_path / "data"
    for cwd in (tmp_path, "/"):
        p = run_cli("run", "--build", fake_build, "ok", cwd=cwd, env=cli_env(XDG_DATA_HOME=str(data)))
        assert p.returncode == 0, p.stderr
        assert f"stored in {data / 'memkit' / 'memkit.db'}" in p.stdout
    assert not (tmp_path / "results").exists() and not os.path.exists("/results/memkit.db")
    p = run_cli("runs", cwd="/", env=cli_env(XDG_DATA_HOME=str(data)))
    assert p.returncode == 0 and len([l for l in p.stdout.splitlines() if l.strip()[:1].isdigit()]) == 2
    # Inside a memkit checkout, from any folder of it: its results/.
    checkout = tmp_path / "checkout"
    (checkout / "include").mkdir(parents=True)
    (checkout / "include" / "memkit.h").write_text("")
    (checkout / "python" / "memkit").mkdir(parents=True)
    (checkout / "bench").mkdir()
    p = run_cli("run", "--build", fake_build, "ok", cwd=checkout / "bench", env=cli_env(XDG_DATA_HOME=str(data)))
    assert p.returncode == 0 and (checkout / "results" / "memkit.db").exists()
    p = run_cli("report", cwd=checkout, env=cli_env(XDG_DATA_HOME=str(data)))
    assert p.returncode == 0 and (checkout / "results" / "report" / "index.html").exists(), p.stderr


def test_compare_refuses_a_run_with_itself(fake_build, tmp_path):
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    assert one_line_error(run_cli("compare", "--db", db, 1, 1), 2) == \
        "memkit: error: compare takes two different runs (run 1 twice compares nothing)"
    assert one_line_error(run_cli("compare", "--db", db, "--machine", "a", "--machine", "a"), 2) == \
        "memkit: error: --machine takes two different hosts (a twice)"


@pytest.mark.parametrize("host", ["a\nb", "tab\there", "\x1b[2Jwiped", " padded", ""])
def test_a_host_name_that_would_break_a_line_is_refused(fake_build, tmp_path, host):
    db = tmp_path / "m.db"
    for args, env in ((["--host", host], cli_env()), ([], cli_env(MEMKIT_HOST=host))):
        if not host and not args:
            continue   # an empty MEMKIT_HOST is unset: the machine's name
        p = run_cli("run", "--build", fake_build, "--db", db, "ok", *args, env=env)
        line = one_line_error(p, 2)
        assert line.startswith("memkit: error: bad host name '") and "\n" not in line and "\x1b" not in line
        assert not db.exists()


def test_a_stored_host_name_is_shown_on_one_line(fake_build, tmp_path):
    # A database written before host names were checked.
    from memkit.results.result import Result
    from conftest import FINGERPRINT
    db = tmp_path / "m.db"
    with Database(db, create=True) as d:
        d.store_run(started_at="t0", finished_at="t1", quick=True, fingerprint=FINGERPRINT, hostname="a\nb",
                    results=[Result("ok", "s", "d", "ok", 1.0, [], FINGERPRINT, [], [], "", "")])
    p = run_cli("runs", "--db", db)
    assert p.returncode == 0 and "a\\x0ab" in p.stdout
    assert len(p.stdout.splitlines()) == 2   # the header and the run


def test_report_and_export_take_the_run_alike(fake_build, tmp_path):
    db = tmp_path / "m.db"
    for _ in range(2):
        assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    for form in (["1"], ["--run", "1"]):
        p = run_cli("export", "--db", db, "--format", "json", *form)
        assert p.returncode == 0 and '"id": 1' in p.stdout, (form, p.stderr)
        p = run_cli("report", "--db", db, "--out", tmp_path / "r", *form)
        assert p.returncode == 0, (form, p.stderr)
        assert "memkit lab report, run 1" in (tmp_path / "r" / "index.html").read_text()
    assert one_line_error(run_cli("export", "--db", db, "1", "--run", "2"), 2) == \
        "memkit: error: two runs given (1 and --run 2): give one"


def test_crash_is_one_line_and_the_rest_is_kept(fake_build, tmp_path):
    db = tmp_path / "m.db"
    p = run_cli("run", "--build", fake_build, "--db", db, "ok", "crash")
    line = one_line_error(p)
    assert line.startswith("memkit: error: 1 experiment(s) did not finish: crash crashed (killed by SIGSEGV)")
    with Database(db) as d:
        (run,) = d.runs()
        status = {e["name"]: e["status"] for e in d.experiments(run["id"])}
        assert status == {"ok": "ok", "crash": "crashed"}
        assert len(d.measurements(run["id"], "ok")) == 8


@pytest.mark.parametrize("name,message", [
    ("fail", "fail failed (exit status 3): error: the fake experiment failed on purpose"),
    ("truncated", "truncated ended without its end record"),
])
def test_failing_experiments(fake_build, tmp_path, name, message):
    p = run_cli("run", "--build", fake_build, "--db", tmp_path / "m.db", name)
    assert message in one_line_error(p)


def test_user_errors(fake_build, tmp_path):
    cases = [
        (["run", "--build", fake_build, "--db", tmp_path / "x.db", "nosuch"],
         "memkit: error: unknown experiment 'nosuch' (known: crash, fail, ok, slow, truncated, zeta)", 2),
        (["list", "--build", tmp_path], f"memkit: error: no experiments (memkit-exp-*) in {tmp_path}", 1),
        (["compare", "--db", tmp_path / "none.db"], f"memkit: error: no database at {tmp_path / 'none.db'}", 1),
        (["report", "--db", tmp_path / "none.db"], "memkit: error: no database at", 1),
        (["run", "--frobnicate"], "memkit run: error: unrecognized arguments: --frobnicate (see memkit run --help)",
         2),
        (["compare", "x", "y"], "memkit compare: error: argument RUN: invalid int value: 'x'", 2),
        (["nosuchcommand"], "memkit: error: argument COMMAND: invalid choice: 'nosuchcommand'", 2),
    ]
    for args, start, rc in cases:
        line = one_line_error(run_cli(*args, cwd=tmp_path), rc)
        assert line.startswith(start), (args, line)


def test_an_empty_path_is_refused_not_taken_for_the_default(fake_build, tmp_path):
    # `--db=` once meant the default database: with one there, runs and export exited 0 on it.
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    env = cli_env(MEMKIT_DB=str(db))
    for command, option in ((["runs"], "--db"), (["export"], "--db"), (["report"], "--out"),
                            (["record", "--", "true"], "-o/--output")):
        given = "--db=" if option == "--db" else f"{option.split('/')[0]}="
        line = one_line_error(run_cli(*command[:1], given, *command[1:], cwd=tmp_path, env=env), 2)
        assert line == (f"memkit {command[0]}: error: argument {option}: an empty value: give "
                        f"{'a file path or a postgresql:// URL' if option == '--db' else 'a directory'}, or leave "
                        f"the option out for its default (see memkit {command[0]} --help)"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "m.db"]   # no report, no recording


def test_a_postgresql_url_without_psycopg_names_the_extra(tmp_path):
    # `pip install .` leaves psycopg out (the postgres extra): a psycopg that cannot be imported.
    shadow = tmp_path / "shadow" / "psycopg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    env = cli_env()
    env["PYTHONPATH"] = f"{shadow.parent}{os.pathsep}{env['PYTHONPATH']}"
    line = one_line_error(run_cli("runs", "--db", "postgresql://memkit@127.0.0.1:9/memkit", env=env))
    assert line == ("memkit: error: a postgresql:// database needs the psycopg package, which memkit installs only "
                    "with its postgres extra: pip install '.[postgres]' at memkit's checkout (or pip install "
                    "'psycopg[binary]' where memkit is installed)")


def test_nothing_built(tmp_path):
    env = cli_env()
    env.pop("MEMKIT_BUILD", None)
    # The package's own checkout may have a build: hide it by running a copy.
    p = subprocess.run([sys.executable, "-c", "import sys, memkit.lab.experiments as l; l._repo_root = lambda: "
                        f"__import__('pathlib').Path({str(tmp_path)!r}); from memkit.cli import main; "
                        "sys.exit(main(['list']))"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert one_line_error(p).startswith("memkit: error: no experiments built (looked in")


def test_corrupt_database(fake_build, tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(8192))
    for cmd in (["compare"], ["report"], ["run", "--build", fake_build, "ok"]):
        line = one_line_error(run_cli(*cmd, "--db", junk))
        assert line.startswith(f"memkit: error: cannot use database {junk}"), line


def test_compare_needs_two_runs(fake_build, tmp_path):
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    assert one_line_error(run_cli("compare", "--db", db)) == \
        "memkit: error: need two runs to compare; the database has 1"
    assert one_line_error(run_cli("compare", "--db", db, 1, 7)) == "memkit: error: no run 7 (runs: 1)"
    assert one_line_error(run_cli("compare", "--db", db, 1), 2) == \
        "memkit: error: compare takes two run ids, or none for the last two runs that share measurements"


def kill_a_run(fake_build, db):
    """A run whose experiment hangs, killed (with its experiment) once it is under way."""
    p = subprocess.Popen([sys.executable, "-m", "memkit", "run", "--build", str(fake_build), "--db", str(db),
                          "ok", "slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=cli_env(), start_new_session=True)
    wait_for_line(p, "slow: 0/4")
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def test_killed_run_keeps_what_finished_and_earlier_runs(fake_build, tmp_path):
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    kill_a_run(fake_build, db)
    with Database(db) as d:
        # run 2 keeps "ok", which had finished, marked incomplete
        assert [(r["id"], r["incomplete"]) for r in d.runs()] == [(1, None), (2, dbmod.UNFINISHED)]
        assert len(d.measurements(1)) == 8 and len(d.measurements(2)) == 8
        assert [e["name"] for e in d.experiments(2)] == ["ok"]
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0


def test_fleet_marks_a_killed_run_incomplete(fake_build, tmp_path):
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    kill_a_run(fake_build, db)
    f = run_cli("fleet", "--db", db)
    assert f.returncode == 0, f.stderr
    line = f.stdout.splitlines()[-1]
    assert line.startswith("  ") and f"run 2 " in line and f"INCOMPLETE: {dbmod.UNFINISHED}; vs run 1;" in line, line
    host = json.loads(run_cli("fleet", "--db", db, "--json").stdout)["groups"][0]["hosts"][0]
    assert (host["run"], host["incomplete"], host["previous_incomplete"]) == (2, dbmod.UNFINISHED, None)
    # the next run is complete and says that it is compared with an incomplete one
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    line = run_cli("fleet", "--db", db).stdout.splitlines()[-1]
    assert "INCOMPLETE" not in line and "; vs run 2 (incomplete);" in line, line


def test_interrupted_run_says_so(fake_build, tmp_path):
    db = tmp_path / "m.db"
    # SIG_DFL first: started from a background job (make test &), SIGINT
    # arrives ignored, and Python then installs no KeyboardInterrupt handler.
    p = subprocess.Popen([sys.executable, "-m", "memkit", "run", "--build", str(fake_build), "--db", str(db),
                          "slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
                         start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_line(p, "slow: 0/4")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130 and "interrupted" in err and "Traceback" not in err
    with Database(db) as d:
        assert d.runs() == []


def test_progress_lines_parse():
    p = experiments.parse_progress("progress: fill-regions 3/81 12.5s 4 KiB\n")
    assert (p.experiment, p.done, p.total, p.seconds, p.what) == ("fill-regions", 3, 81, 12.5, "4 KiB")
    assert experiments.parse_progress("progress: x 1/2 0.0s") is not None
    assert experiments.parse_progress("error: progress: nope") is None


def test_options_may_follow_the_experiment_name(fake_build, tmp_path):
    # As people type it: the experiment, then --quick, then its arguments.
    db = tmp_path / "m.db"
    p = run_cli("run", "ok", "--quick", "--build", fake_build, "--db", db, "--", "x=1")
    assert p.returncode == 0, p.stderr
    assert "verdict" in p.stdout and "arguments: x=1" in p.stdout
    with Database(db) as d:
        (run,) = d.runs()
        assert run["quick"] == 1


def test_an_unknown_option_names_the_commands_help(fake_build, tmp_path):
    line = one_line_error(run_cli("run", "ok", "--frobnicate", "--build", fake_build, "--db", tmp_path / "m.db"), 2)
    assert line == "memkit run: error: unrecognized arguments: --frobnicate (see memkit run --help)"
    line = one_line_error(run_cli("export", "--frobnicate", "--db", tmp_path / "m.db"), 2)
    assert line == "memkit export: error: unrecognized arguments: --frobnicate (see memkit export --help)"


@pytest.mark.parametrize("command", [["list"], ["runs"], ["export"], ["export", "--format", "json"]])
def test_output_to_a_full_disk_is_one_line(fake_build, tmp_path, command):
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    args = command + (["--build", str(fake_build)] if command == ["list"] else ["--db", str(db)])
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "memkit", *args], stdout=full, stderr=subprocess.PIPE,
                           text=True, env=cli_env(), timeout=60)
    assert (p.returncode, p.stderr) == (1, "memkit: cannot write: No space left on device\n")


def test_output_to_a_closed_pipe_ends_quietly(fake_build, tmp_path):
    db = tmp_path / "m.db"
    assert run_cli("run", "--build", fake_build, "--db", db, "ok").returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)   # the reader is gone (`memkit export | head -1` after its line)
    try:
        p = subprocess.run([sys.executable, "-m", "memkit", "export", "--db", str(db)], stdout=write_end,
                           stderr=subprocess.PIPE, text=True, env=cli_env(), timeout=60)
    finally:
        os.close(write_end)
    assert (p.returncode, p.stderr) == (1, "")


def test_refused_argument_stops_the_run_before_anything_runs(fake_build, tmp_path):
    # The experiments are asked (--check-args) before the first one runs:
    # nothing runs, nothing is stored, the experiment's own line is the
    # error, and the exit status is 2 (a usage error, as test_arguments.py).
    db = tmp_path / "m.db"
    p = run_cli("run", "--build", fake_build, "--db", db, "ok", "zeta", "zeta:bad=1")
    assert one_line_error(p, 2) == "memkit: error: zeta: refused bad=1"
    assert "== ok" not in p.stdout and not db.exists()
    assert run_cli("run", "--build", fake_build, "--db", db, "ok", "zeta", "zeta:fine=1").returncode == 0
