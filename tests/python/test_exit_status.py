# SPDX-License-Identifier: Apache-2.0
"""One rule for exit statuses, the man page's table (docs.exit_statuses):
what was typed does not hold, 2; input refused, 1; a program that cannot be
started, the shell's 127 or 126.  Every command's argument errors against
it, each one line and refused before anything is measured or stored; then
the cases of bad input of issue #52 the table does not show by itself."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess

import pytest

from conftest import FINGERPRINT, TEST_DATA_HOME, make_fake_build, real_bench_dir, run_cli
from memkit import cli, docs
from memkit.commands import all_commands
from memkit.errors import MemkitError, UsageError
from memkit.lab import glibc
from memkit.programs.whole_program import ProgramNotStarted
from memkit.results.result import Result
from memkit.store import spill
from memkit.store.db import Database

STATUS = {"usage": UsageError.exit_status, "refused": MemkitError.exit_status,
          "no such program": ProgramNotStarted.NOT_FOUND, "not executable": ProgramNotStarted.NOT_EXECUTABLE}

LONG = "glibc.cpu.x86_rep_movsb_threshold=" + "9" * 10000
DB = ["--db", "{tmp}/new.db"]
GLIBC_SET = {"GLIBC_TUNABLES": "glibc.malloc.check=0"}

# (argv, what the table calls it, what its one line says, environment); {x}: the world's paths.
CASES = [
    (["list", "extra"], "usage", "unrecognized arguments: extra", None),
    (["list", "--build", "{tmp}/empty"], "refused", "no experiments (memkit-exp-*)", None),
    (["env", "--markdown", "--build", "{fake}"], "usage", "--markdown goes with", None),
    (["run", "--build", "{fake}", *DB, "nosuch"], "usage", "unknown experiment 'nosuch'", None),
    (["run", "--build", "{fake}", *DB, "ok", "--", "bad=1"], "usage", "refused bad=1", None),
    (["run", "--build", "{fake}", *DB, "ok", "zeta", "--", "min=4K"], "usage", "go to one experiment", None),
    (["run", "--build", "{fake}", *DB, "ok", "--glibc-tunables", ""], "usage", "an empty value", None),
    (["run", "--build", "{fake}", *DB, "ok", "--glibc-tunables", "glibc.cpu.x86_rep_movsb_threshold=-1"],
     "usage", "not an integer from 0 to 18446744073709551615", None),
    (["run", "--build", "{fake}", *DB, "ok", "--glibc-tunables", "@/dev/null"], "refused", "not a regular file",
     None),
    (["run", "--build", "{fake}", *DB, "ok", "--glibc-tunables", "glibc.malloc.perturb=1"], "refused",
     "GLIBC_TUNABLES is already set", GLIBC_SET),
    (["run", "--build", "{fake}", "--db", "{future}", "ok"], "refused", "newer than this memkit's", None),
    (["compare", "--db", "{db}", "1"], "usage", "compare takes two run ids", None),
    (["compare", "--db", "{db}", "1", "1"], "usage", "two different runs", None),
    (["compare", "--db", "{db}", "--machine", "a"], "usage", "--machine takes two hosts", None),
    (["compare", "--db", "{db}", "1", "9"], "refused", "no run 9", None),
    (["report", "--db", "{db}", "--fleet", "1"], "usage", "it takes no run", None),
    (["report", "--db", "{db}", "1", "--run", "2"], "usage", "two runs given", None),
    (["report", "--db", "{tmp}/none.db"], "refused", "no database at", None),
    (["fleet", "1"], "usage", "unrecognized arguments: 1", None),
    (["fleet", "--db", "{tmp}/none.db"], "refused", "no database at", None),
    (["completion", "fish"], "usage", "invalid choice: 'fish'", None),
    (["export", "--db", "{db}", "--format", "xml"], "usage", "invalid choice: 'xml'", None),
    (["export", "--db", "{tmp}/none.db"], "refused", "no database at", None),
    (["import"], "usage", "the following arguments are required: FILE", None),
    (["import", *DB, "/dev/null"], "refused", "not a regular file", None),
    (["import", *DB, "{empty_spill}"], "refused", "holds no experiment's results", None),
    (["record"], "usage", "no program to record", None),
    (["record", "--recover", "{tmp}", "--", "true"], "usage", "takes no program", None),
    (["record", "--", "no-such-program-52"], "no such program", "cannot run no-such-program-52", None),
    (["record", "--", "{not_exec}"], "not executable", "Permission denied", None),
    (["record", "--preload", "/etc/passwd", "--", "true"], "refused", "not an x86-64 shared library", None),
    (["runs", "1"], "usage", "unrecognized arguments: 1", None),
    (["runs", "--db", "{tmp}/none.db"], "refused", "no database at", None),
    (["system-check", "--bogus"], "usage", "unrecognized arguments: --bogus", None),
    (["try", *DB], "usage", "no program to try", None),
    (["try", *DB, "--runs", "0", "--", "true"], "usage", "takes at least 1 pair", None),
    (["try", *DB, "--runs", "1", "--budget", "nan", "--", "true"], "usage", "a finite number of seconds", None),
    (["try", *DB, "--runs", "1", "--budget", "inf", "--", "true"], "usage", "a finite number of seconds", None),
    (["try", *DB, "--glibc-tunables", "", "--", "true"], "usage", "an empty value", None),
    (["try", *DB, "--glibc-tunables", LONG, "--", "true"], "usage", "(10000 characters)", None),
    (["try", *DB, "--glibc-tunables", "@/dev/null", "--", "true"], "refused", "not a regular file", None),
    (["try", *DB, "--runs", "1", "--preload", "/etc/passwd", "--", "true"], "refused",
     "not an x86-64 shared library", None),
    (["try", *DB, "--preload", "{lib}", "--glibc-tunables", "glibc.malloc.perturb=1", "--", "true"], "refused",
     "GLIBC_TUNABLES is already set", GLIBC_SET),
    (["try", *DB, "--preload", "{lib}", "--", "no-such-program-52"], "no such program", "cannot run", None),
    (["try", *DB, "--preload", "{lib}", "--", "{not_exec}"], "not executable", "Permission denied", None),
    (["try", *DB, "--runs", "1", "--preload", "{lib}", "--build", "{real}", "--profile", "{garbage}", "--",
      "true"], "refused", "is corrupt", None),
    (["tune", "--build", "{fake}", "--timer", "/bin/true", "--rounds", "0"], "usage", "takes at least 2 rounds", None),
    (["tune", "--build", "{fake}", "--timer", "/bin/true", "--glibc", "--rounds", "1"], "usage",
     "takes at least 2 rounds", None),
    (["tune", "--build", "{fake}", "--glibc", "--check", "--timer", "/bin/true"], "usage",
     "--glibc goes without --check", None),
    (["tune", "--build", "{fake}", "--glibc", "--timer", "/bin/true", "--out", "{dangling}"], "refused",
     "a symbolic link to nothing", None),
    (["tune", "--build", "{fake}", "--glibc", "--timer", "/bin/true", "--out", "/proc/self"], "refused",
     "cannot write the glibc tunables line to /proc/self/glibc-tunables", None),
    (["tune", "--build", "{fake}", "--glibc", "--timer", "/bin/true", "--out", "{tmp}/D", "--evidence",
      "{tmp}/D/glibc-tunables"], "usage", "is where the line goes", None),
    (["tune", "--build", "{real}", "--quick", "--dry-run", "--min-size", "0"], "usage", "1 byte or more", None),
    (["tune", "--build", "{real}", "--quick", "--dry-run", "--min-size", "8M", "--max-size", "1M"], "usage",
     "--min-size 8 MiB is above --max-size 1 MiB", None),
]


def _libc() -> str:
    """A shared library that is surely here and harmless to preload: the C library this process runs."""
    with open("/proc/self/maps") as f:
        return next(line.split()[-1] for line in f if re.search(r"/libc[.-][^/]*\.so", line) or
                    line.rstrip().endswith("/libc.so.6"))


def _store(db: Database, name: str) -> int:
    m = {"experiment": name, "series": "a", "params": {"size": 64}, "metric": "fill_throughput", "unit": "GB/s",
         "stat": "median", "value": 1.0, "min": 1.0, "median": 1.0, "max": 1.0, "samples": 1}
    r = Result(name, "seed", "desc", "ok", 1.0, [], FINGERPRINT, [m], [], "", "")
    return db.store_run(started_at="t0", finished_at="t1", quick=False, fingerprint=FINGERPRINT, results=[r])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exit")
    (tmp / "empty").mkdir()
    db = tmp / "two.db"
    with Database(db, create=True) as d:   # two runs that share no measurement
        _store(d, "ok")
        _store(d, "zeta")
    future = tmp / "future.db"
    with sqlite3.connect(future) as c:
        c.execute("CREATE TABLE t (x)")
        c.execute("PRAGMA user_version = 999")
    empty_spill = spill.write_spill(str(tmp / "elsewhere.db"), dict(started_at="t0", finished_at="t1", quick=False,
                                                                   hostname="h", command="memkit run"), None, [], None)
    (tmp / "garbage").write_text("GARBAGE\n")
    (tmp / "not_exec").write_text("#!/bin/sh\n")
    os.symlink(tmp / "nowhere", tmp / "dangling")
    try:
        real = str(real_bench_dir().parent.resolve())
    except pytest.skip.Exception:
        real = None
    return dict(tmp=tmp, db=db, future=future, empty_spill=empty_spill, garbage=tmp / "garbage",
                not_exec=tmp / "not_exec", dangling=tmp / "dangling", lib=_libc(), real=real,
                fake=make_fake_build(tmp / "fake", ["ok", "zeta"]))


@pytest.fixture
def memkit(monkeypatch, capsys, world):
    """`memkit ARGV` in this process (a command's refusal costs no interpreter
    start): (exit status, standard output, standard error)."""
    def run(argv, env=None):
        for name in ("MEMKIT_DB", "MEMKIT_HOST", "MEMKIT_PRELOAD", "MEMKIT_BUILD", "GLIBC_TUNABLES", "LD_PRELOAD"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("XDG_DATA_HOME", TEST_DATA_HOME)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(world["tmp"])
        try:
            status = cli.main([str(a).format(**world) for a in argv])
        except SystemExit as e:   # argparse's usage errors
            status = e.code
        out, err = capsys.readouterr()
        return status, out, err
    return run


@pytest.mark.parametrize("argv, kind, says, env", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_every_commands_argument_errors_keep_the_table(memkit, world, argv, kind, says, env):
    if any("{real}" in a for a in argv) and not world["real"]:
        pytest.skip("nothing built")
    status, out, err = memkit(argv, env)
    lines = [line for line in err.splitlines() if line.strip()]
    assert (status, len(lines)) == (STATUS[kind], 1), (status, out, err)
    assert says in lines[0] and "Traceback" not in err, lines[0]
    assert not (world["tmp"] / "new.db").exists()   # refused before anything is stored


def test_every_command_has_its_argument_errors_in_the_table(memkit):
    covered = {argv[0] for argv, kind, _, _ in CASES if kind == "usage"}
    assert covered == {m.NAME for m in all_commands()}
    for m in all_commands():   # and an unknown option, the same everywhere
        status, _, err = memkit([m.NAME, "--no-such-option"])
        assert status == STATUS["usage"] and err.startswith(f"memkit {m.NAME}: error: "), err


def test_the_man_page_says_each_status_the_table_uses():
    said = dict(docs.exit_statuses())
    for kind, status in STATUS.items():
        assert str(status) in said, kind
    assert "usage error" in said[str(STATUS["usage"])] and "refused" in said[str(STATUS["refused"])]
    assert "no such program" in said[str(STATUS["no such program"])]


# ---- the cases the table does not show by itself ----

def test_a_tunables_file_is_read_only_when_regular_and_small(tmp_path):
    # A FIFO with no writer once blocked the read for ever (and /dev/zero grew memory without end).
    os.mkfifo(tmp_path / "fifo")
    p = run_cli("try", "--glibc-tunables", f"@{tmp_path / 'fifo'}", "--", "true", timeout=30)
    assert p.returncode == 1 and "not a regular file" in p.stderr, p.stderr
    big = tmp_path / "big"
    big.write_text("# a comment\n" * 10000 + "glibc.malloc.perturb=1\n")
    with pytest.raises(MemkitError, match="larger than 64 KiB"):
        glibc.tunables_argument(f"@{big}")


@pytest.mark.parametrize("value", ["-1", "18446744073709551616", "9" * 10000, "0x1" + "0" * 16, "1a", "+5", "1e6",
                                   "0x", "08"])
def test_a_tunable_value_glibc_cannot_hold_is_refused(world, value):
    spec = f"glibc.cpu.x86_rep_movsb_threshold={value}"
    with pytest.raises(UsageError, match="not an integer from 0 to"):
        glibc.check_tunables(spec)
    if world["real"]:   # the lab's glibc_tunables= by the same rule
        p = lab_check(world, spec)
        assert p.returncode == 2 and "not an integer from 0 to" in p.stderr, p.stderr


def test_a_tunable_value_glibc_holds_is_taken(world):
    spec = ("glibc.cpu.x86_rep_movsb_threshold=18446744073709551615:glibc.cpu.x86_non_temporal_threshold=0x1000000:"
            "glibc.malloc.perturb=0:glibc.cpu.x86_rep_stosb_threshold=010:glibc.cpu.hwcaps=-AVX2_Usable")
    assert glibc.check_tunables(spec) == spec
    if world["real"]:
        p = lab_check(world, spec)
        assert p.returncode == 0, p.stderr


def lab_check(world, spec):
    probe = os.path.join(world["real"], "tests", "lab_glibc_probe")
    return subprocess.run([probe, "--check-args", f"glibc_tunables={spec}"], capture_output=True, text=True)


def test_a_backwards_rep_movsb_window_reads_never():
    view = {"rep_movsb_threshold": (1 << 64) - 1, "rep_movsb_stop_threshold": 1 << 20}
    assert glibc.thresholds_text(view) == "rep movsb never (from 16777216 TiB, at or past its stop 1 MiB)"
    assert glibc.thresholds_text(dict(view, rep_movsb_threshold=2048)) == "rep movsb 2 KiB..1 MiB"


def test_try_keeps_a_measurement_the_database_will_not_take(memkit, world, tmp_path, monkeypatch):
    db = tmp_path / "locked.db"
    Database(db, create=True).close()
    store_run = Database.store_run

    def locked_at_store_time(self, **kw):   # another process takes the database while the pairs run
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            return store_run(self, **kw)
        finally:
            holder.close()
    monkeypatch.setattr(Database, "store_run", locked_at_store_time)
    status, out, err = memkit(["try", "--db", db, "--build", "{fake}", "--preload", "{lib}", "--runs", "1", "-q",
                               "--", "true"], env={"MEMKIT_DB_TIMEOUT": "0.1"})
    assert status == 1 and "true: " in out, err
    kept = re.search(r"kept in (\S+): `memkit import", err)
    assert kept and "database is locked" in err, err
    monkeypatch.setattr(Database, "store_run", store_run)
    status, out, err = memkit(["import", "--db", db, kept.group(1)])
    assert status == 0, err
    with Database(db) as d:
        (run,) = d.runs()
        (e,) = d.experiments(run["id"])
        assert e["name"] == "try" and d.measurements(run["id"])


def test_compare_gate_fails_when_nothing_was_compared(memkit, world):
    status, out, _ = memkit(["compare", "--db", "{db}", "--fail-on-regression", "1", "2"])
    assert status == 1 and out.splitlines()[-1] == "gate: nothing compared: no measurement is in both runs (exit 1)"
    status, out, _ = memkit(["compare", "--db", "{db}", "--fail-on-regression", "--json", "1", "2"])
    assert status == 1 and json.loads(out)["gate"].startswith("nothing compared")
    status, _, _ = memkit(["compare", "--db", "{db}", "1", "2"])   # no gate asked: a report, not a failure
    assert status == 0


def test_record_predict_checks_the_database_before_the_program_runs(memkit, world, tmp_path):
    status, _, err = memkit(["record", "--predict", "--quick", "--db", "{future}", "--preload", "{lib}",
                             "-o", tmp_path / "rec", "--", "touch", tmp_path / "ran"])
    assert status == 1 and "newer than this memkit's" in err, err
    assert not (tmp_path / "ran").exists() and not (tmp_path / "rec").exists()
