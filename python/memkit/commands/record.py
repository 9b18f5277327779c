"""memkit record: run a program under the preload library with recording on
and write its memset/memcpy/memmove size distributions.

    memkit record [-o DIR] -- PROGRAM [ARGS...]

The program's standard input, output and error are its own, and its exit
status (or the signal that killed it) becomes memkit's.  Processes it forks
or execs record too; all their counts are summed when it ends."""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from memkit import lab, recording
from memkit.commands._common import add_build_option
from memkit.errors import MemkitError

NAME = "record"
HELP = "run a program under the preload library and record its memset/memcpy/memmove sizes"

PRELOAD_NAME = "libmemkit_preload.so"


def add_arguments(p):
    p.add_argument("-o", "--output", metavar="DIR",
                   help="where the recording goes (default: a new directory PROGRAM-DATE-TIME here)")
    p.add_argument("--preload", metavar="SO",
                   help=f"the preload library (default: $MEMKIT_PRELOAD, else {PRELOAD_NAME} of the build)")
    p.add_argument("-q", "--quiet", action="store_true", help="no closing line on standard error")
    add_build_option(p)
    p.add_argument("program", nargs="...", metavar="-- PROGRAM [ARGS...]", help="the program to run")


def find_preload(option, build_option) -> Path:
    given = option or os.environ.get("MEMKIT_PRELOAD")
    if given:
        if not Path(given).is_file():
            raise MemkitError(f"no preload library at {given}")
        return Path(given).resolve()
    try:
        bench = lab.find_bench_dir(build_option)
    except MemkitError:
        bench = None
    # A build tree keeps it beside bench/; an install prefix in lib/ beside libexec/memkit/.
    for d in ([bench.parent, bench, bench.parent.parent / "lib"] if bench else []):
        if (d / PRELOAD_NAME).is_file():
            return (d / PRELOAD_NAME).resolve()
    raise MemkitError(f"no {PRELOAD_NAME} found (build with `make`, or pass --preload SO)")


def default_output(program: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(f"{Path(program).name or 'program'}-{stamp}")
    out, n = base, 1
    while out.exists():
        n += 1
        out = Path(f"{base}-{n}")
    return out


def run_program(argv, env) -> int:
    """Runs argv to its end; returns its exit status, -SIG if killed.  The
    terminal's Ctrl-C and Ctrl-\\ reach the program (its process group) and
    leave memkit waiting; SIGTERM and SIGHUP sent to memkit are passed on."""
    try:
        child = subprocess.Popen(argv, env=env)
    except OSError as e:
        raise MemkitError(f"cannot run {argv[0]}: {e.strerror or e}") from None
    forwarded = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    ignored = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGQUIT)}
    for s in forwarded:
        signal.signal(s, lambda sig, _f: child.send_signal(sig))
    for s in ignored:
        signal.signal(s, signal.SIG_IGN)
    try:
        return child.wait()
    finally:
        for s, h in {**forwarded, **ignored}.items():
            signal.signal(s, h)


def main(args) -> int:
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise MemkitError("no program to record (usage: memkit record [-o DIR] -- PROGRAM [ARGS...])")
    so = find_preload(args.preload, args.build)
    out = Path(args.output) if args.output else default_output(argv[0])
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        parts = Path(tempfile.mkdtemp(prefix=".parts-", dir=out)).resolve()
    except OSError as e:
        raise MemkitError(f"cannot create {out}: {e.strerror or e}")
    env = dict(os.environ)
    env["MEMKIT_RECORD"] = str(parts)
    env["LD_PRELOAD"] = " ".join(filter(None, [str(so), env.get("LD_PRELOAD", "")]))
    try:
        status = run_program(argv, env)
        rec = recording.merge_parts(parts)
    except MemkitError:
        if made:   # nothing recorded: leave no empty directory behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    summary = recording.write(rec, out, argv, status)
    if not args.quiet:
        calls = ", ".join(f"{summary['calls'][op]:,} {op}" for op in recording.OPS)
        print(f"memkit: recorded {calls} in {rec.processes} process(es) into {out}",
              file=sys.stderr, flush=True)
    if status < 0:   # killed by a signal: die of the same one
        sys.stdout.flush()
        if -status not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        return 128 - status
    return status
