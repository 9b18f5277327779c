# SPDX-License-Identifier: Apache-2.0
"""`memkit env --paths`: where the preload library and the rest are, for a
build tree and for an install prefix (what `pip install .` and `make
install` leave), so nobody has to look inside site-packages."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import real_bench_dir, run_cli


def test_paths_of_the_build_tree():
    bench = real_bench_dir()
    p = run_cli("env", "--paths", "--json", "--build", bench)
    assert p.returncode == 0, p.stderr
    paths = json.loads(p.stdout)
    preload = Path(paths["preload"])
    assert preload.name == "libmemkit_preload.so" and preload.is_file()
    assert b"memkit_preload_active" in preload.read_bytes()
    assert Path(paths["library"]).name.startswith("libmemkit.so") and Path(paths["library"]).is_file()
    assert (Path(paths["include"]) / "memkit.h").is_file()
    assert Path(paths["experiments"]) == bench.resolve()
    # A build tree's memkit.pc and CMake package are written for the prefix: not offered.
    assert paths["pkgconfig"] is None and paths["cmake"] is None

    one = run_cli("env", "--paths", "preload", "--build", bench)
    assert one.returncode == 0 and one.stdout == f"{preload}\n"   # one line, for LD_PRELOAD=$(...)
    missing = run_cli("env", "--paths", "cmake", "--build", bench)
    assert missing.returncode == 1 and "make install" in missing.stderr and not missing.stdout


def test_paths_of_an_install_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    exp = prefix / "libexec/memkit/memkit-exp-memset-sizes"
    files = ["lib/libmemkit_preload.so", "lib/libmemkit.so", "lib/libmemkit.a", "include/memkit.h",
             "lib/pkgconfig/memkit.pc", "lib/cmake/memkit/memkitConfig.cmake"]
    for f in files + [str(exp.relative_to(prefix))]:
        (prefix / f).parent.mkdir(parents=True, exist_ok=True)
        (prefix / f).write_text("")
    os.chmod(exp, 0o755)
    p = run_cli("env", "--paths", "--build", prefix)
    assert p.returncode == 0, p.stderr
    lines = dict(line.split(None, 1) for line in p.stdout.splitlines())
    want = {"preload": "lib/libmemkit_preload.so", "library": "lib/libmemkit.so", "static": "lib/libmemkit.a",
            "include": "include", "pkgconfig": "lib/pkgconfig", "cmake": "lib/cmake/memkit",
            "experiments": "libexec/memkit"}
    assert lines == {k: str(prefix.resolve() / v) for k, v in want.items()}

    (prefix / "lib/libmemkit_preload.so").unlink()
    p = run_cli("env", "--paths", "--build", prefix)
    assert "preload      not found" in p.stdout
    p = run_cli("env", "--paths", "preload", "--build", prefix)
    assert p.returncode == 1 and "no preload path" in p.stderr
