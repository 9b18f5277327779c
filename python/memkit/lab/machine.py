# SPDX-License-Identifier: Apache-2.0
"""The one seam between memkit's Python and the machine it runs on.

Everything the front end reads about the machine goes through `current()`:
the fingerprint the lab's C core reports (CPU, ISA, caches, VM, the
strategy row and variants libmemkit picks), glibc's own view
(`ld.so --list-diagnostics`), the load and steal (/proc), the CPUs this
process may use, and the library's per-CPU table as it applies here
(memkit-tunables).  tests/python/test_machine.py fails on code that reads
any of these around it.

A recorded machine stands in for the live one when MEMKIT_MACHINE names its
folder (`memkit env --record DIR` writes one):

  fingerprint.json        the fingerprint, as `memkit env --json` prints it
                          (glibc's view left out: it is read from ...)
  glibc-diagnostics.txt   `ld.so --list-diagnostics` on that machine
                          (absent: glibc's view is not available there)
  cpuinfo.txt             /proc/cpuinfo's lines of its first CPU (for people)
  load.json               optional: {"load_avg": 2.7, "steal_pct": 0.0};
                          without it the recorded machine is quiet

so the tests run every machine memkit has seen (tests/data/machines/), and
a user's report can be reproduced (`MEMKIT_MACHINE=DIR memkit
system-check`).  What a recorded machine cannot give is what only running
there shows: timings.  The commands that measure still time this machine,
and say so."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Optional, Union

from memkit.errors import MemkitError
from memkit.lab import glibc
from memkit.lab.helper_process import run_quiet

ENV = "MEMKIT_MACHINE"
FINGERPRINT_FILE = "fingerprint.json"
GLIBC_FILE = "glibc-diagnostics.txt"
CPUINFO_FILE = "cpuinfo.txt"
LOAD_FILE = "load.json"

# The x86-64 ABI's path of glibc's loader, for a process whose own
# interpreter cannot be read (a static Python).
ABI_LOADER = Path("/lib64/ld-linux-x86-64.so.2")


class LiveMachine:
    """The machine this process runs on."""

    where = "this machine"
    recorded: Optional[Path] = None

    def fingerprint(self, experiment: Path) -> dict:
        """The fingerprint an experiment of the lab reports, with glibc's view."""
        out = run_quiet([str(experiment), "--fingerprint"], experiment.name + " --fingerprint")
        try:
            fp = json.loads(out)
        except ValueError:
            raise MemkitError(f"{experiment.name} --fingerprint printed no valid JSON")
        fp.pop("type", None)
        fp.pop("format", None)   # the record format, not the machine
        if glibc.KEY not in fp:   # a fake experiment of the tests may carry a view of its own
            fp[glibc.KEY] = self.glibc_view()
        return fp

    def glibc_diagnostics(self, env: Optional[dict] = None, loader: Optional[Path] = None) -> tuple[str, str]:
        """(`ld.so --list-diagnostics`'s output, "") or ("", why not)."""
        why = ""
        if loader is None:
            loader, why = find_loader()
        if loader is None:
            return "", f"not available: {why}"
        command = f"{loader} --list-diagnostics"
        try:
            p = subprocess.run([str(loader), "--list-diagnostics"], capture_output=True, text=True,
                               errors="replace", timeout=10, env=env)
        except (OSError, subprocess.SubprocessError) as e:
            return "", f"not available: {command}: {getattr(e, 'strerror', None) or e}"
        if p.returncode == 0 and glibc.parse(p.stdout):
            return p.stdout, ""
        said = next((line.strip() for line in p.stderr.splitlines() if line.strip()), "")
        what = "printed no x86 cache sizes" if p.returncode == 0 else f"failed (exit status {p.returncode})"
        return "", (f"not available: {command} {what}{': ' + said if said else ''}; "
                    f"glibc prints them from 2.33 on")

    def glibc_view(self, env: Optional[dict] = None, loader: Optional[Path] = None) -> Union[dict, str]:
        """glibc's thresholds (glibc.parse), or why they cannot be had;
        under `env` (default: this process's), so a GLIBC_TUNABLES there
        shows whether glibc took it."""
        text, why = self.glibc_diagnostics(env, loader)
        return glibc.parse(text) if text else why

    def cpu_times(self) -> Optional[list[int]]:
        """/proc/stat's aggregate "cpu" line: user nice system idle iowait irq softirq steal ..."""
        try:
            with open("/proc/stat") as f:
                for line in f:
                    if line.startswith("cpu "):
                        return [int(x) for x in line.split()[1:]]
        except (OSError, ValueError):
            pass
        return None

    def load_average(self) -> Optional[float]:
        try:
            with open("/proc/loadavg") as f:
                return float(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def steal_pct(self) -> Optional[float]:
        return None   # measured over time from cpu_times

    def usable_cpus(self) -> int:
        try:
            return len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return os.cpu_count() or 1

    def clock_ticks(self) -> int:
        return os.sysconf("SC_CLK_TCK")

    def cpuinfo(self) -> str:
        """/proc/cpuinfo's lines of the first CPU."""
        try:
            text = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return ""
        return text.split("\n\n")[0].rstrip("\n") + "\n"

    def library_tables(self, program: Path) -> dict:
        """memkit-tunables' JSON: the tunables and rows, with the row in force here."""
        out = run_quiet([str(program)], program.name, pass_stderr=True)
        try:
            return json.loads(out)
        except ValueError:
            raise MemkitError(f"{program.name} printed no valid JSON")

    def paths(self, program: Path, spec: str, op: str, sizes: list[int]) -> list[str]:
        """The method the library takes for each size of op here, under its
        defaults with spec (MEMKIT_TUNABLES syntax) applied."""
        out = run_quiet([str(program), "--paths", spec, op, *map(str, sizes)], program.name)
        got = out.splitlines()
        if len(got) != len(sizes):
            raise MemkitError(f"{program.name} --paths answered {len(got)} of {len(sizes)} sizes")
        return got

    def note(self) -> str:
        return ""


class RecordedMachine(LiveMachine):
    """A machine recorded in a folder (the module's docstring): what it
    reads of the machine comes from there; programs still run here."""

    def __init__(self, folder: Path):
        self.recorded = Path(folder)
        self.where = f"the machine recorded in {folder}"
        fp_file = self.recorded / FINGERPRINT_FILE
        try:
            fp = json.loads(fp_file.read_text())
        except OSError as e:
            raise MemkitError(f"{ENV}={folder}: no recorded machine there ({fp_file}: {e.strerror or e}); "
                              f"`memkit env --record DIR` writes one")
        except ValueError:
            raise MemkitError(f"{ENV}={folder}: {fp_file} is not JSON")
        if not isinstance(fp, dict) or not fp.get("vendor"):
            raise MemkitError(f"{ENV}={folder}: {fp_file} is no fingerprint (it names no CPU vendor)")
        fp.pop("load", None)
        fp.pop(glibc.KEY, None)
        self.recorded_fingerprint = fp
        self.rows: dict = {}   # memkit-tunables' path -> its row for this CPU
        try:
            self.diagnostics = (self.recorded / GLIBC_FILE).read_text(errors="replace")
        except OSError:
            self.diagnostics = ""
        try:
            self.load = json.loads((self.recorded / LOAD_FILE).read_text())
        except (OSError, ValueError):
            self.load = {}

    def fingerprint(self, experiment: Optional[Path] = None) -> dict:
        return dict(self.recorded_fingerprint, **{glibc.KEY: self.glibc_view()})

    def glibc_diagnostics(self, env: Optional[dict] = None, loader: Optional[Path] = None) -> tuple[str, str]:
        if not glibc.parse(self.diagnostics):
            return "", f"not available: {self.where} has no {GLIBC_FILE}"
        tunables = (os.environ if env is None else env).get("GLIBC_TUNABLES", "")
        return glibc.diagnostics_under(self.diagnostics, tunables, self.recorded_fingerprint), ""

    def cpu_times(self) -> Optional[list[int]]:
        return None

    def load_average(self) -> Optional[float]:
        return float(self.load.get("load_avg", 0.0))

    def steal_pct(self) -> Optional[float]:
        v = self.load.get("steal_pct")
        return None if v is None else float(v)

    def usable_cpus(self) -> int:
        return int(self.recorded_fingerprint.get("cpus_online") or 1)

    def cpuinfo(self) -> str:
        try:
            return (self.recorded / CPUINFO_FILE).read_text(errors="replace")
        except OSError:
            return ""

    def row(self, program: Path) -> dict:
        """The row this library gives the recorded CPU (memkit-tunables --cpu),
        asked once per program."""
        if program not in self.rows:
            out = run_quiet([str(program), "--cpu", *cpu_arguments(self.recorded_fingerprint)],
                            program.name + " --cpu")
            try:
                self.rows[program] = json.loads(out)
            except ValueError:
                raise MemkitError(f"{program.name} --cpu printed no valid JSON")
        return self.rows[program]

    def library_tables(self, program: Path) -> dict:
        table = super().library_tables(program)
        row = self.row(program)
        table["strategy"] = row["strategy"]
        for t in table.get("tunables", []):
            if t.get("name") in row["defaults"]:
                value = row["defaults"][t["name"]]
                t["default"] = t["in_force"] = "never" if value is None else str(value)
        return table

    def paths(self, program: Path, spec: str, op: str, sizes: list[int]) -> list[str]:
        row = self.row(program)["defaults"]
        defaults = ":".join(f"{k}={'never' if v is None else v}" for k, v in row.items())
        return super().paths(program, ":".join(filter(None, [defaults, spec])), op, sizes)

    def note(self) -> str:
        return (f"what it reads of the machine comes from {self.where} ({ENV}); "
                f"what it times runs on this one")


def cpu_arguments(fp: dict) -> list[str]:
    """memkit-tunables --cpu's arguments (VENDOR FAMILY MODEL L2 L3
    FEATURES) for the CPU of a fingerprint (or an evidence file's "cpu")."""
    isa, cache = fp.get("isa") or {}, fp.get("cache") or {}
    avx2 = isa.get("avx2") and isa.get("os_avx")
    avx512 = (isa.get("avx512f") and isa.get("avx512bw") and isa.get("avx512vl") and isa.get("os_avx512"))
    feats = [f for f in ("erms", "fsrm", "amx") if isa.get(f)]
    feats += ["avx2"] if avx2 else []
    feats += ["avx512"] if avx512 else []
    return [str(fp["vendor"]), str(fp["family"]), str(fp["model"]), str(cache.get("l2") or 0),
            str(cache.get("l3") or 0), ",".join(feats)]


def find_loader(exe: Optional[Path] = None) -> tuple[Optional[Path], str]:
    """glibc's dynamic loader on this system, the one this process (Python)
    was started by, else the ABI's path; (None, why not) when there is none."""
    interp = glibc.interpreter(exe or Path("/proc/self/exe"))
    if interp:
        if not Path(interp).name.startswith("ld-linux"):
            return None, f"the C library is not glibc (the program loader is {interp})"
        return Path(interp), ""
    if ABI_LOADER.exists():
        return ABI_LOADER, ""
    return None, f"no glibc loader (this Python names none, and there is no {ABI_LOADER})"


_cache: dict = {}


def current() -> LiveMachine:
    """The machine memkit reads: the live one, or the one MEMKIT_MACHINE names."""
    folder = os.environ.get(ENV, "")
    if not folder:
        return _cache.setdefault("", LiveMachine())
    if folder not in _cache:
        _cache[folder] = RecordedMachine(Path(folder))
    return _cache[folder]


def record(folder: Path, fp: dict, m: Optional[LiveMachine] = None) -> list[Path]:
    """Writes the recorded machine of fingerprint `fp` (as the commands
    read it through `m`, by default the current machine) into folder, a
    new or empty directory; returns the files written."""
    m = m or current()
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise MemkitError(f"--record {folder}: not a new or empty directory")
    folder.mkdir(parents=True, exist_ok=True)
    fp = {k: v for k, v in fp.items() if k not in (glibc.KEY, "load")}
    written = [folder / FINGERPRINT_FILE]
    written[0].write_text(json.dumps(fp, indent=2, sort_keys=True) + "\n")
    text, _ = m.glibc_diagnostics(env={k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"})
    if text:
        (folder / GLIBC_FILE).write_text(text)
        written.append(folder / GLIBC_FILE)
    info = m.cpuinfo()
    if info:
        (folder / CPUINFO_FILE).write_text(info)
        written.append(folder / CPUINFO_FILE)
    return written
