# SPDX-License-Identifier: Apache-2.0
"""The `memkit` command line: subcommands from memkit.commands, errors as
one line and a non-zero exit status."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sqlite3
import sys

from memkit import __version__
from memkit.commands import all_commands
from memkit.errors import MemkitError
from memkit.terminal import printable


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that names the command's
    --help, and a command's options may follow its other arguments
    (`memkit run memset-sizes --quick -- reps=3`): argparse's intermixed
    parsing, wherever the command's arguments allow it (not where they end
    in a program's own arguments, as `record`'s do)."""

    _intermixing = False

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")
        sys.exit(2)

    def _intermixable(self) -> bool:
        return not any(isinstance(a, argparse._SubParsersAction) or
                       a.nargs in (argparse.REMAINDER, argparse.PARSER) for a in self._actions)

    def parse_known_args(self, args=None, namespace=None):
        if self._intermixing or not self._intermixable():
            return super().parse_known_args(args, namespace)
        self._intermixing = True   # the intermixed parse calls parse_known_args itself
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


class VersionAction(argparse.Action):
    """--version: the lab's version and the loaded library's, asked at run time."""

    def __call__(self, parser, namespace, values, option_string=None):
        from memkit.lab.experiments import library_version
        print(f"memkit {__version__}\nlibrary {library_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="memkit", description="The memkit lab: which memory fill/copy method is fastest "
               "on this machine, for these sizes, and did that change since the last run?")
    p.add_argument("--version", action=VersionAction, nargs=0,
                   help="print the lab's version and the library's (its commit too), then exit")
    # The command line itself, for the command that describes it (completion).
    p.set_defaults(command_line=p)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    p.command_parsers = {}
    for mod in all_commands():
        # A command with a DESCRIPTION (paragraphs, examples) keeps its layout.
        sp = sub.add_parser(mod.NAME, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                            formatter_class=argparse.RawDescriptionHelpFormatter if hasattr(mod, "DESCRIPTION")
                            else argparse.HelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.main)
        p.command_parsers[mod.NAME] = sp
    return p


class OutputError(Exception):
    """Standard output cannot be written (a full disk, a closed pipe)."""

    def __init__(self, cause: OSError):
        super().__init__(cause.strerror or str(cause))
        self.errno = cause.errno


class GuardedOutput:
    """Standard output whose write errors are told apart from any other
    OSError a command meets (a file it cannot open): every command writes
    through it, so a full disk or a closed pipe is handled once, here."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        if self._stream is None:   # started with standard output closed (>&-)
            raise OutputError(OSError(errno.EBADF, "standard output is closed"))
        try:
            return self._stream.write(text)
        except OSError as e:
            raise OutputError(e) from None

    def flush(self):
        if self._stream is None:   # nothing was written
            return
        try:
            self._stream.flush()
        except OSError as e:
            raise OutputError(e) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _silence_stdout():
    """Output that cannot be written is dropped: the interpreter's last flush
    at exit must not fail again (and print a traceback-like warning)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv=None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:   # named after the command they were given to
        parser.command_parsers.get(getattr(args, "command", None), parser).error(
            "unrecognized arguments: " + " ".join(unknown))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    stdout = sys.stdout
    sys.stdout = GuardedOutput(stdout)
    try:
        rc = args.func(args) or 0
        sys.stdout.flush()   # buffered output fails here, not at exit
        return rc
    except OutputError as e:
        _silence_stdout()
        if e.errno != errno.EPIPE:   # a reader that stopped reading wants no message
            print(f"memkit: cannot write: {e}", file=sys.stderr)
        return 1
    except MemkitError as e:
        print(f"memkit: error: {printable(e)}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt as e:
        # `memkit run` says what it kept; elsewhere nothing was written
        kept = str(e) or "nothing of this run was stored, earlier runs are intact"
        print(f"\nmemkit: interrupted; {kept}", file=sys.stderr)
        return getattr(e, "exit_status", 128 + signal.SIGINT)
    except sqlite3.Error as e:
        print(f"memkit: error: database: {printable(e)}", file=sys.stderr)
        return 1
    except Exception as e:  # never a traceback for the user; MEMKIT_DEBUG=1 shows it
        if os.environ.get("MEMKIT_DEBUG"):
            raise
        print(f"memkit: internal error: {type(e).__name__}: {printable(e)} (MEMKIT_DEBUG=1 shows where)",
              file=sys.stderr)
        return 70
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
