# SPDX-License-Identifier: Apache-2.0
"""`pip install .` from the checkout, as a new user does it: the installed
`memkit` runs from any directory with no build tree around, and the
library, experiments, man page and completions come with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


def sh(*args, cwd="/", env=None, timeout=600):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=timeout)
    assert p.returncode == 0, f"{args} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    return p.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if shutil.which("cmake") is None:
        pytest.fail("cmake is needed to build the package (make test installs it)")
    root = tmp_path_factory.mktemp("pip")
    venv = root / "v"
    sh(sys.executable, "-m", "venv", venv)
    # Nothing of the developer's environment may leak in: no MEMKIT_BUILD,
    # no PYTHONPATH to the checkout.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMKIT_") and k != "PYTHONPATH"}
    sh(venv / "bin" / "pip", "install", "-q", REPO, env=env)
    return venv, env, root


def test_installed_memkit_runs_from_anywhere(installed):
    venv, env, root = installed
    memkit = venv / "bin" / "memkit"
    version = sh(memkit, "--version", env=env)
    assert version.startswith("memkit 0.2.0\n")
    assert "library 0.2.0 (commit " in version, version   # mk_version() of the installed .so
    assert "memset-sizes" in sh(memkit, "list", env=env)
    db = root / "x.db"
    out = sh(memkit, "run", "--quick", "--db", db, "memset-sizes", env=env)
    assert "memset-sizes: ok" in out
    # The experiments run from the package, not from a build tree.
    fp = sh(memkit, "env", "--json", env=env)
    assert '"memkit_version": "0.2.0"' in fp
    assert "a power of two from 1 to 4K" in sh(memkit, "env", "--tunables", env=env)


def test_installed_package_has_its_native_parts(installed):
    venv, env, _ = installed
    site = Path(sh(venv / "bin" / "python", "-c", "import memkit, os; print(os.path.dirname(memkit.__file__))",
                   env=env).strip())
    native = site / "_native"
    for rel in ("lib/libmemkit.so", "lib/libmemkit.a", "lib/libmemkit_preload.so", "include/memkit.h",
                "include/memkit_tunables.def", "libexec/memkit/memkit-tunables",
                "libexec/memkit/memkit-tune-experiment",
                "libexec/memkit/memkit-exp-size-distributions",
                "share/memkit/fleet-size-distributions/Memcpy_Fleet.csv",
                "share/memkit/apps/workloads.sh"):
        assert (native / rel).exists(), rel
    # size-distributions finds its data beside itself, with no source tree.
    out = sh(native / "libexec/memkit/memkit-exp-size-distributions", "--quick", "only=Memset_Fleet",
             env=env, cwd="/")
    assert "Memset_Fleet" in out
    for rel in ("share/man/man1/memkit.1", "share/bash-completion/completions/memkit",
                "share/zsh/site-functions/_memkit"):
        assert (venv / rel).exists(), rel


def test_completion_and_man_page_follow_the_parser(installed):
    venv, env, _ = installed
    bash = sh(venv / "bin" / "memkit", "completion", "bash", env=env)
    zsh = sh(venv / "bin" / "memkit", "completion", "zsh", env=env)
    man = (venv / "share/man/man1/memkit.1").read_text()
    from memkit.commands import all_commands
    for mod in all_commands():       # every command, as the parser has it
        assert mod.NAME in bash and mod.NAME in zsh and mod.NAME in man, mod.NAME
    assert zsh.startswith("#compdef memkit")
    assert man.startswith(".TH MEMKIT")


def test_installed_memkit_stores_in_the_users_data_directory(installed):
    # Run from / (issue #25: it made /results/memkit.db): the user's data
    # directory, and the report beside it.
    venv, env, root = installed
    data = root / "data"
    env = dict(env, XDG_DATA_HOME=str(data))
    memkit = venv / "bin" / "memkit"
    out = sh(memkit, "run", "--quick", "memset-sizes", "--", "max=64", "reps=2", "processes=1", env=env)
    assert f"stored in {data / 'memkit' / 'memkit.db'}" in out
    assert "report: " + str(data / "memkit" / "report" / "index.html") in sh(memkit, "report", env=env)


def test_one_version_everywhere():
    """The version is written in four files (the build, the header, the
    Python package and its metadata); they must say the same."""
    import re
    import memkit
    found = {
        "CMakeLists.txt": re.search(r"project\(memkit VERSION (\S+)", (REPO / "CMakeLists.txt").read_text())[1],
        "include/memkit.h": re.search(r'#define MEMKIT_VERSION "([^"]+)"', (REPO / "include/memkit.h").read_text())[1],
        "pyproject.toml": re.search(r'(?m)^version = "([^"]+)"', (REPO / "pyproject.toml").read_text())[1],
        "python/memkit/__init__.py": memkit.__version__,
    }
    assert len(set(found.values())) == 1, found
