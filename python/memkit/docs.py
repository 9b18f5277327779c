# SPDX-License-Identifier: Apache-2.0
"""The man page and the shell completions, generated from the command line's
own parser, so they never disagree with `memkit --help`.

    python -m memkit.docs --out DIR   writes DIR/memkit.1, DIR/memkit.bash, DIR/_memkit
    python -m memkit.docs --exit-statuses   prints the exit statuses as docs/lab.md's table

`make install` and the Python package's build install what this writes;
`memkit completion bash|zsh` prints a completion script directly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

def completion(shell: str) -> str:
    import shtab

    from memkit.cli import build_parser
    return shtab.complete(build_parser(), shell=shell)


def _items(pairs) -> str:
    """roff: a tagged paragraph per (term, text)."""
    return "\n".join(f".TP\n.B {term}\n{_roff(text)}" for term, text in pairs)


def _roff(text: str) -> str:
    # A line starting with . or ' would be a roff request; \ an escape.
    text = text.replace("\\", "\\e")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.splitlines())


def _environment() -> str:
    """The environment variables memkit reads."""
    return _items([
        ("MEMKIT_DB", "The results database when --db is not given: an SQLite file or "
                      "postgresql://USER@HOST:PORT/DB."),
        ("MEMKIT_HOST", "The host name runs are stored under when --host is not given (default: the "
                        "machine's name). Control characters and blanks at its ends are refused."),
        ("MEMKIT_TUNABLES", "name=value:name=value settings of the library (thresholds, a forced "
                            "variant), read once at load time by every program using it, the experiments "
                            "included; recorded in each run's fingerprint."),
        ("MEMKIT_PROFILE", "The tuned profile the library reads (written by memkit tune); none disables "
                           "it."),
        ("MEMKIT_RECORD", "Set by memkit record for the program it runs: the directory the preload "
                          "library writes its count files into."),
        ("MEMKIT_BUILD", "A build directory holding the experiments (bench/memkit-exp-*) when --build "
                         "is not given."),
        ("MEMKIT_DATA", "The directory of distribution files size-distributions replays (default: the "
                        "shipped ones)."),
        ("MEMKIT_PRELOAD", "The preload library memkit record uses when --preload is not given."),
        ("MEMKIT_MACHINE", "A folder memkit env --record wrote: every command reads that machine (its "
                           "fingerprint, glibc's thresholds, its row) instead of this one, to reproduce what "
                           "memkit said there; what is timed still runs here."),
        ("MEMKIT_DEBUG", "1: an internal error shows its traceback."),
        ("XDG_DATA_HOME", "Outside a memkit checkout the default database is "
                          "$XDG_DATA_HOME/memkit/memkit.db (~/.local/share/memkit when unset)."),
    ])


def _files() -> str:
    """Where memkit keeps and writes its files."""
    from memkit.store import db
    return _items([
        (f"{db.RESULTS_IN_CHECKOUT}/{db.DB_FILE}", "The results database when memkit runs inside a memkit "
                                                  "checkout (from any folder of it)."),
        (f"~/.local/share/memkit/{db.DB_FILE}", "The results database anywhere else."),
        ("results/report/, ~/.local/share/memkit/report/", "The default report directory, beside the "
                                                           "database."),
        ("DIR/.memkit-files", "What memkit report wrote into DIR: a new report replaces only those files, "
                              "and a non-empty DIR without this list is refused."),
        ("DIR/Memset.csv, Memcpy.csv, Memmove.csv, summary.json", "A recording (memkit record -o DIR); "
                                                                  "DIR/.parts-*: one interrupted, for "
                                                                  "memkit record --recover DIR."),
    ])


def exit_statuses() -> list[tuple[str, str]]:
    """What memkit's exit statuses mean: one rule for every command (a
    usage error 2, input refused or a check failed 1, a program's own
    status where memkit runs it), held by tests/python/test_exit_status.py."""
    from memkit.errors import MemkitError, UsageError
    from memkit.programs.whole_program import OUTPUTS_DIFFER, ProgramNotStarted
    return [
        ("0", "Success; a check asked for passed (compare --fail-on-regression, tune --check). memkit "
              "record: the program's own exit status, whatever it is (or it dies of the program's signal)."),
        (str(MemkitError.exit_status), "Input refused or a check failed, said in one line: a missing, locked, "
              "newer or corrupt database, a file or directory memkit will not read or write, a preload that "
              "is not a shared library, a profile libmemkit would not load, GLIBC_TUNABLES already set, a "
              "spill file holding no results; an experiment that failed (the run keeps the others); a finished "
              "run the database would not take (kept in a spill file that memkit import stores); output that "
              "cannot be written; compare --fail-on-regression: a regression, or no measurement in both runs; "
              "tune --check: the profile hurt."),
        (str(UsageError.exit_status), "A usage error, said in one line and checked before anything runs "
              "(nothing is measured or stored): an unknown option or experiment, a missing or extra argument, "
              "options that do not go together, a value out of its range (--runs 0, --budget nan, --rounds 1, "
              "--min-size 0, a GLIBC_TUNABLES setting glibc cannot hold), an argument an experiment refuses."),
        (str(OUTPUTS_DIFFER), "A check's third answer, neither passed nor failed: memkit try: a run's "
              "output or exit status differed from the first run's (the timing is still reported and stored); "
              "compare --fail-on-regression: nothing worse, but some measurements could not be judged."),
        ("70", "An internal error (MEMKIT_DEBUG=1 shows where)."),
        (str(ProgramNotStarted.NOT_EXECUTABLE), "memkit try and record: the program cannot be executed "
                                                "(not executable, not a program), as a shell says."),
        (str(ProgramNotStarted.NOT_FOUND), "memkit try and record: there is no such program, as a shell says."),
        ("130", "Interrupted (Ctrl-C): nothing of that run is stored (memkit run keeps the experiments that "
                "finished; 143 when it is stopped by SIGTERM)."),
    ]


def _exit_status() -> str:
    return _items(exit_statuses())


def exit_status_markdown() -> str:
    """The same table for docs/lab.md."""
    rows = [f"| {status} | {text} |" for status, text in exit_statuses()]
    return "\n".join(["| status | meaning |", "|---|---|", *rows]) + "\n"


def _examples() -> str:
    """A few commands, each with what it does."""
    return _items([
        ("memkit run --quick", "The whole suite on its reduced grid: a smoke test."),
        ("memkit run memset-sizes --quick -- reps=3", "One experiment with one of its arguments "
                                                      "(memkit-exp-memset-sizes --help lists them)."),
        ("memkit compare", "The last two runs that share measurements: changes beyond the noise, and what "
         "changed on the machine."),
        ("memkit report --out /tmp/report", "The last run as HTML with plots."),
        ("memkit export 3 --format json > run3.json", "Run 3's measurements for other tools."),
        ("memkit record -o rec -- git gc", "A program's own call sizes; then MEMKIT_DATA=rec memkit run "
                                           "size-distributions replays them."),
        ("memkit system-check", "What makes timings noisy on this machine."),
    ])


def sections() -> dict:
    """The man page's sections beyond the options, which argparse cannot
    say: the environment, the files, the exit statuses, examples."""
    return {"ENVIRONMENT": _environment(), "FILES": _files(), "EXIT STATUS": _exit_status(),
            "EXAMPLES": _examples()}


def manpage() -> str:
    from build_manpages.manpage import Manpage

    from memkit.cli import build_parser
    parser = build_parser()
    # argparse-manpage takes the page's summary line from the description.
    from memkit import __version__
    page = Manpage(parser, _data={
        "project_name": "memkit", "version": __version__, "manual_title": "memkit manual",
        "description": "which memory fill/copy method is fastest on this machine"})
    for heading, content in sections().items():
        page.add_section(heading, "=", content)
    return str(page)


def write_all(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {out / "memkit.1": manpage(), out / "memkit.bash": completion("bash"),
             out / "_memkit": completion("zsh")}
    for path, text in files.items():
        path.write_text(text)
    return list(files)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m memkit.docs", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="directory to write into")
    p.add_argument("--exit-statuses", action="store_true", help="print the exit statuses as docs/lab.md's table")
    args = p.parse_args(argv)
    if args.exit_statuses:
        print(exit_status_markdown(), end="")
        return 0
    if not args.out:
        p.error("--out DIR, or --exit-statuses")
    for path in write_all(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
