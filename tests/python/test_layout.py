# SPDX-License-Identifier: Apache-2.0
"""The Python package's layout (docs/architecture.md): a folder per product,
each saying in its __init__.py what it is; at the top only the command line
and what every part shares; and a command is the top of its own stack, never
imported by another module, so what two commands share lives in a product's
folder and is called with plain arguments."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "python" / "memkit"
COMMANDS = PACKAGE / "commands"
# The command line (cli, __main__, docs: its man page and completions) and
# what every part shares (errors, terminal).
TOP = {"__init__.py", "__main__.py", "cli.py", "docs.py", "errors.py", "terminal.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def command_modules() -> set[str]:
    """memkit.commands.<name> for every command (a module not starting with _)."""
    return {f"memkit.commands.{p.stem}" for p in COMMANDS.glob("*.py") if not p.name.startswith("_")}


def imported(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module `source` (the text of `module`) may import: `import a.b`,
    `from a import b` (a and a.b: b may be a module), relative imports, and
    importlib.import_module("a.b") with a constant name."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) ==
              "import_module" and node.args and isinstance(node.args[0], ast.Constant)):
            found.add(node.args[0].value)
    return found


def python_files():
    return sorted(p for p in PACKAGE.rglob("*.py") if "_native" not in p.parts)


def test_the_check_sees_every_way_of_importing_a_command():
    commands = {"memkit.commands.run"}
    for source in ("from memkit.commands import run as run_command", "import memkit.commands.run",
                   "from memkit.commands.run import split_arguments", "from . import run",
                   "from .run import split_arguments", "importlib.import_module('memkit.commands.run')"):
        assert imported(source, "memkit.commands.record") & commands, source
    assert not imported("from memkit.commands._common import db_path", "memkit.commands.record") & commands
    assert not imported("from memkit.lab import suite", "memkit.commands.record") & commands


def test_no_module_imports_a_command():
    """A command module imports no other command, and nothing else imports
    a command either (cli.py finds them by listing memkit.commands)."""
    commands = command_modules()
    assert {"memkit.commands.run", "memkit.commands.record", "memkit.commands.try_program"} <= commands
    offenders = []
    for path in python_files():
        name = module_name(path)
        for m in sorted(imported(path.read_text(), name, path.name == "__init__.py") & (commands - {name})):
            offenders.append(f"{path.relative_to(REPO)} imports {m}")
    assert offenders == [], ("move what they share into a module outside memkit/commands "
                             "(e.g. memkit.orchestration.suite, which run and record both call)")


def test_every_folder_says_what_it_is():
    folders = [d for d in PACKAGE.iterdir() if d.is_dir() and d.name not in ("__pycache__", "_native")]
    assert {"commands", "lab", "store", "judging", "report", "programs", "tuning"} <= {d.name for d in folders}
    for d in folders:
        init = d / "__init__.py"
        assert init.is_file(), f"{d.name}/ has no __init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and doc.strip(), f"{d.name}/__init__.py has no docstring saying what {d.name}/ is"


def test_the_top_holds_only_the_command_line_and_what_all_share():
    extra = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in TOP)
    assert extra == [], f"{extra}: put each in the folder of the product it belongs to (docs/architecture.md)"
