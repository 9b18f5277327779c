"""Recordings made by `memkit record`: the preload library's per-process
count files (src/preload/record.c) merged into size distributions in the
format of data/fleet-size-distributions/FORMAT.md, and read back.

A recording directory holds Memset.csv, Memcpy.csv, Memmove.csv (one per
function the program called; line 1 sizes, line 2 overlap, line 3
destination alignment, each `value:probability`) and summary.json (calls and
bytes per function, processes, the command line)."""

from __future__ import annotations

import json
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from memkit.errors import MemkitError

OPS = ("memset", "memcpy", "memmove")
FILES = {"memset": "Memset.csv", "memcpy": "Memcpy.csv", "memmove": "Memmove.csv"}
SUMMARY = "summary.json"
# The hidden directory inside a recording's DIR that the program's processes
# write their count files into while it runs (MEMKIT_RECORD), with the
# command line beside them: what an interrupted recording leaves.
PARTS_PREFIX = ".parts-"
PARTS_COMMAND = "command.json"
MAGIC = b"MKREC01\n"
# magic, header_bytes, slot_bytes, slots, used, pid, first, exact, per_octave,
# log_buckets, ops, cmdline_bytes (record.c's rec_header)
HEADER = struct.Struct("<8s11I")
CMDLINE_AT = 64
ALIGN_SLOTS = 8   # rec_hist: align[8], overlap, reserved[7]


@dataclass
class OpCounts:
    """One function's calls: calls per size (a logarithmic bucket at the mean
    size of its calls), per destination alignment (1..64), and overlapping."""
    sizes: dict = field(default_factory=dict)
    align: dict = field(default_factory=dict)
    overlap: int = 0

    @property
    def calls(self) -> int:
        return sum(self.sizes.values())

    @property
    def bytes(self) -> int:
        return sum(s * c for s, c in self.sizes.items())

    def add(self, other: "OpCounts"):
        for s, c in other.sizes.items():
            self.sizes[s] = self.sizes.get(s, 0) + c
        for a, c in other.align.items():
            self.align[a] = self.align.get(a, 0) + c
        self.overlap += other.overlap


@dataclass
class Recording:
    ops: dict            # name -> OpCounts
    processes: int = 0
    threads: int = 0
    programs: dict = field(default_factory=dict)   # argv[0] -> processes


def _read_part(path: Path):
    """(pid, first, argv, threads, {op: OpCounts}) of one count file."""
    with open(path, "rb") as f:
        data = f.read(4096)
        if len(data) < HEADER.size or not data.startswith(MAGIC):
            raise MemkitError(f"{path} is not a memkit recording part")
        (_, header_bytes, slot_bytes, slots, used, pid, first, exact, per_octave, log_buckets,
         nops, cmd_bytes) = HEADER.unpack_from(data)
        # Only the slots handed out: the rest of the (sparse) file is zeros.
        data += f.read(header_bytes + min(used, slots) * slot_bytes - len(data))
    argv = [a.decode(errors="replace") for a in
            data[CMDLINE_AT:CMDLINE_AT + cmd_bytes].split(b"\0") if a]
    hist_words = exact + 2 * log_buckets + ALIGN_SLOTS + 8
    ops = {op: OpCounts() for op in OPS}
    for slot in range(min(used, slots)):
        for i, op in enumerate(OPS[:nops]):
            at = header_bytes + slot * slot_bytes + i * hist_words * 8
            words = array("Q", data[at:at + hist_words * 8])
            if len(words) < hist_words:
                raise MemkitError(f"{path} is truncated")
            sizes = words[:exact + log_buckets]
            log_sum = words[exact + log_buckets:exact + 2 * log_buckets]
            align = words[exact + 2 * log_buckets:exact + 2 * log_buckets + 7]
            c = ops[op]
            for s in range(exact):
                if sizes[s]:
                    c.sizes[s] = c.sizes.get(s, 0) + sizes[s]
            for b in range(log_buckets):
                n = sizes[exact + b]
                if n:
                    # Calls in one bucket are replayed at their mean size.
                    mean = round(log_sum[b] / n)
                    c.sizes[mean] = c.sizes.get(mean, 0) + n
            for k in range(7):
                if align[k]:
                    c.align[1 << k] = c.align.get(1 << k, 0) + align[k]
            c.overlap += words[exact + 2 * log_buckets + ALIGN_SLOTS]
    return pid, first, argv, min(used, slots), ops


def merge_parts(parts_dir: Path) -> Recording:
    """Sums every count file (<pid>.<k>.mkrec) in parts_dir."""
    rec = Recording({op: OpCounts() for op in OPS})
    for path in sorted(parts_dir.glob("*.mkrec")):
        pid, first, argv, threads, ops = _read_part(path)
        for op in OPS:
            rec.ops[op].add(ops[op])
        rec.threads += threads
        if first:
            rec.processes += 1
            name = Path(argv[0]).name if argv else "?"
            rec.programs[name] = rec.programs.get(name, 0) + 1
    return rec


def files_in(out: Path) -> list[str]:
    """The files of a recording that out already holds."""
    return [f for f in (*FILES.values(), SUMMARY) if (out / f).exists()]


def write_command(parts_dir: Path, command: list):
    (parts_dir / PARTS_COMMAND).write_text(json.dumps(list(command)) + "\n")


def read_command(parts_dir: Path) -> list:
    """The command line an interrupted recording ran ([] if unknown)."""
    try:
        command = json.loads((parts_dir / PARTS_COMMAND).read_text())
        return [str(a) for a in command] if isinstance(command, list) else []
    except (OSError, ValueError):
        return []


def _line(counts: dict) -> str:
    total = sum(counts.values())
    return ",".join(f"{k}:{c / total:.6g}" for k, c in sorted(counts.items()) if c)


def write(rec: Recording, out: Path, command: list, exit_status=None):
    """The CSV files of the functions called and summary.json, into out."""
    out.mkdir(parents=True, exist_ok=True)
    for op in OPS:
        path = out / FILES[op]
        c = rec.ops[op]
        if not c.calls:
            path.unlink(missing_ok=True)   # from an earlier recording into this directory
            continue
        overlap = {0: c.calls - c.overlap, 1: c.overlap}
        path.write_text(f"{_line(c.sizes)}\n{_line(overlap)}\n{_line(c.align)}\n")
    summary = {
        "calls": {op: rec.ops[op].calls for op in OPS},
        "bytes": {op: rec.ops[op].bytes for op in OPS},
        "processes": rec.processes,
        "threads": rec.threads,
        "programs": rec.programs,
        "command": list(command),
        "exit_status": exit_status,   # None: unknown (recovered from an interrupted recording)
    }
    (out / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


# ---- reading a recording back (the report, tune) ----

def parse_line(line: str) -> dict:
    out = {}
    for item in line.strip().split(","):
        if item:
            k, _, p = item.partition(":")
            out[float(k) if "." in k else int(k)] = float(p)
    return out


def read_distribution(path: Path) -> dict:
    """size -> probability from line 1 of a FORMAT.md file."""
    try:
        first = path.read_text().splitlines()[0]
        return parse_line(first)
    except (OSError, IndexError, ValueError) as e:
        raise MemkitError(f"cannot read the size distribution {path}: {e}")


def is_recording(d: Path) -> bool:
    return (d / SUMMARY).is_file() and any((d / f).is_file() for f in FILES.values())


def load_summary(d: Path) -> dict:
    try:
        return json.loads((d / SUMMARY).read_text())
    except (OSError, ValueError) as e:
        raise MemkitError(f"cannot read {d / SUMMARY}: {e}")
