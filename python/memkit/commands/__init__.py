# SPDX-License-Identifier: Apache-2.0
"""The subcommands.  Each module here is one `memkit` command and defines

    NAME = "run"                   # the command's name
    HELP = "one line for --help"
    def add_arguments(parser): ... # its options (argparse)
    def main(args) -> int: ...     # runs it; raise MemkitError for a user error

The command line finds them by listing this package, so adding a command
(e.g. `memkit tune`) is adding one module.
"""

from __future__ import annotations

import importlib
import pkgutil


def all_commands() -> list:
    mods = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "main"):
            mods.append(mod)
    order = ["list", "env", "run", "compare", "report", "fleet"]
    return sorted(mods, key=lambda m: (order.index(m.NAME) if m.NAME in order else len(order), m.NAME))
