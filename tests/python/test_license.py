# SPDX-License-Identifier: Apache-2.0
"""memkit is Apache-2.0: the licence text at the root, the packaging
metadata saying so, and every source file carrying its SPDX line, so a file
copied out of the tree still says under which terms it came."""

from __future__ import annotations

import os
import re
from pathlib import Path

from conftest import REPO

SPDX = "SPDX-License-Identifier: Apache-2.0"
# What counts as source: C, headers, X-macro tables, the linker map,
# Python, shell, CMake and make files, the configured templates.
SUFFIXES = (".c", ".h", ".def", ".map", ".py", ".sh", ".cmake", ".cmake.in", ".pc.in", ".toml")
NAMES = ("CMakeLists.txt", "Makefile")
# Not the project's sources: build trees, the virtual environment, results.
SKIP_DIRS = {".git", ".venv", "results", "__pycache__", "_native", "node_modules"}


def is_source(path: Path) -> bool:
    return path.name in NAMES or path.name.endswith(SUFFIXES)


def source_files(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not d.startswith("build") and not d.endswith(".egg-info")]
        found += [Path(dirpath) / f for f in filenames if is_source(Path(f))]
    return sorted(found)


def lacks_spdx(path: Path) -> bool:
    """The identifier is the first line, or the second after a shebang."""
    lines = path.read_text(errors="replace").splitlines()[:2]
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    return not (lines and SPDX in lines[0])


def test_every_source_file_names_its_licence():
    files = source_files(REPO)
    assert len(files) > 100, f"found only {len(files)} source files under {REPO}"
    missing = [str(f.relative_to(REPO)) for f in files if lacks_spdx(f)]
    assert not missing, f"no `{SPDX}` line at the top of: " + ", ".join(missing)


def test_the_check_finds_a_file_without_its_line(tmp_path):
    (tmp_path / "src").mkdir()
    good, bad, late = tmp_path / "src/a.c", tmp_path / "src/b.h", tmp_path / "run.sh"
    good.write_text(f"/* {SPDX} */\nint a;\n")
    bad.write_text("/* no licence */\nint b;\n")
    late.write_text(f"#!/bin/sh\necho hi\n# {SPDX}\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build/generated.c").write_text("int c;\n")   # a build tree is not the project's source
    (tmp_path / "notes.txt").write_text("not source\n")
    assert source_files(tmp_path) == [late, good, bad]
    assert [f for f in source_files(tmp_path) if lacks_spdx(f)] == [late, bad]


def test_licence_text_and_metadata_say_apache_2():
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'(?m)^license = "Apache-2\.0"$', pyproject)
    files = re.search(r"(?m)^license-files = \[(.*)\]$", pyproject)
    assert files and '"LICENSE"' in files[1]
