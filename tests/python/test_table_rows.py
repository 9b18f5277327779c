# SPDX-License-Identifier: Apache-2.0
"""What a new user met, row by row: standard output closed, one run's
fingerprint damaged, an impossible schema version, `memkit try` on a
statically linked program, --db naming a device, `compare` after a try."""

import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import FINGERPRINT, cli_env, real_bench_dir, run_cli
from memkit.store.db import Database
from test_cli import one_line_error
from test_db import result, store


def stored_db(tmp_path, runs=2):
    db = tmp_path / "m.db"
    with Database(db, create=True) as d:
        for i in range(runs):   # each run its own machine state (fingerprint row)
            store(d, fp=dict(FINGERPRINT, microcode=f"0x{i}"))
    return db


@pytest.mark.parametrize("cmd", [["export"], ["runs"], ["export", "--format", "json"], ["runs", "--json"]])
def test_closed_standard_output_is_cannot_write(tmp_path, cmd):
    db = stored_db(tmp_path)
    p = subprocess.run([sys.executable, "-m", "memkit", *cmd, "--db", str(db)], stdout=None, stderr=subprocess.PIPE,
                       text=True, env=cli_env(), timeout=60, close_fds=True,
                       preexec_fn=lambda: __import__("os").close(1))
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip() == "memkit: cannot write: standard output is closed"


def test_one_damaged_fingerprint_flags_its_run_only(tmp_path):
    db = stored_db(tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE fingerprints SET json = '{\"cpu_model\": ' WHERE id = 1")
    con.commit()
    con.close()
    p = run_cli("runs", "--db", db)
    assert p.returncode == 0, p.stderr
    assert "damaged: its machine fingerprint is damaged" in p.stdout and p.stdout.count("damaged:") == 1
    p = run_cli("export", "2", "--db", db)   # the other run is whole
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 5, p.stderr
    p = run_cli("export", "1", "--format", "json", "--db", db)   # and the flagged one still readable
    assert p.returncode == 0 and '"fingerprint": {}' in p.stdout, p.stderr
    p = run_cli("compare", "--db", db)
    assert p.returncode == 0 and "note: run 1: its machine fingerprint is damaged" in p.stdout, p.stderr


def test_a_negative_schema_version_is_unknown(tmp_path, fake_build):
    db = stored_db(tmp_path, 1)
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = -1")
    con.close()
    for cmd in (["runs"], ["run", "--build", fake_build, "ok"]):
        line = one_line_error(run_cli(*cmd, "--db", db))
        assert line.startswith(f"memkit: error: {db} has an unknown schema version -1"), line


def test_a_device_as_the_database_suggests_nothing_that_cannot_work(tmp_path):
    for cmd in (["runs"], ["compare"], ["export"]):
        line = one_line_error(run_cli(*cmd, "--db", "/dev/null"))
        assert line == ("memkit: error: /dev/null is not a regular file, so not a results database: give --db "
                        "a file path"), line
        assert "memkit run --db" not in line


@pytest.fixture(scope="module")
def static_program(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("static")
    src = d / "s.c"
    # no libc at all: only a static link, whatever libraries are installed
    src.write_text("void _start(void) { __asm__ volatile(\"mov $60, %eax; xor %edi, %edi; syscall\"); }\n")
    exe = d / "static-true"
    subprocess.run([cc, "-static", "-nostdlib", "-o", str(exe), str(src)], check=True)
    return exe


def test_try_on_a_statically_linked_program_says_the_preload_cannot_reach_it(tmp_path, static_program):
    preload = real_bench_dir().parent / "libmemkit_preload.so"
    if not preload.exists():
        pytest.skip("no preload library built")
    line = one_line_error(run_cli("try", "--preload", preload, "--db", tmp_path / "m.db", "--",
                                  static_program))
    assert line == (f"memkit: error: {static_program} is statically linked: the preload cannot reach a statically "
                    f"linked program (there is no dynamic loader to preload memkit into); nothing was timed")


def test_compare_after_a_try_says_nothing_of_a_quick_grid(tmp_path):
    db = tmp_path / "m.db"
    with Database(db, create=True) as d:
        store(d, quick=True)
        try_result = result(name="try")
        try_result.args = ["/bin/true"]
        store(d, results=[try_result])
    p = run_cli("compare", "--db", db)
    assert p.returncode == 0, p.stderr
    assert "one run used the quick grid" not in p.stdout and "tried `/bin/true`" in p.stdout
