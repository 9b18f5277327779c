# SPDX-License-Identifier: Apache-2.0
"""The Python package's layout (docs/architecture.md): a folder per product,
each saying in its __init__.py what it is; at the top only the command line
and what every part shares; the packages on floors, each importing only the
floors below its own, with no cycle; and a command is the top of its own
stack, never imported by another module, so what two commands share lives in
a product's folder and is called with plain arguments."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "python" / "memkit"
COMMANDS = PACKAGE / "commands"
# The command line (cli, __main__, docs: its man page and completions) and
# what every part shares (errors, terminal).
TOP = {"__init__.py", "__main__.py", "cli.py", "docs.py", "errors.py", "terminal.py"}

# The floors of python/memkit, top down: the one place the layer order is
# written (docs/architecture.md draws it).  A module imports its own package
# and the floors below its own; packages sharing a floor import neither the
# other (the command line's modules are one room).
FLOORS = (
    ("memkit.__main__", "memkit.cli", "memkit.docs"),   # the command line
    ("memkit.commands",),
    ("memkit.report",),
    ("memkit.orchestration", "memkit.comparison"),   # a suite run; runs compared
    ("memkit.tuning",),
    ("memkit.programs",),
    ("memkit.judging",),
    ("memkit.lab", "memkit.store"),
    ("memkit.terminal",),
    ("memkit.results",),   # the records and results both lab and store speak
    ("memkit.errors",),
    ("memkit",),   # __init__.py: the version
)


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


def import_graph() -> dict[str, set[str]]:
    """Each module of memkit and the modules of memkit it imports."""
    sources = {module_name(p): p for p in python_files()}
    return {name: {m for m in imported(path.read_text(), name, path.name == "__init__.py")
                   if m in sources and m != name}
            for name, path in sources.items()}


def floor(module: str) -> tuple[int, str]:
    """(floor number from the top, the unit of FLOORS holding module)."""
    for number, units in enumerate(FLOORS):
        for unit in sorted(units, key=len, reverse=True):
            if module == unit or (unit != "memkit" and module.startswith(unit + ".")):
                return number, unit
    if module == "memkit":
        return len(FLOORS) - 1, "memkit"
    raise LookupError(module)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module on a floor above the importer's, or of
    another package on its own floor."""
    out = []
    for name, targets in sorted(graph.items()):
        here, unit = floor(name)
        for t in sorted(targets):
            there, other = floor(t)
            across = there == here and other != unit and here != 0
            if there < here or across:
                out.append(f"{name} imports {t}")
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other, each loop as one sorted list
    (Tarjan's strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


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
    assert {"memkit.commands.run", "memkit.commands.record", "memkit.commands.try_"} <= commands
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


def test_the_floor_check_sees_an_import_upward_across_a_floor_and_a_loop():
    assert upward_imports({"memkit.store.db": {"memkit.lab.experiments"}}) == \
        ["memkit.store.db imports memkit.lab.experiments"]
    assert upward_imports({"memkit.lab.suite": {"memkit.tuning.tune"}}) == \
        ["memkit.lab.suite imports memkit.tuning.tune"]
    assert upward_imports({"memkit.orchestration.suite": {"memkit.store.db", "memkit.lab.experiments",
                                                          "memkit.orchestration"}}) == []
    assert cycles({"memkit.lab.a": {"memkit.lab.b"}, "memkit.lab.b": {"memkit.lab.c"},
                   "memkit.lab.c": {"memkit.lab.a"}, "memkit.lab.d": {"memkit.lab.a"}}) == \
        [["memkit.lab.a", "memkit.lab.b", "memkit.lab.c"]]


def test_every_package_stands_on_a_floor():
    unplaced = []
    for name in import_graph():
        try:
            floor(name)
        except LookupError:
            unplaced.append(name)
    assert unplaced == [], f"{unplaced}: give each package its floor in FLOORS (tests/python/test_layout.py)"


def test_no_import_runs_up_a_floor_or_across_one():
    assert upward_imports(import_graph()) == [], (
        "a module imports only the floors below its own (FLOORS): move what both need down, "
        "or the one that drives the others up")


def test_no_modules_import_each_other():
    assert cycles(import_graph()) == []


def test_the_architecture_page_draws_the_floors_in_their_order():
    """docs/architecture.md's picture names each folder (and top-level
    module) of python/memkit top down as FLOORS orders them."""
    page = (REPO / "docs" / "architecture.md").read_text()
    picture = page[page.index(" python/memkit/ "):page.index(" bench/experiments/ ")]
    drawn = []
    for line in picture.splitlines()[1:]:
        for word in line.split("|", 1)[-1].split():
            if not (word.endswith("/") or word.endswith(".py")):
                break
            drawn.append("memkit." + word.removesuffix("/").removesuffix(".py"))
    floors = [floor(name)[0] for name in drawn]
    assert floors == sorted(floors), f"the picture's order {drawn} is not FLOORS'"
    placed = {unit for units in FLOORS for unit in units} - {"memkit", "memkit.__main__"}
    assert set(drawn) == placed, f"drawn {sorted(set(drawn))}, on a floor {sorted(placed)}"
