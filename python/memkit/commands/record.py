# SPDX-License-Identifier: Apache-2.0
"""memkit record: run a program under the preload library with recording on
and write its memset/memcpy/memmove size distributions, alignments and
working sets.

    memkit record [-o DIR] [--force] [--predict] -- PROGRAM [ARGS...]
    memkit record --recover DIR [--predict]

The program's standard input, output and error are its own, and its exit
status (or the signal that killed it) becomes memkit's (127 when there is
no such program, 126 when it cannot be executed, as a shell says).  Processes it forks
or execs record too; all their counts are summed when it ends.  The program
dies with memkit (a SIGKILLed memkit leaves no program running unattended);
what it had counted stays in DIR's hidden parts directory, and
`--recover DIR` turns that into the recording.  --predict then replays the
recording (size-distributions, stored like `memkit run`; its table on
standard error) and prints what memkit saves the program."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import datetime
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from memkit.commands._common import add_build_option, add_db_option, db_path, given, host_name
from memkit.errors import MemkitError, UsageError
from memkit.lab import experiments as lab
from memkit.orchestration import suite
from memkit.programs import count_files, recording, whole_program, ws_estimate
from memkit.programs.preload import PRELOAD_NAME, elf_is_static, find_preload
from memkit.store.db import Database
from memkit.store.outdir import check_directory, check_target, foreign_directory

NAME = "record"
HELP = "run a program under the preload library and record its memset/memcpy/memmove sizes"



def add_arguments(p):
    p.add_argument("-o", "--output", metavar="DIR", type=given("a directory"),
                   help="where the recording goes (default: a new directory PROGRAM-DATE-TIME here)")
    p.add_argument("--preload", metavar="SO", type=given("a library"),
                   help=f"the preload library (default: $MEMKIT_PRELOAD, else {PRELOAD_NAME} of the build)")
    p.add_argument("-q", "--quiet", action="store_true", help="no closing lines on standard error")
    p.add_argument("--force", action="store_true",
                   help="replace the recording DIR already holds (default: refuse); files memkit did "
                        "not write are never replaced")
    p.add_argument("--recover", metavar="DIR", type=given("a directory"),
                   help="write the recording from the counts an interrupted `memkit record -o DIR` left in DIR")
    p.add_argument("--predict", action="store_true",
                   help="then replay the recording (memkit run size-distributions data=DIR, at hot and the "
                        "recorded working sets; stored) and print the predicted saving")
    p.add_argument("--quick", action="store_true", help="with --predict: the replay's reduced rounds and processes")
    add_db_option(p)
    add_build_option(p)
    p.add_argument("program", nargs="...", metavar="-- PROGRAM [ARGS...]", help="the program to run")


def default_output(program: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(f"{Path(program).name or 'program'}-{stamp}")
    out, n = base, 1
    while out.exists():
        n += 1
        out = Path(f"{base}-{n}")
    return out


PR_SET_PDEATHSIG = 1


def _die_with(parent: int):
    """In the child, before exec: SIGKILL when memkit dies, however it dies
    (SIGKILL included, where memkit cannot pass anything on), as the lab's
    helper processes do (bench/lab/processes.c).  Nobody would wait for the
    program or collect its counts.  The loader clears this for setuid
    programs, which record nothing anyway."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:   # memkit died before prctl
        os._exit(127)


def run_program(argv, env) -> int:
    """Runs argv to its end; returns its exit status, -SIG if killed.  The
    terminal's Ctrl-C and Ctrl-\\ reach the program (its process group) and
    leave memkit waiting; SIGTERM and SIGHUP sent to memkit are passed on."""
    parent = os.getpid()
    try:
        child = subprocess.Popen(argv, env=env, preexec_fn=lambda: _die_with(parent))
    except OSError as e:
        raise whole_program.ProgramNotStarted(argv[0], e.errno or errno.EACCES) from None
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


def l3_bytes(build_option) -> int | None:
    """This machine's L3 as the lab sees it (the fingerprint's), if it can tell."""
    try:
        exp = lab.find_bench_dir(build_option) / (lab.PREFIX + "size-distributions")
        return (lab.fingerprint([lab.describe(exp)]).get("cache") or {}).get("l3") or None
    except MemkitError:
        return None


def replay(out: Path, args) -> recording.Prediction:
    """Runs size-distributions on the recording as `memkit run` would (its
    output on standard error: standard output is the program's) and predicts
    from that run."""
    # the preload raced beside memkit: the program calls memkit through it
    peer = f"peer={find_preload(args.preload, args.build)}"
    with contextlib.redirect_stdout(sys.stderr):
        suite.run_suite(["size-distributions"], {"size-distributions": [f"data={out.resolve()}", peer]},
                        quick=args.quick, db_path=db_path(args), host=host_name(args), build=args.build)
    with Database(db_path(args)) as db:
        times = recording.latest_replay(db, out)
    return recording.predict(recording.load_summary(out), times)


def why_nothing_recorded(program: str) -> str:
    """The likeliest reason a program left no counts."""
    path = shutil.which(program) or program
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    secure = [what for bit, what in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid")) if mode & bit]
    try:
        if os.getxattr(path, "security.capability"):
            secure.append("has file capabilities")
    except OSError:
        pass
    if secure:
        return (f"{program} is {' and '.join(secure)}: the loader ignores LD_PRELOAD in such programs "
                f"(secure execution), so their calls cannot be recorded")
    if elf_is_static(path):
        return f"{program} is statically linked: there is no loader to preload the recorder into"
    return (f"{program} made no memset, memcpy or memmove call through the dynamic loader (or its "
            f"processes dropped LD_PRELOAD or MEMKIT_RECORD from their environment)")


def _refuse_existing(out: Path, force: bool):
    """Before the program runs: DIR is new, empty or memkit's (as `report
    --out` takes a directory), and a recording is replaced only when asked
    to (--force)."""
    check_directory(out, "the recording")
    found = recording.files_in(out)
    if out.is_dir() and not found and not _parts_dirs(out):   # a recording's, or an interrupted one's
        entries = list(out.iterdir())
        if entries:
            raise foreign_directory(out, entries, "the recording", "no recording", "-o")
    if found and not force:
        raise MemkitError(f"{out} already holds a recording ({', '.join(found)}); nothing was run. "
                          f"Choose another -o DIR, or pass --force to replace it")
    for f in (*recording.FILES.values(), recording.SUMMARY):   # --force replaces only memkit's files
        check_target(out / f, "the recording", recording.is_ours)


def _parts_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.glob(count_files.PARTS_PREFIX + "*") if p.is_dir())


def _closing_lines(args, rec, summary, out, seconds=None):
    """What was recorded (standard error: standard output is the
    program's), then --predict's replay and prediction."""
    if not args.quiet:
        calls = ", ".join(f"{summary['calls'][op]:,} {op}" for op in count_files.OPS)
        took = f", {seconds:.3g} s," if seconds is not None else ""
        print(f"memkit: recorded {calls} in {rec.processes} process(es){took} into {out}",
              file=sys.stderr, flush=True)
        for op, entry in summary["working_set"].items():
            print(f"memkit: {op} working set: {ws_estimate.ws_text(entry)}", file=sys.stderr, flush=True)
        if not args.predict:
            print(f"memkit: to predict memkit's saving: memkit run size-distributions data={out}, then memkit "
                  "report (or record with --predict)", file=sys.stderr, flush=True)


def _unfinished_lines(rec, parts: Path, out: Path):
    """Names the processes still running (a background child outliving the
    program) and the parts that could not be read: the recording keeps
    every other part, and the parts directory stays for a later --recover."""
    for pid, name, counted in rec.running:
        print(f"memkit: warning: process {pid} ({name}) was still running and writing its counts when the "
              f"program ended: {'its counts so far are in' if counted else 'its part is not yet readable and left out of'} "
              f"the recording", file=sys.stderr, flush=True)
    for why in rec.skipped:
        print(f"memkit: warning: {why}: left out of the recording", file=sys.stderr, flush=True)
    if rec.unfinished:
        print(f"memkit: the parts stay in {parts}: `memkit record --recover {out} --force` re-reads them "
              f"once every process has ended", file=sys.stderr, flush=True)


def _discard(parts: Path, made: Optional[Path]) -> None:
    """Nothing to keep: the parts, and the directory this run made (no empty
    directory left behind)."""
    shutil.rmtree(parts, ignore_errors=True)
    if made:
        shutil.rmtree(made, ignore_errors=True)


def recover(args) -> int:
    """--recover DIR: the recording from the counts an interrupted run left."""
    out = Path(args.recover)
    parts = _parts_dirs(out) if out.is_dir() else []
    if not parts:
        raise MemkitError(f"no interrupted recording in {out} (no {count_files.PARTS_PREFIX}* directory)")
    if len(parts) > 1:
        raise MemkitError(f"{len(parts)} interrupted recordings in {out} ({', '.join(p.name for p in parts)}): "
                          f"recover one at a time (move the others away)")
    _refuse_existing(out, args.force)
    rec = count_files.merge_parts(parts[0])
    if not rec.processes:
        raise MemkitError(f"the interrupted recording in {parts[0]} holds no counts: nothing to recover")
    _unfinished_lines(rec, parts[0], out)
    summary = recording.write(rec, out, count_files.read_command(parts[0]), None,
                              l3_bytes=l3_bytes(args.build))
    if not rec.unfinished:
        shutil.rmtree(parts[0], ignore_errors=True)
    _closing_lines(args, rec, summary, out)
    if args.predict:
        for line in replay(out, args).lines():
            print(f"memkit: {line}", file=sys.stderr, flush=True)
    return 0


def _prepare_output(args, argv: list[str]) -> tuple[Path, Path, bool]:
    """The recording's directory (refused when it holds one already, unless
    --force) and, inside it, the directory the preload writes its parts to.
    (out, parts, whether out was made here)."""
    out = Path(args.output) if args.output else default_output(argv[0])
    _refuse_existing(out, args.force)
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        parts = Path(tempfile.mkdtemp(prefix=count_files.PARTS_PREFIX, dir=out)).resolve()
        count_files.write_command(parts, argv)
    except OSError as e:
        raise MemkitError(f"cannot create {out}: {e.strerror or e}")
    return out, parts, made


def _collect(argv: list[str], status: int, parts: Path, out: Path, made: bool):
    """The parts merged; nothing recorded, or nothing readable yet, is an
    error that says why (and what is kept for --recover)."""
    rec = count_files.merge_parts(parts)
    if not rec.processes and not rec.unfinished:
        ended = "" if status == 0 else f" (it ended with {lab.describe_exit(status)})"
        _discard(parts, out if made else None)
        raise MemkitError(f"nothing was recorded{ended}: {why_nothing_recorded(argv[0])}; "
                          f"no recording was written")
    _unfinished_lines(rec, parts, out)
    if not rec.processes:
        raise MemkitError(f"no process's counts could be read yet; they stay in {parts}: "
                          f"`memkit record --recover {out}` once every process has ended")
    return rec


def _exit_as(status: int) -> int:
    """The program's own ending: its exit status, or, killed by a signal,
    dying of the same one."""
    if status >= 0:
        return status
    sys.stdout.flush()
    if -status not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
    return 128 - status


def main(args) -> int:
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if args.recover:
        if argv or args.output:
            raise UsageError("--recover DIR takes no program and no -o")
        return recover(args)
    if not argv:
        raise UsageError("no program to record (usage: memkit record [-o DIR] -- PROGRAM [ARGS...])")
    whole_program.check_runnable(argv[0])
    so = find_preload(args.preload, args.build)
    if args.predict:   # the database the replay goes to, before the program runs (as `memkit run` does)
        Database(db_path(args), create=True).close()
    out, parts, made = _prepare_output(args, argv)
    env = dict(os.environ)
    env["MEMKIT_RECORD"] = str(parts)
    env["LD_PRELOAD"] = " ".join(filter(None, [str(so), env.get("LD_PRELOAD", "")]))
    started = time.monotonic()
    try:
        status = run_program(argv, env)
    except MemkitError:   # it never ran: nothing to keep
        _discard(parts, out if made else None)
        raise
    seconds = time.monotonic() - started
    rec = _collect(argv, status, parts, out, made)
    summary = recording.write(rec, out, argv, status, seconds=seconds, l3_bytes=l3_bytes(args.build))
    if not rec.unfinished:
        shutil.rmtree(parts, ignore_errors=True)
    _closing_lines(args, rec, summary, out, seconds)
    if args.predict and status >= 0:
        for line in replay(out, args).lines():
            print(f"memkit: {line}", file=sys.stderr, flush=True)
    return _exit_as(status)
