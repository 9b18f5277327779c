# SPDX-License-Identifier: Apache-2.0
"""The C experiments: where they are, what they are, and running one.

Each experiment is an executable `memkit-exp-<name>` in `<build>/bench/`
speaking the protocol of bench/lab/lab.h: `--describe`, `--fingerprint`,
`--quick`, `--jsonl PATH` (fingerprint, measurement, verdict and end
records), progress lines on stderr ("progress: NAME i/N SECS what"), a
human table on stdout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from memkit.errors import MemkitError, UsageError
from memkit.lab import machine
from memkit.lab.helper_process import describe_exit, last_line, run_quiet as _run_quiet
from memkit.results import records
from memkit.results.result import Progress, Result

PREFIX = "memkit-exp-"
PRELOAD_NAME = "libmemkit_preload.so"   # the preload library, beside the experiments

# The default suite's order: the cheap, fundamental ones first, so a run cut
# short still has the basics; anything new follows alphabetically.
SUITE_ORDER = [
    "memset-sizes",
    "memset-random",
    "fill-regions",
    "copy-sweep",
    "copy-read",
    "parallel-sweep",
    "ipc-copy",
    "size-distributions",
    "faults",
    "zeroing",
    "preload-apps",
]

# Experiment-specific arguments `memkit run` passes to the default (not the
# quick) suite, where an experiment's own default grid is too long for the
# suite's ~10 minute budget.  Empty: every experiment's default is bounded
# on any machine (docs/lab.md "How long the suite takes").
SUITE_ARGS: dict[str, list[str]] = {}


def _repo_root() -> Path:
    # python/memkit/lab/experiments.py -> the checkout (editable install) or site-packages.
    return Path(__file__).resolve().parents[3]


# Where `pip install .` puts the CMake install tree (pyproject.toml's
# wheel.install-dir): the experiments in libexec/memkit, the library in lib.
NATIVE = Path(__file__).resolve().parents[1] / "_native"


def _bench_dir(candidate: Path) -> Optional[Path]:
    """The folder holding the experiments, given a build dir, its bench/ or an
    install prefix."""
    for d in (candidate / "bench", candidate / "libexec" / "memkit", candidate):
        if d.is_dir() and any(d.glob(PREFIX + "*")):
            return d
    return None


def find_bench_dir(option: Optional[str] = None) -> Path:
    """--build, else $MEMKIT_BUILD, else the experiments installed with this
    package, else build/ of the checkout it lives in, else ./build."""
    if option or os.environ.get("MEMKIT_BUILD"):
        given = Path(option or os.environ["MEMKIT_BUILD"])
        where = "--build" if option else "MEMKIT_BUILD"
        found = _bench_dir(given)
        if not found:
            raise MemkitError(f"no experiments (memkit-exp-*) in {given} ({where}); build first with `make`")
        return found
    candidates = [NATIVE]
    if (_repo_root() / "CMakeLists.txt").is_file():   # an editable install in a checkout
        candidates.append(_repo_root() / "build")
    candidates.append(Path.cwd() / "build")
    for c in candidates:
        found = _bench_dir(c)
        if found:
            return found
    tried = [str(c) for c in candidates if c != NATIVE]
    raise MemkitError(
        "no experiments built (looked in " + ", ".join(dict.fromkeys(tried)) +
        "); run `make` in a checkout, install with `pip install .`, or point --build / "
        "MEMKIT_BUILD at a build directory")


def library_version(bench_dir: Optional[Path] = None) -> str:
    """mk_version() of the libmemkit.so beside the experiments (a build tree's
    or an install prefix's), or why it cannot be asked."""
    import ctypes
    try:
        bench_dir = bench_dir or find_bench_dir()
    except MemkitError:
        return "not found (no build)"
    roots = [bench_dir.parent, bench_dir.parent.parent / "lib"]
    for root in roots:
        for so in sorted(root.glob("libmemkit.so*")):
            try:
                lib = ctypes.CDLL(str(so))
                lib.mk_version.restype = ctypes.c_char_p
                return lib.mk_version().decode()
            except (OSError, AttributeError):
                continue
    return "not found beside " + str(bench_dir)


def _lib_dirs(bench_dir: Path) -> list[Path]:
    """Where the libraries lie beside the experiments: a build tree keeps
    them in the folder above bench/, an install prefix in lib/ (or lib64/)
    beside libexec/memkit/."""
    prefix = bench_dir.parent.parent
    return [bench_dir.parent, bench_dir, prefix / "lib", prefix / "lib64"]


def native_file(bench_dir: Path, name: str) -> Optional[Path]:
    """The file `name` (libmemkit_preload.so, libmemkit.so, ...) that goes
    with these experiments, or None."""
    for d in _lib_dirs(bench_dir):
        if (d / name).is_file():
            return d.resolve() / name
    return None


def _source_dir(build_dir: Path) -> Optional[Path]:
    """The checkout a CMake build tree was configured from."""
    try:
        cache = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"^memkit_SOURCE_DIR:STATIC=(.*)$", cache, re.M)
    return Path(m[1]) if m else None


def native_paths(bench_dir: Path) -> dict[str, Optional[Path]]:
    """What a program needs to adopt memkit, as installed with these
    experiments (`pip install .`, `make install`) or built beside them: the
    preload library, the shared and static libraries, the header's folder,
    the pkg-config and CMake package folders (install prefixes only: a build
    tree's are written for the prefix), the experiments.  None: not there."""
    def first_dir(*candidates: Path) -> Optional[Path]:
        return next((c.resolve() for c in candidates if c.is_dir()), None)
    lib = native_file(bench_dir, "libmemkit.so")
    libdir = lib.parent if lib else None
    source = _source_dir(bench_dir.parent)
    include = first_dir(*[d for d in (bench_dir.parent.parent / "include", source and source / "include")
                          if d and (d / "memkit.h").is_file()])
    installed = libdir is not None and (libdir / "pkgconfig" / "memkit.pc").is_file()
    return {
        "preload": native_file(bench_dir, PRELOAD_NAME),
        "library": lib,
        "static": native_file(bench_dir, "libmemkit.a"),
        "include": include,
        "pkgconfig": libdir / "pkgconfig" if installed else None,
        "cmake": first_dir(libdir / "cmake" / "memkit") if installed else None,
        "experiments": bench_dir.resolve(),
    }


@dataclass
class Experiment:
    name: str
    seed: str
    description: str
    path: Path
    # A grid that scales with this machine's caches, as the experiment
    # takes it here (--describe's "grid": "largest", "work"); None: fixed.
    grid: Optional[dict] = None
    # The keys of its key=value arguments, the lab's built-in ones too (peer,
    # glibc_tunables) where it takes them.
    keys: tuple = ()


def check_arguments(exp: Experiment, quick: bool, args: list[str]) -> None:
    """Asks the experiment whether it takes these arguments (`--check-args`:
    the lab core checks them against the experiment's table and the
    experiment checks them together, e.g. the distribution files data=
    names, and loads any peer= libraries, then exits) before anything
    runs; raises with its one line of what is wrong.  Asked with no
    arguments too: the defaults name files ($MEMKIT_DATA) that may not
    hold."""
    argv = [str(exp.path), "--check-args"] + (["--quick"] if quick else []) + list(args)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise MemkitError(f"cannot run {exp.path}: {e.strerror or e}")
    except subprocess.TimeoutExpired:
        raise MemkitError(f"{exp.name} --check-args did not answer within 60 s")
    if p.returncode < 0:   # the check itself crashed: a bug, not the user's argument
        raise MemkitError(f"{exp.name} --check-args {describe_exit(p.returncode)}")
    if p.returncode != 0:
        why = last_line(p.stderr).removeprefix("error: ")
        raise UsageError(why if why.startswith(exp.name) else f"{exp.name}: {why}")


def describe(path: Path) -> Experiment:
    out = _run_quiet([str(path), "--describe"], path.name + " --describe")
    try:
        d = json.loads(out)
        grid = d.get("grid") if isinstance(d.get("grid"), dict) else None
        keys = tuple(a["key"] for a in d.get("args") or () if isinstance(a, dict) and "key" in a)
        return Experiment(d["name"], d.get("seed", ""), d.get("description", ""), path, grid, keys)
    except (ValueError, KeyError, TypeError):
        raise MemkitError(f"{path.name} --describe printed no valid description")


def suite_key(name: str):
    return (SUITE_ORDER.index(name), "") if name in SUITE_ORDER else (len(SUITE_ORDER), name)


def discover(bench_dir: Path) -> list[Experiment]:
    """Every experiment in the build, in the suite's order."""
    paths = [p for p in bench_dir.glob(PREFIX + "*") if p.is_file() and os.access(p, os.X_OK)]
    exps = [describe(p) for p in paths]
    return sorted(exps, key=lambda e: suite_key(e.name))


def select(experiments: list[Experiment], names: list[str]) -> list[Experiment]:
    if not names:
        return experiments
    by_name = {e.name: e for e in experiments}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown experiment '{unknown[0]}' (known: {', '.join(by_name) or 'none'})")
    return [by_name[n] for n in dict.fromkeys(names)]


def fingerprint(experiments: list[Experiment]) -> dict:
    """The machine's fingerprint, as any experiment reports it (or as the
    recorded machine says: memkit.lab.machine)."""
    if not experiments:
        raise MemkitError("no experiment to ask for the fingerprint")
    return machine.current().fingerprint(experiments[0].path)


TUNABLES_PROGRAM = "memkit-tunables"


def _tunables_program(bench_dir: Path) -> str:
    """memkit-tunables, built beside the experiments (src/diagnostics/memkit_tunables.c)."""
    prog = bench_dir / TUNABLES_PROGRAM
    if not prog.is_file():
        raise MemkitError(f"no {TUNABLES_PROGRAM} in {bench_dir}; build again with `make`")
    return str(prog)


def tunables(bench_dir: Path) -> dict:
    """The library's tunables and per-CPU strategy table, printed from its
    own tables by memkit-tunables.  What the library says of MEMKIT_TUNABLES
    or the profile goes to our stderr."""
    return machine.current().library_tables(Path(_tunables_program(bench_dir)))


def paths(bench_dir: Path, spec: str, op: str, sizes: list[int]) -> list[str]:
    """The method the library takes for each size of op under its defaults
    with spec (MEMKIT_TUNABLES syntax) applied, as it decides it
    (memkit-tunables --paths; src/diagnostics/memkit_tunables.c names the ops and methods)."""
    return machine.current().paths(Path(_tunables_program(bench_dir)), spec, op, sizes)


# ---- running one experiment ----

PROGRESS_RE = re.compile(r"^progress: (\S+) (\d+)/(\d+) ([0-9.]+)s ?(.*)$")


def parse_progress(line: str) -> Optional[Progress]:
    m = PROGRESS_RE.match(line.rstrip("\n"))
    if not m:
        return None
    return Progress(m[1], int(m[2]), int(m[3]), float(m[4]), m[5])


def parse_jsonl(text: str) -> tuple[Optional[dict], list[dict], list[dict], bool]:
    """(fingerprint, measurements, verdicts, saw the end record); the
    measurements and verdicts in memkit.results.records' normalised shape."""
    fp, ms, vs, ended = None, [], [], False
    fmt = 1
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise MemkitError(f"bad JSON on line {n} of the experiment's output")
        kind = rec.get("type")
        if kind == "fingerprint":
            rec.pop("type")
            fmt = rec.pop("format", 1) if isinstance(rec.get("format"), int) else 1
            fp = rec
        elif kind == "measurement":
            ms.append(records.measurement(rec, fmt))
        elif kind == "verdict":
            vs.append(records.verdict(rec))
        elif kind == "end":
            ended = True
    return fp, ms, vs, ended


def _follow(proc, on_progress, on_stderr) -> tuple[int, str, list[str]]:
    """The running experiment followed to its end: its stdout read on a
    thread of its own, its stderr line by line (progress lines to
    on_progress, the rest to on_stderr and kept).  (exit status, stdout,
    stderr lines)."""
    out_chunks: list[str] = []

    def read_stdout():
        # A signal sent to the process (kill -INT) may land on any thread
        # that does not block it; here it would interrupt nothing and the
        # main thread would stay blocked reading the experiment's stderr.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        out_chunks.append(proc.stdout.read())
    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    err_lines = []
    try:
        for line in proc.stderr:
            p = parse_progress(line)
            if p:
                on_progress(p)
            else:
                err_lines.append(line.rstrip("\n"))
                on_stderr(line.rstrip("\n"))
        rc = proc.wait()
    except BaseException:
        # Ctrl-C or anything else: take the experiment down with us.
        proc.kill()
        proc.wait()
        raise
    reader.join()
    return rc, "".join(out_chunks), err_lines


def _ended(res: Result, rc: int, jsonl: Path, err_lines: list[str]) -> Result:
    """The result of a finished experiment: its records read, and its status
    from how it ended (crashed, failed, its end record missing)."""
    text = jsonl.read_text(errors="replace") if jsonl.exists() else ""
    try:
        res.fingerprint, res.measurements, res.verdicts, ended = parse_jsonl(text)
    except MemkitError as e:
        res.status, res.error = "failed", str(e)
        return res
    if rc < 0:
        res.status = "crashed"
        res.error = f"{res.name} crashed ({describe_exit(rc)})"
    elif rc != 0:
        res.status = "failed"
        res.error = f"{res.name} failed ({describe_exit(rc)}): {last_line(chr(10).join(err_lines))}"
    elif not ended:
        res.status = "failed"
        res.error = f"{res.name} ended without its end record (truncated output)"
    return res


def run_experiment(exp: Experiment, quick: bool, args: list[str] = (),
                   on_progress: Callable[[Progress], None] = lambda p: None,
                   on_stderr: Callable[[str], None] = lambda l: None,
                   env: Optional[dict] = None) -> Result:
    """Runs one experiment to the end (in env: None, ours); never raises for
    the experiment's own failure (that is in the result's status and error)."""
    args = list(args)
    with tempfile.TemporaryDirectory(prefix="memkit-") as tmp:
        jsonl = Path(tmp) / "out.jsonl"
        argv = [str(exp.path), "--jsonl", str(jsonl)] + (["--quick"] if quick else []) + args
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, text=True, bufsize=1, env=env)
        except OSError as e:
            return Result(exp.name, exp.seed, exp.description, "failed", 0.0, args,
                          error=f"cannot start {exp.path}: {e.strerror or e}")
        rc, output, err_lines = _follow(proc, on_progress, on_stderr)
        res = Result(exp.name, exp.seed, exp.description, "ok", time.monotonic() - t0, args, output=output)
        return _ended(res, rc, jsonl, err_lines)
