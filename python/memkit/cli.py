"""The `memkit` command line: subcommands from memkit.commands, errors as
one line and a non-zero exit status."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys

from memkit import __version__
from memkit.commands import all_commands
from memkit.errors import MemkitError


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(2)


class VersionAction(argparse.Action):
    """--version: the lab's version and the loaded library's, asked at run time."""

    def __call__(self, parser, namespace, values, option_string=None):
        from memkit.lab import library_version
        print(f"memkit {__version__}\nlibrary {library_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="memkit", description="The memkit lab: which memory fill/copy method is fastest "
               "on this machine, for these sizes, and did that change since the last run?")
    p.add_argument("--version", action=VersionAction, nargs=0,
                   help="print the lab's version and the library's (its commit too), then exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for mod in all_commands():
        # A command with a DESCRIPTION (paragraphs, examples) keeps its layout.
        sp = sub.add_parser(mod.NAME, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                            formatter_class=argparse.RawDescriptionHelpFormatter if hasattr(mod, "DESCRIPTION")
                            else argparse.HelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.main)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except MemkitError as e:
        print(f"memkit: error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("\nmemkit: interrupted; nothing of this run was stored, earlier runs are intact",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except sqlite3.Error as e:
        print(f"memkit: error: database: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # never a traceback for the user; MEMKIT_DEBUG=1 shows it
        if os.environ.get("MEMKIT_DEBUG"):
            raise
        print(f"memkit: internal error: {type(e).__name__}: {e} (MEMKIT_DEBUG=1 shows where)",
              file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
