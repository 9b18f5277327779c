# SPDX-License-Identifier: Apache-2.0
"""Every file memkit writes goes to an absent path or over a regular file
memkit wrote (memkit.store.outdir's rule): a device node, a FIFO, a symbolic link
or a user's file is refused with one line and left as it was, for each
writer (the profile, the report, a recording, a spilled run)."""

import os
import stat
import subprocess
import sys

import pytest

from conftest import cli_env, run_cli
from memkit.programs import count_files, recording
from memkit.store import outdir
from test_cli import one_line_error
from test_record import build, probe, record  # noqa: F401  (fixture)
from test_report import store_suite
from test_tune import fake_timer, run_tune  # noqa: F401  (fixture)

MINE = "my own words\n"


def targets(tmp_path, name):
    """{kind: path} of what no writer may write to: a FIFO, a symbolic link
    to a user's file, the user's file itself, and a device node like
    /dev/full where the test may make one (replacing /dev/full by a file was
    the bug; a test that failed must not do that to the machine's)."""
    d = tmp_path / name
    d.mkdir()
    mine = d / "mine.txt"
    mine.write_text(MINE)
    fifo = d / "fifo"
    os.mkfifo(fifo)
    link = d / "link"
    link.symlink_to(mine)
    got = {"fifo": fifo, "symlink": link, "user's file": mine}
    try:
        os.mknod(d / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        got["device"] = d / "full"
    except OSError:   # not root, or no CAP_MKNOD: the FIFO stands for it
        pass
    return got


def unchanged(kind, path):
    if kind == "fifo":
        return stat.S_ISFIFO(os.lstat(path).st_mode)
    if kind == "symlink":
        return os.path.islink(path) and open(path).read() == MINE
    if kind == "device":
        return stat.S_ISCHR(os.lstat(path).st_mode)
    return open(path).read() == MINE


def test_the_rule(tmp_path):
    ours = outdir.starts_with(b"# ours")
    for kind, path in targets(tmp_path, "t").items():
        with pytest.raises(outdir.MemkitError, match=f"will not write the thing to {path}: it is "):
            outdir.write_file(path, "# ours\n", "the thing", ours)
        assert unchanged(kind, path), kind
    new = tmp_path / "t" / "sub" / "new"
    outdir.write_file(new, "# ours 1\n", "the thing", ours)
    outdir.write_file(new, "# ours 2\n", "the thing", ours)   # memkit's own: replaced
    assert new.read_text() == "# ours 2\n"
    assert stat.S_IMODE(new.stat().st_mode) == 0o644 & ~_umask()
    assert sorted(p.name for p in new.parent.iterdir()) == ["new"]   # no temporary left


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_tune_out_refuses_what_it_did_not_write(tmp_path, fake_timer):  # noqa: F811
    log = tmp_path / "log"
    for kind, path in targets(tmp_path, "t").items():
        line = one_line_error(run_tune(fake_timer, "--out", path, FAKE_TIMER_LOG=str(log)))
        assert line.startswith(f"memkit: error: will not write the profile to {path}: it is "), line
        assert unchanged(kind, path), kind
        assert not log.exists(), "it measured before refusing"
    # a profile memkit wrote is replaced
    prof = tmp_path / "profile"
    assert run_tune(fake_timer, "--out", prof).returncode == 0
    assert run_tune(fake_timer, "--out", prof).returncode == 0
    assert prof.read_text().startswith("# memkit profile")


def test_report_out_refuses_what_it_did_not_write(tmp_path):
    db = tmp_path / "m.db"
    store_suite(db)
    for kind, path in targets(tmp_path, "t").items():
        line = one_line_error(run_cli("report", "--db", db, "--out", path))
        assert "memkit: error: " in line and path.__str__() in line, line
        assert unchanged(kind, path), kind
    # a file memkit listed as its own, since replaced by a link or a FIFO
    out = tmp_path / "rep"
    assert run_cli("report", "--db", db, "--out", out).returncode == 0
    t = targets(tmp_path, "u")
    for kind in ("symlink", "fifo"):
        (out / "index.html").unlink()
        if kind == "symlink":
            (out / "index.html").symlink_to(t["user's file"])
        else:
            os.mkfifo(out / "index.html")
        line = one_line_error(run_cli("report", "--db", db, "--out", out))
        assert line.startswith(f"memkit: error: will not write the report to {out / 'index.html'}: it is "), line
        assert unchanged(kind, out / "index.html")
    assert unchanged("user's file", t["user's file"])


def rec_dir(tmp_path, name, kind):
    """A recording directory memkit wrote, one of whose files is then the
    kind of thing memkit must not replace."""
    d = tmp_path / name
    rec = count_files.Recording({op: count_files.OpCounts() for op in count_files.OPS}, processes=1)
    rec.ops["memset"].sizes, rec.ops["memset"].align = {64: 4}, {64: 4}
    recording.write(rec, d, ["p"], 0)
    target = d / "Memset.csv"
    target.unlink()
    mine = tmp_path / f"{name}-mine.txt"
    mine.write_text(MINE)
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        target.symlink_to(mine)
    else:
        target.write_text(MINE)
        (d / "summary.json").write_text(MINE)   # nothing says memkit wrote it now
    return rec, d, target


@pytest.mark.parametrize("kind", ["fifo", "symlink", "user's file"])
def test_a_recording_replaces_only_memkits_files(tmp_path, kind):
    rec, d, target = rec_dir(tmp_path, "rec", kind)
    before = sorted((p.name, os.lstat(p).st_mode) for p in d.iterdir())
    with pytest.raises(recording.MemkitError, match=f"will not write the recording to {d}/"):
        recording.write(rec, d, ["p"], 0)
    assert sorted((p.name, os.lstat(p).st_mode) for p in d.iterdir()) == before
    assert unchanged(kind, target)
    # a function no longer called: its file is deleted only if memkit's
    rec.ops["memset"].sizes = {}
    rec.ops["memcpy"].sizes, rec.ops["memcpy"].align = {8: 1}, {8: 1}
    with pytest.raises(recording.MemkitError):
        recording.write(rec, d, ["p"], 0)
    assert unchanged(kind, target)


def test_record_force_refuses_a_users_file_before_running(build, tmp_path):  # noqa: F811
    out = tmp_path / "rec"
    assert record(build, out, probe(build), "1").returncode == 0
    (out / "Memset.csv").write_text(MINE)
    (out / "summary.json").write_text(MINE)
    argv = [sys.executable, "-m", "memkit", "record", "--build", str(build), "-o", str(out), "--force", "--",
            "sh", "-c", f"touch {tmp_path}/ran"]
    p = subprocess.run(argv, capture_output=True, text=True, env=cli_env(), timeout=120)
    line = one_line_error(p)
    assert line.startswith("memkit: error: will not write the recording to "), line
    assert not (tmp_path / "ran").exists() and (out / "Memset.csv").read_text() == MINE


def test_record_keeps_the_parts_a_child_still_writing_does_not_spoil(build, tmp_path):  # noqa: F811
    # The program leaves a background child whose count file is still being
    # created when the program ends (here: an empty part in its name).
    out = tmp_path / "rec"
    script = 'sleep 30 >/dev/null 2>&1 & echo $! > "$0"; : > "$MEMKIT_RECORD/$!.9.mkrec"; echo bg'
    p = record(build, out, "sh", "-c", script, tmp_path / "child")
    child = int((tmp_path / "child").read_text())
    try:
        assert p.returncode == 0, p.stderr
        assert f"process {child} (" in p.stderr and ") was still running" in p.stderr, p.stderr
        s = recording.load_summary(out)
        assert s["processes"] >= 1 and sum(s["calls"].values()) > 0   # the shell's own counts kept
        assert "Traceback" not in p.stderr
    finally:
        os.kill(child, 9)
