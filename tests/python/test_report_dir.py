# SPDX-License-Identifier: Apache-2.0
"""`memkit report --out DIR` never deletes or overwrites a file memkit did
not write: a directory of the user's is refused, one memkit wrote keeps the
user's additions, a refused report changes nothing."""

import json

from conftest import run_cli
from test_report import PNG, store_suite


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def report(db, out, *more):
    return run_cli("report", "--db", db, "--out", out, *more)


def test_a_directory_of_the_users_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "m.db"
    store_suite(db)
    out = tmp_path / "mine"
    (out / "plots").mkdir(parents=True)
    (out / "plots" / "mine.png").write_bytes(PNG)
    (out / "index.html").write_text("<html>my own page</html>")
    before = snapshot(out)
    p = report(db, out)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    (line,) = p.stderr.splitlines()
    assert line.startswith(f"memkit: error: {out} is not empty and memkit did not write it") and \
        "index.html, plots" in line and "another --out" in line
    assert snapshot(out) == before
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "plots"]   # no staging left either


def test_a_report_directory_keeps_the_users_files(tmp_path):
    db = tmp_path / "m.db"
    store_suite(db)
    out = tmp_path / "rep"
    assert report(db, out).returncode == 0
    (out / "notes.txt").write_text("mine")
    (out / "plots" / "mine.png").write_bytes(PNG)
    p = report(db, out)
    assert p.returncode == 0, p.stderr
    assert (out / "notes.txt").read_text() == "mine" and (out / "plots" / "mine.png").read_bytes() == PNG
    listed = json.loads((out / ".memkit-files").read_text())["files"]
    assert "index.html" in listed and "notes.txt" not in listed and "plots/mine.png" not in listed


def test_a_file_of_the_users_where_the_report_would_write_is_refused(tmp_path):
    db = tmp_path / "m.db"
    store_suite(db)
    assert report(db, tmp_path / "first").returncode == 0
    name = json.loads((tmp_path / "first" / ".memkit-files").read_text())["files"][-1]
    # A directory memkit wrote (its list is empty), and a file of the user's
    # at a name the report writes.
    out = tmp_path / "rep"
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / ".memkit-files").write_text(json.dumps({"files": []}))
    (out / name).write_bytes(b"the user's own")
    before = snapshot(out)
    p = report(db, out)
    assert p.returncode == 1 and f"{out / name} exists and memkit did not write it" in p.stderr
    assert snapshot(out) == before


def test_a_report_written_before_manifests_is_updated_without_deleting(tmp_path):
    db = tmp_path / "m.db"
    store_suite(db)
    out = tmp_path / "old"
    (out / "plots").mkdir(parents=True)
    (out / "index.html").write_text("<!doctype html><html><head><title>memkit lab report, run 3</title>")
    (out / "plots" / "old-plot.png").write_bytes(PNG)
    p = report(db, out)
    assert p.returncode == 0, p.stderr
    assert "memkit lab report, run 1" in (out / "index.html").read_text()
    assert (out / "plots" / "old-plot.png").read_bytes() == PNG   # not known to be memkit's: kept
    assert "plots/old-plot.png" not in json.loads((out / ".memkit-files").read_text())["files"]


def test_an_empty_or_new_directory_is_fine(tmp_path):
    db = tmp_path / "m.db"
    store_suite(db)
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "deeper"):
        p = report(db, out)
        assert p.returncode == 0, p.stderr
        assert (out / "index.html").exists() and (out / ".memkit-files").exists()


def test_an_out_that_is_not_a_directory_is_refused_as_tune_refuses_a_link(tmp_path):
    db = tmp_path / "m.db"
    store_suite(db)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    p = report(db, link)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip() == (f"memkit: error: will not write the report into {link}: it is a symbolic link to "
                                f"{tmp_path / 'nowhere'}, which does not exist; the report goes into a new "
                                f"directory or an existing one")
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "file").write_text("mine")
    p = report(db, tmp_path / "file")
    assert p.stderr.strip() == (f"memkit: error: will not write the report into {tmp_path / 'file'}: it is a file, "
                                f"not a directory; the report goes into a new directory or an existing one")
    # a link to a directory is followed: the user's way of putting reports elsewhere
    (tmp_path / "there").mkdir()
    (tmp_path / "to-there").symlink_to(tmp_path / "there")
    assert report(db, tmp_path / "to-there").returncode == 0
    assert (tmp_path / "there" / "index.html").exists()
