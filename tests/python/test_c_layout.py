# SPDX-License-Identifier: Apache-2.0
"""The C tree's layers (docs/architecture.md): the experiments on the lab's
core, the core on the library, the library on its public header, each
including only its own floor and those below; the library's private headers
reached from above only through its documented seams; a part an experiment
keeps in a folder of its own (ipc_ring/, tune/) included by that experiment
alone; the lab's private header by the lab's core alone; and the library
calling nothing of the lab."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

# Top down: the one place the C layer order is written.
C_FLOORS = (
    "bench/experiments",   # one experiment a file, and a folder for a part only it uses
    "bench/lab",           # the lab's core
    "src",                 # the library
    "include",             # its public header
)
# Where a quoted include is looked for, after the including file's folder:
# the include directories the build gives.
SEARCH = ("include", "src", "bench/lab", "bench/experiments/ipc_ring")
# The library's private headers a floor above may include, and why.
SEAMS = {
    "src/internal.h": "the library's decisions and tables (architecture.md, 'Decisions, each made once')",
    "src/text.h": "the size grammar every MEMKIT_TUNABLES reader takes",
    "src/copy/copiers.h": "the lab's copy contestants keep the library's copier contract",
    "src/copy/copiers_avx2.h": "the same, for the AVX2 contestants",
    "src/diagnostics/workloads.def": "tune's workloads, declared beside the program that names their paths",
}
# A folder of one experiment's own parts, and the files that may include them.
OWN_PARTS = {
    "bench/experiments/ipc_ring": ("bench/experiments/exp_ipc_copy.c", "bench/experiments/ipc_ring/"),
    "bench/experiments/tune": ("bench/experiments/tune/",),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def c_files() -> list[Path]:
    return sorted(p for floor in C_FLOORS for p in (REPO / floor).rglob("*")
                  if p.suffix in (".c", ".h", ".def") and p.is_file())


def resolve(including: Path, name: str) -> Path | None:
    for folder in (including.parent, *(REPO / s for s in SEARCH)):
        if (folder / name).is_file():
            return (folder / name).resolve()
    return None


def rel(p: Path) -> str:
    return str(p.relative_to(REPO))


def floor_of(path: str) -> int:
    for number, floor in enumerate(C_FLOORS):
        if path.startswith(floor + "/"):
            return number
    raise LookupError(path)


def includes() -> list[tuple[str, str]]:
    """(including file, included file) for every quoted include of the tree
    that names a file of the tree."""
    found = []
    for f in c_files():
        for name in INCLUDE.findall(f.read_text()):
            target = resolve(f, name)
            if target is not None and REPO in target.parents:
                found.append((rel(f), rel(target)))
    return found


def broken_rules(edges: list[tuple[str, str]]) -> list[str]:
    out = []
    for src, dst in edges:
        here, there = floor_of(src), floor_of(dst)
        if there < here:
            out.append(f"{src} includes {dst}: a floor above its own")
        if dst.startswith("src/") and not src.startswith("src/") and dst not in SEAMS:
            out.append(f"{src} includes {dst}: the library's private header, not one of its seams")
        if dst == "bench/lab/lab_internal.h" and not src.startswith("bench/lab/"):
            out.append(f"{src} includes {dst}: the lab core's private header")
        for folder, allowed in OWN_PARTS.items():
            if dst.startswith(folder + "/") and not any(src.startswith(a) for a in allowed):
                out.append(f"{src} includes {dst}: a part of another experiment's own")
        if src.startswith("bench/experiments/exp_") and dst.startswith("bench/experiments/exp_"):
            out.append(f"{src} includes {dst}: another experiment")
    return out


def test_every_include_is_found_in_the_tree_or_the_system():
    """The check sees the includes (a header it cannot place would escape it)."""
    edges = includes()
    assert len(edges) > 100
    assert ("bench/experiments/exp_copy_sweep.c", "bench/lab/sweep.h") in edges
    assert ("bench/lab/sweep.c", "include/memkit.h") in edges


def test_no_include_runs_up_a_floor_or_past_a_seam():
    broken = broken_rules(includes())
    assert not broken, "the C layers (C_FLOORS in tests/python/test_c_layout.py):\n" + "\n".join(broken)


def test_the_check_sees_each_kind_of_wrong_include():
    wrong = [("src/dispatch.c", "bench/lab/lab.h"),
             ("bench/experiments/exp_faults.c", "src/parallel/pool_internal.h"),
             ("bench/experiments/exp_zeroing.c", "bench/lab/lab_internal.h"),
             ("bench/experiments/exp_copy_sweep.c", "bench/experiments/ipc_ring/ipc_ring.h"),
             ("include/memkit.h", "src/internal.h")]
    assert len(broken_rules(wrong)) == len(wrong)
    assert broken_rules([("bench/lab/fingerprint.c", "src/internal.h")]) == []


def test_the_library_calls_nothing_of_the_lab():
    """Below the includes, the calls: the shared library needs no symbol of
    the lab's core (lab_*) nor of an experiment."""
    built = sorted((REPO / "build").glob("libmemkit.so.*"))
    if not built:
        pytest.skip("the library is not built: run `make`")
    nm = subprocess.run(["nm", "-D", "--undefined-only", str(built[0])], capture_output=True, text=True,
                        check=True).stdout
    undefined = [line.split()[-1] for line in nm.splitlines() if line.strip()]
    assert undefined, "nm listed nothing: the check would pass on anything"
    assert not [s for s in undefined if s.startswith(("lab_", "exp_"))]
