# SPDX-License-Identifier: Apache-2.0
"""The count files the preload library writes while `memkit record` runs a
program (src/preload/record.c's layout, one per process, in DIR/.parts-*
with the command line beside them), read and merged into one Recording."""

from __future__ import annotations

import json
import math
import os
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError


OPS = ("memset", "memcpy", "memmove")
# The hidden directory inside a recording's DIR that the program's processes
# write their count files into while it runs (MEMKIT_RECORD), with the
# command line beside them: what an interrupted recording leaves.
PARTS_PREFIX = ".parts-"
PARTS_COMMAND = "command.json"

# ---- the count files (record.c's layout) ----

MAGIC_PREFIX = b"MKREC"   # then two digits, the layout's version, and "\n"
# magic, header_bytes, slot_bytes, slots, used, pid, first, exact, per_octave,
# log_buckets, ops, cmdline_bytes (record.c's rec_header, version 1's part)
HEADER = struct.Struct("<8s11I")
# version 2 appends: hist_bytes, ws_at, ws_bytes, ws_buckets, ws_window, ws_bits
HEADER_V2 = struct.Struct("<6I")
# version 3 appends: repeats_at (the calls that repeated their call site's last size),
# ws_half_at (rec_ws.windows_half: each window's bits set at half its draws)
HEADER_V3 = struct.Struct("<2I")
CMDLINE_AT = {1: 64, 2: 128, 3: 128}
ALIGN_SLOTS = 8   # rec_hist: align[8], overlap, src_align[7] (version 1: reserved, zero)
# rec_ws after its two histograms: inserted, set, and (layout 3) the open
# window's count at its last power of two (before: reserved, zero)
WS_OPEN_WORDS = 3


@dataclass
class OpCounts:
    """One function's calls: calls per size (a logarithmic bucket at the mean
    size of its calls), per destination and source alignment (1..64), how
    many overlapped, and the working-set estimator's windows per side
    (0: destination, 1: source), each (distinct lines, lines drawn, how many
    windows alike, the bits of the bitmap that counted them, and (distinct
    lines, draws) at an earlier point of the window, or None: before layout
    3)."""
    sizes: dict = field(default_factory=dict)
    align: dict = field(default_factory=dict)
    src_align: dict = field(default_factory=dict)
    overlap: int = 0
    windows: tuple = field(default_factory=lambda: ([], []))
    repeats: Optional[int] = None   # calls of their call site's previous size; None: not counted (before layout 3)

    @property
    def calls(self) -> int:
        return sum(self.sizes.values())

    @property
    def bytes(self) -> int:
        return sum(s * c for s, c in self.sizes.items())

    def add(self, other: "OpCounts"):
        for mine, theirs in ((self.sizes, other.sizes), (self.align, other.align),
                             (self.src_align, other.src_align)):
            for k, c in theirs.items():
                mine[k] = mine.get(k, 0) + c
        self.overlap += other.overlap
        if other.repeats is not None:
            self.repeats = (self.repeats or 0) + other.repeats
        for side in (0, 1):
            self.windows[side].extend(other.windows[side])


@dataclass
class Recording:
    ops: dict            # name -> OpCounts
    processes: int = 0
    threads: int = 0
    programs: dict = field(default_factory=dict)   # argv[0] -> processes
    # Processes still running when their parts were read: (pid, name, counted
    # or not).  A background child outliving the program writes on.
    running: list = field(default_factory=list)
    skipped: list = field(default_factory=list)    # parts that could not be read: one line each

    @property
    def unfinished(self) -> bool:
        """Some part was still being written or could not be read: its
        parts directory stays for a later --recover."""
        return bool(self.running or self.skipped)


def _process_name(pid: int) -> Optional[str]:
    """The command name of a live process, None once it is gone (a zombie
    writes nothing more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name, _, rest = stat.partition(" (")[2].rpartition(")")
    return None if rest.split()[:1] == ["Z"] else (name or "?")


def distinct_lines(bits_set: float, bits: int) -> float:
    """Linear counting: the distinct lines behind `bits_set` of a bitmap of
    `bits` bits each line hashed into one."""
    return -bits * math.log1p(-min(bits_set, bits - 0.5) / bits)


def _add_counts(into: dict, words, keys):
    for k, w in zip(keys, words):
        if w:
            into[k] = into.get(k, 0) + w


class PartialPart(MemkitError):
    """A count file too short to read: a process that was still creating it
    (or was killed doing so).  Other problems (a newer layout) stay errors."""


def _v1_words(exact: int, log_buckets: int) -> int:
    """The 64-bit words of one op's histogram in layout 1 (the part every
    layout begins with): exact sizes, log buckets and their sums, the
    alignment slots and the overlap and source-alignment counts."""
    return exact + 2 * log_buckets + ALIGN_SLOTS + 8


@dataclass(frozen=True)
class _Layout:
    """What a count file's header says of its layout (of either version)."""
    version: int
    header_bytes: int
    slot_bytes: int
    slots: int
    pid: int
    first: int
    exact: int
    log_buckets: int
    nops: int
    cmd_bytes: int
    hist_bytes: int
    ws_at: int = 0
    ws_bytes: int = 0
    ws_buckets: int = 0
    ws_window: int = 0
    ws_bits: int = 0
    repeats_at: Optional[int] = None
    ws_half_at: Optional[int] = None

    @property
    def v1_words(self) -> int:
        return _v1_words(self.exact, self.log_buckets)


def _read_layout(path: Path) -> tuple[_Layout, bytes]:
    """The header, and the file's bytes up to its last slot handed out (the
    rest of the sparse file is zeros)."""
    with open(path, "rb") as f:
        data = f.read(4096)
        if len(data) < HEADER.size + HEADER_V2.size or not data.startswith(MAGIC_PREFIX):
            raise PartialPart(f"{path} is not a memkit recording part")
        try:
            version = int(data[5:7])
        except ValueError:
            version = 0
        if version not in CMDLINE_AT:
            raise MemkitError(f"{path}: recording layout {data[:7].decode(errors='replace')} is not "
                              "one this memkit reads (a newer preload library?)")
        (_, header_bytes, slot_bytes, slots, used, pid, first, exact, per_octave, log_buckets,
         nops, cmd_bytes) = HEADER.unpack_from(data)
        data += f.read(header_bytes + min(used, slots) * slot_bytes - len(data))
    ws = (HEADER_V2.unpack_from(data, HEADER.size) if version >= 2
          else (_v1_words(exact, log_buckets) * 8, 0, 0, 0, 0, 0))
    later = (HEADER_V3.unpack_from(data, HEADER.size + HEADER_V2.size) if version >= 3 else (None, None))
    return _Layout(version, header_bytes, slot_bytes, min(used, slots), pid, first, exact, log_buckets,
                   nops, cmd_bytes, *ws, *later), data


def _add_sizes(c: OpCounts, data: bytes, at: int, words, lay: _Layout) -> None:
    """One slot's sizes (exact, and log buckets replayed at their mean
    size), alignments, overlaps and repeats, added to c."""
    exact, log_buckets = lay.exact, lay.log_buckets
    sizes = words[:exact + log_buckets]
    log_sum = words[exact + log_buckets:exact + 2 * log_buckets]
    align_at = exact + 2 * log_buckets
    _add_counts(c.sizes, sizes[:exact], range(exact))
    for b in range(log_buckets):
        n = sizes[exact + b]
        if n:
            mean = round(log_sum[b] / n)
            c.sizes[mean] = c.sizes.get(mean, 0) + n
    powers = [1 << k for k in range(7)]
    _add_counts(c.align, words[align_at:align_at + 7], powers)
    c.overlap += words[align_at + ALIGN_SLOTS]
    if lay.repeats_at is not None:
        c.repeats = (c.repeats or 0) + struct.unpack_from("<Q", data, at + lay.repeats_at)[0]
    _add_counts(c.src_align, words[align_at + ALIGN_SLOTS + 1:align_at + ALIGN_SLOTS + 8], powers)


def _add_windows(c: OpCounts, data: bytes, at: int, lay: _Layout) -> None:
    """One slot's working-set windows, each side's, added to c: the closed
    windows, and the one still open when the program ended."""
    nb, bits = lay.ws_buckets, lay.ws_bits
    for side in range(2 if lay.ws_bytes else 0):
        base = at + lay.ws_at + side * lay.ws_bytes
        w = array("Q", data[base:base + (2 * nb + WS_OPEN_WORDS) * 8])
        windows, windows_set = w[:nb], w[nb:2 * nb]
        inserted, bits_set = w[2 * nb], w[2 * nb + 1]
        halves, open_half = [None] * nb, None
        if lay.ws_half_at is not None:
            halves = array("Q", data[base + lay.ws_half_at:base + lay.ws_half_at + nb * 8])
            # the open window's count when its draws were last a power of two
            checkpoint = 1 << (int(inserted).bit_length() - 1) if inserted else 0
            open_half = (w[2 * nb + 2], checkpoint) if 16 <= checkpoint < inserted else None
        for b in range(nb):
            if windows[b]:
                half = (None if halves[b] is None else
                        (distinct_lines(halves[b] / windows[b], bits), lay.ws_window // 2))
                c.windows[side].append((distinct_lines(windows_set[b] / windows[b], bits),
                                        lay.ws_window, windows[b], bits, half))
        if inserted:
            c.windows[side].append((distinct_lines(bits_set, bits), inserted, 1, bits,
                                    None if open_half is None else
                                    (distinct_lines(open_half[0], bits), open_half[1])))


def _read_part(path: Path):
    """(pid, first, argv, threads, {op: OpCounts}) of one count file, of
    either layout version."""
    lay, data = _read_layout(path)
    at_cmd = CMDLINE_AT[lay.version]
    argv = [a.decode(errors="replace") for a in data[at_cmd:at_cmd + lay.cmd_bytes].split(b"\0") if a]
    ops = {op: OpCounts() for op in OPS}
    for slot in range(lay.slots):
        for i, op in enumerate(OPS[:lay.nops]):
            at = lay.header_bytes + slot * lay.slot_bytes + i * lay.hist_bytes
            words = array("Q", data[at:at + lay.v1_words * 8])
            if len(words) < lay.v1_words or len(data) < at + lay.hist_bytes:
                raise PartialPart(f"{path} is truncated")
            _add_sizes(ops[op], data, at, words, lay)
            _add_windows(ops[op], data, at, lay)
    return lay.pid, lay.first, argv, lay.slots, ops


def merge_parts(parts_dir: Path) -> Recording:
    """Sums every count file (<pid>.<k>.mkrec) in parts_dir."""
    rec = Recording({op: OpCounts() for op in OPS})
    for path in sorted(parts_dir.glob("*.mkrec")):
        # <pid>.<k>.mkrec: a process still alive may still be writing its part
        owner = int(path.name.split(".")[0]) if path.name.split(".")[0].isdigit() else None
        alive = _process_name(owner) if owner and owner != os.getpid() else None
        try:
            pid, first, argv, threads, ops = _read_part(path)
        except PartialPart as e:
            # One unreadable part costs its own counts, never the others'.
            if alive is not None:
                rec.running.append((owner, alive, False))
            else:
                rec.skipped.append(str(e))
            continue
        if alive is not None:
            rec.running.append((owner, alive, True))
        for op in OPS:
            rec.ops[op].add(ops[op])
        rec.threads += threads
        if first:
            rec.processes += 1
            name = Path(argv[0]).name if argv else "?"
            rec.programs[name] = rec.programs.get(name, 0) + 1
    return rec


def write_command(parts_dir: Path, command: list):
    (parts_dir / PARTS_COMMAND).write_text(json.dumps(list(command)) + "\n")


def read_command(parts_dir: Path) -> list:
    """The command line an interrupted recording ran ([] if unknown)."""
    try:
        command = json.loads((parts_dir / PARTS_COMMAND).read_text())
        return [str(a) for a in command] if isinstance(command, list) else []
    except (OSError, ValueError):
        return []
