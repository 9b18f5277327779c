# SPDX-License-Identifier: Apache-2.0
"""Another library racing through the whole front end: `memkit run
size-distributions peer=LIB.so` stores the peer's series at every working
set, `compare` pairs them between two runs, `report` names the peer; a file
that is no library stops the run before anything is stored."""

import json
import shutil
import subprocess

import pytest

from conftest import real_bench_dir, run_cli
from memkit.store.db import Database

# Byte loops the compiler must not turn back into memset/memcpy calls.
TOY = r"""
#include <stddef.h>
void *memset(void *d, int c, size_t n) { char *a = d; while (n--) *a++ = (char)c; return d; }
void *memcpy(void *d, const void *s, size_t n)
{ char *a = d; const char *b = s; while (n--) *a++ = *b++; return d; }
"""

RUN = ["run", "--quick", "size-distributions", "only=Memset_Fleet", "calls=2000", "rounds=5", "processes=1",
       "ws=hot,l2"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build a peer library with")
    d = tmp_path_factory.mktemp("peer")
    (d / "toy.c").write_text(TOY)
    so = d / "libtoy.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-fno-builtin", "-fno-tree-loop-distribute-patterns",
                    str(d / "toy.c"), "-o", str(so)], check=True)
    return so


def test_a_peer_is_run_stored_compared_and_reported(toy, tmp_path):
    build = real_bench_dir()
    db = tmp_path / "m.db"
    for _ in (1, 2):
        p = run_cli(*RUN, f"peer={toy}", "--build", build, "--db", db)
        assert p.returncode == 0, p.stderr
        assert "peer toy is " in p.stdout and "races its own memset, memcpy" in p.stdout
    with Database(db) as d:
        runs = d.runs()
        assert len(runs) == 2
        ms = d.measurements(runs[0]["id"], "size-distributions")
    toy_ms = [m for m in ms if m["series"] == "toy memset"]
    assert sorted(m["params"]["ws"] for m in toy_ms) == ["hot", "l2"]
    for m in toy_ms:
        # a byte loop against glibc's memset on calls of ~300 B: far behind
        assert m["ratio_to"] == "glibc memset" and 0 < m["ratio"] < 1 and m["value"] > 0
        assert len(m["sample_values"]) == 5

    p = run_cli("compare", "--json", "--db", db)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    # glibc, memkit and the peer at two working sets, all paired between the runs
    assert j["compared"] == 6 and not j["only_a"] and not j["only_b"], j

    out = tmp_path / "rep"
    p = run_cli("report", "--db", db, "--out", out)
    assert p.returncode == 0, p.stderr
    html = (out / "index.html").read_text()
    section = html[html.index("<h2 id='size-distributions'>"):]
    assert "toy memset" in section and "peer toy is " in section
    # one figure across the working sets, the peer's panel beside memkit's
    assert (out / "plots" / "size-distributions-matrix.png").exists()
    assert "toy" in section[section.index("size-distributions-matrix.png"):]


def test_a_file_that_is_no_library_stores_nothing(tmp_path):
    build = real_bench_dir()
    text = tmp_path / "notes.so"
    text.write_text("not a library\n")
    db = tmp_path / "m.db"
    p = run_cli(*RUN, f"peer={text}", "--build", build, "--db", db)
    err = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 2 and len(err) == 1, p.stderr   # a refused argument: a usage error
    assert err[0].startswith(f"memkit: error: size-distributions: peer={text}: not a loadable shared library")
    assert "== size-distributions" not in p.stdout and not db.exists()
