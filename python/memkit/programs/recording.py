# SPDX-License-Identifier: Apache-2.0
"""Recordings made by `memkit record`: the preload library's per-process
count files (src/preload/record.c) merged into size distributions in the
format of data/fleet-size-distributions/FORMAT.md, read back, and turned
into a prediction once size-distributions has replayed them.

A recording directory holds Memset.csv, Memcpy.csv, Memmove.csv (one per
function the program called; line 1 sizes, line 2 overlap, line 3
destination alignment, line 4 (copies) source alignment, each
`value:probability`) and summary.json: calls and bytes per function,
processes, the command line, the program's wall time and, per function, the
working-set estimate and the level the replay runs it at.  Recordings made
before the source alignments and working sets (summary format 1) have three
lines and none of those keys; they still load, replay and predict (hot)."""

from __future__ import annotations

import json
import math
import os
import re
import struct
from statistics import median
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError
from memkit.judging.judge import TRY_CONFIDENCE
from memkit.judging.stats import median_interval
from memkit.lab.sizes import fmt_size, parse_size
from memkit.store.outdir import check_target, remove_file, write_file

OPS = ("memset", "memcpy", "memmove")
FILES = {"memset": "Memset.csv", "memcpy": "Memcpy.csv", "memmove": "Memmove.csv"}
SUMMARY = "summary.json"
SUMMARY_FORMAT = 2   # 1 (no "format" key): before source alignments, working sets and the run time
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
LINE = 64         # the estimator draws 64-byte lines


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


def _read_part(path: Path):
    """(pid, first, argv, threads, {op: OpCounts}) of one count file, of
    either layout version."""
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
        # Only the slots handed out: the rest of the (sparse) file is zeros.
        data += f.read(header_bytes + min(used, slots) * slot_bytes - len(data))
    v1_words = exact + 2 * log_buckets + ALIGN_SLOTS + 8
    if version >= 2:
        hist_bytes, ws_at, ws_bytes, ws_buckets, ws_window, ws_bits = HEADER_V2.unpack_from(data, HEADER.size)
    else:
        hist_bytes, ws_at, ws_bytes, ws_buckets = v1_words * 8, 0, 0, 0
    repeats_at, ws_half_at = (HEADER_V3.unpack_from(data, HEADER.size + HEADER_V2.size) if version >= 3
                              else (None, None))
    at_cmd = CMDLINE_AT[version]
    argv = [a.decode(errors="replace") for a in
            data[at_cmd:at_cmd + cmd_bytes].split(b"\0") if a]
    ops = {op: OpCounts() for op in OPS}
    for slot in range(min(used, slots)):
        for i, op in enumerate(OPS[:nops]):
            at = header_bytes + slot * slot_bytes + i * hist_bytes
            words = array("Q", data[at:at + v1_words * 8])
            if len(words) < v1_words or len(data) < at + hist_bytes:
                raise PartialPart(f"{path} is truncated")
            sizes = words[:exact + log_buckets]
            log_sum = words[exact + log_buckets:exact + 2 * log_buckets]
            align_at = exact + 2 * log_buckets
            c = ops[op]
            _add_counts(c.sizes, sizes[:exact], range(exact))
            for b in range(log_buckets):
                n = sizes[exact + b]
                if n:
                    # Calls in one bucket are replayed at their mean size.
                    mean = round(log_sum[b] / n)
                    c.sizes[mean] = c.sizes.get(mean, 0) + n
            powers = [1 << k for k in range(7)]
            _add_counts(c.align, words[align_at:align_at + 7], powers)
            c.overlap += words[align_at + ALIGN_SLOTS]
            if repeats_at is not None:
                c.repeats = (c.repeats or 0) + struct.unpack_from("<Q", data, at + repeats_at)[0]
            _add_counts(c.src_align, words[align_at + ALIGN_SLOTS + 1:align_at + ALIGN_SLOTS + 8], powers)
            for side in range(2 if ws_bytes else 0):
                w = array("Q", data[at + ws_at + side * ws_bytes:
                                    at + ws_at + side * ws_bytes + (2 * ws_buckets + WS_OPEN_WORDS) * 8])
                windows, windows_set = w[:ws_buckets], w[ws_buckets:2 * ws_buckets]
                inserted, bits_set = w[2 * ws_buckets], w[2 * ws_buckets + 1]
                halves, open_half = [None] * ws_buckets, None
                if ws_half_at is not None:
                    at_half = at + ws_at + side * ws_bytes + ws_half_at
                    halves = array("Q", data[at_half:at_half + ws_buckets * 8])
                    # the open window's count when its draws were last a power of two
                    checkpoint = 1 << (int(inserted).bit_length() - 1) if inserted else 0
                    open_half = ((w[2 * ws_buckets + 2], checkpoint)
                                 if 16 <= checkpoint < inserted else None)
                for b in range(ws_buckets):
                    if windows[b]:
                        half = (None if halves[b] is None else
                                (distinct_lines(halves[b] / windows[b], ws_bits), ws_window // 2))
                        c.windows[side].append((distinct_lines(windows_set[b] / windows[b], ws_bits),
                                                ws_window, windows[b], ws_bits, half))
                if inserted:   # the window still open when the program ended
                    c.windows[side].append((distinct_lines(bits_set, ws_bits), inserted, 1, ws_bits,
                                            None if open_half is None else
                                            (distinct_lines(open_half[0], ws_bits), open_half[1])))
    return pid, first, argv, min(used, slots), ops


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


# ---- the working set ----
#
# record.c samples calls and draws lines of each sampled call (one per 2
# KiB, 1 to 64) per side into windows; a window of K draws that found D
# distinct lines says, if the calls' lines come from a region of P lines,
# D = P (1 - e^(-K/P)).  Each window's P, weighted by its draws; their
# median per side; the larger side per function (a copy waits for its
# slower side).  That P is the lab's working-set parameter (random lines of
# an arena per side), so the replay runs at it.

# Fewer draws than this (per side) make no estimate: too few calls sampled.
MIN_DRAWS = 16


def counting_noise(draws: int, bits: int) -> float:
    """The standard deviation of linear counting's distinct count (Whang et
    al. 1990): the hash collisions it corrects for on average but not each time."""
    t = draws / bits
    return math.sqrt(bits * (math.expm1(t) - t))


def region_lines(distinct: float, draws: int, bits: int) -> float:
    """P with P (1 - e^(-draws/P)) = distinct: the lines a window's draws came
    from; inf where the draws repeat no more than the counting's noise (5
    standard deviations, and at least 3 draws): no reuse seen, a region
    larger than the window tells.  At 3 standard deviations a stride over
    256 MiB (~2000 draws) read as a 7 MiB region in 1 recording of 30: the
    counting's tail is wider than a normal one's."""
    if draws - distinct <= max(3.0, 5 * counting_noise(draws, bits)):
        return math.inf
    return _solve_region(distinct, draws)


def _solve_region(distinct: float, draws: float) -> float:
    """P with P (1 - e^(-draws/P)) = distinct < draws (bisection: it rises with P)."""
    distinct = max(distinct, 1.0)
    lo, hi = distinct, distinct
    while hi * -math.expm1(-draws / hi) < distinct:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if mid * -math.expm1(-draws / mid) < distinct:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# Fewer draws at the earlier point cannot tell a share from a region: 4 KiB
# copies of one buffer (64 lines a side, ~70 draws there) read as 14-24%
# cold in 2 recordings of 6.
MIXTURE_MIN_DRAWS = 1024


def occupancy_variance(draws: float, region: float) -> float:
    """The variance of the distinct lines among `draws` uniform draws from
    `region` lines (which lines the draws happened to hit)."""
    if not region or math.isinf(region) or region < 2:
        return 0.0
    p, k = region, draws
    return max(0.0, p * (p - 1) * (1 - 2 / p) ** k + p * (1 - 1 / p) ** k - p * p * (1 - 1 / p) ** (2 * k))


def lines_after(draws: float, cold: float, region: float) -> float:
    """Distinct lines after `draws` draws, a share `cold` of them lines never
    drawn before, the rest from `region` lines."""
    hot = (1 - cold) * draws
    return cold * draws + (region * -math.expm1(-hot / region) if region > 0 and hot > 0 else 0.0)


def mixture(distinct: float, draws: int, half: Optional[tuple], bits: int) -> tuple[float, float]:
    """(cold share, region lines) of one window: the share of its draws that
    found lines never seen (from beyond any cache) and the region the others
    came from, fitted to its distinct lines at an earlier point (half:
    (distinct, draws), record.c's windows_half: half a closed window) and
    at all its draws.  One region finds fewer new lines as it fills; a few
    lines reused with a share of new ones find new ones at a steady rate.
    A cold share of 0 where the two points are one region's within the
    counting's noise (3 standard deviations), or where the earlier point is
    unknown (region_lines alone); 1 where nothing was reused."""
    region = region_lines(distinct, draws, bits)
    if math.isinf(region):
        return 1.0, math.inf
    if half is None or half[1] < MIXTURE_MIN_DRAWS:
        return 0.0, region
    half, half_draws = half
    noise = math.sqrt(counting_noise(half_draws, bits) ** 2 + occupancy_variance(half_draws, region))
    if lines_after(half_draws, 0.0, region) - half <= 3 * noise:
        return 0.0, region
    best = (math.inf, 0.0, region)
    top = distinct / draws
    for i in range(1, 201):
        cold = top * i / 200
        rest = distinct - cold * draws
        hot_draws = (1 - cold) * draws
        if rest >= hot_draws:
            continue   # the rest would be all new too: no region
        p = _solve_region(rest, hot_draws) if rest > 0 else 0.0
        err = abs(lines_after(half_draws, cold, p) - half)
        if err < best[0]:
            best = (err, cold, p)
    return best[1], best[2]


def _weighted_median(pairs) -> float:
    """The median of values weighted (value, weight)."""
    pairs = sorted(pairs)
    half, run = sum(w for _, w in pairs) / 2, 0
    for v, w in pairs:
        run += w
        if run >= half:
            return v
    return pairs[-1][0]


def side_lines(windows) -> tuple[Optional[float], float, int]:
    """(region lines or inf or None, cold share, draws) of one side's
    windows: the weighted medians of their mixtures (see mixture)."""
    draws = sum(w[1] * w[2] for w in windows)
    if draws < MIN_DRAWS:
        return None, 0.0, draws
    # A window of a few draws cannot show reuse (a short-lived process's):
    # it reads as no reuse, so it counts only where no window is larger.
    telling = [w for w in windows if w[1] >= MIN_DRAWS] or windows
    fits = [(mixture(d, k, half, bits), k * n) for d, k, n, bits, half in telling]
    return (_weighted_median([(region, wt) for (_, region), wt in fits]),
            _weighted_median([(cold, wt) for (cold, _), wt in fits]), draws)


# The hot layout of size-distributions keeps each side in a window of 64
# lines (WINDOW_LINES in bench/experiments/exp_size_distributions.c): a
# working set no larger is what `hot` already replays.
HOT_BYTES = 64 * LINE


def replay_ws(bytes_per_side: Optional[float], sides: int, l3_bytes: Optional[int]) -> Optional[str]:
    """The working set size-distributions replays an estimate at: "hot" up to
    the hot layout's window, "dram" beyond the L3 (all sides together) or
    where no reuse was seen, else the estimate as a size (the nearest power
    of two: "256K").  None without an estimate."""
    if bytes_per_side is None:
        return None
    if math.isinf(bytes_per_side) or (l3_bytes and bytes_per_side * sides > l3_bytes):
        return "dram"
    if bytes_per_side <= HOT_BYTES:
        return "hot"
    size = 1 << min(30, max(13, round(math.log2(bytes_per_side))))
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if size >= unit:
            return f"{size // unit}{suffix}"
    return str(size)


# A share of a function's calls from beyond the caches counts from COLD_MIN
# (below: the counting's noise on one region), and from COLD_ALL all of
# them do.
COLD_MIN = 0.05
COLD_ALL = 0.95


def working_set(c: OpCounts, op: str, l3_bytes: Optional[int]) -> dict:
    """summary.json's working_set entry of one function: the region its
    calls reuse (bytes_per_side, replayed at ws) and the share of its calls
    whose lines came from beyond any cache (cold_fraction: the side that has
    most, a copy waits for its slower side)."""
    sides = 1 if op == "memset" else 2
    lines, colds, draws = [], [], []
    for side in range(sides):
        p, cold, k = side_lines(c.windows[side])
        draws.append(k)
        if p is not None:
            lines.append(p)
            colds.append(cold)
    per_side = max(lines) * LINE if lines else None
    cold = max(colds) if colds else 0.0
    cold = 0.0 if cold < COLD_MIN else 1.0 if cold >= COLD_ALL else cold
    all_cold = cold == 1.0 and per_side is not None
    return {
        "lines_drawn": draws[0],   # on the destination side, by the sampled calls
        "bytes_per_side": None if per_side is None or math.isinf(per_side) else round(per_side),
        "no_reuse_seen": per_side is not None and math.isinf(per_side),
        "cold_fraction": round(cold, 3),
        "sides": sides,
        "ws": replay_ws(math.inf if all_cold else per_side, sides, l3_bytes),
    }


def ws_text(entry: Optional[dict]) -> str:
    """'256 KiB per side: ws=256K', for the closing lines and the report."""
    if not entry or not entry.get("ws"):
        return ("no estimate (too few calls sampled)" if entry else
                "no estimate (recorded before memkit estimated working sets)")
    if entry.get("no_reuse_seen"):
        size = "no reuse seen (beyond the caches)"
    else:
        size = f"{fmt_size(entry['bytes_per_side'])} per side"
    cold = entry.get("cold_fraction") or 0
    if 0 < cold < 1:
        return f"{size}, {cold:.0%} of the calls' lines from beyond the caches: ws={entry['ws']} and dram"
    return f"{size}: ws={entry['ws']}"


# ---- writing a recording ----

def _line(counts: dict) -> str:
    total = sum(counts.values())
    return ",".join(f"{k}:{c / total:.6g}" for k, c in sorted(counts.items()) if c)


_DIST_LINE = re.compile(r"[0-9]+:[0-9.e+-]+(,[0-9]+:[0-9.e+-]+)*")


def is_ours(path: Path) -> bool:
    """A recording's file memkit wrote (and may replace): summary.json a JSON
    object with the calls and processes memkit counts; a distribution file
    only beside such a summary, and every line `value:probability,...`."""
    try:
        summary = json.loads((path.parent / SUMMARY).read_text())
        if not (isinstance(summary, dict) and {"calls", "processes", "command"} <= summary.keys()):
            return False
        if path.name == SUMMARY:
            return True
        lines = path.read_text().splitlines()
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return path.name in FILES.values() and all(_DIST_LINE.fullmatch(l) for l in lines if l)


def write(rec: Recording, out: Path, command: list, exit_status=None, seconds: Optional[float] = None,
          l3_bytes: Optional[int] = None):
    """The CSV files of the functions called and summary.json, into out.
    seconds: the program's wall time; l3_bytes: this machine's L3, where the
    working sets turn into "dram"."""
    targets = [out / FILES[op] for op in OPS] + [out / SUMMARY]
    for path in targets:   # every refusal before the first file is written
        check_target(path, "the recording", is_ours)
    for op in OPS:
        path = out / FILES[op]
        c = rec.ops[op]
        if not c.calls:
            remove_file(path, "the recording", is_ours)   # from an earlier recording into this directory
            continue
        overlap = {0: c.calls - c.overlap, 1: c.overlap}
        lines = [_line(c.sizes), _line(overlap), _line(c.align), _line(c.src_align) if c.src_align else ""]
        if c.repeats is not None:   # the fifth line (FORMAT.md): how often a call site repeats its size
            lines.append(_line({0: c.calls - c.repeats, 1: c.repeats}))
        while not lines[-1]:
            lines.pop()
        write_file(path, "".join(l + "\n" for l in lines), "the recording", is_ours)
    summary = {
        "format": SUMMARY_FORMAT,
        "calls": {op: rec.ops[op].calls for op in OPS},
        "bytes": {op: rec.ops[op].bytes for op in OPS},
        "processes": rec.processes,
        "threads": rec.threads,
        "programs": rec.programs,
        "command": list(command),
        "exit_status": exit_status,   # None: unknown (recovered from an interrupted recording)
        "seconds": seconds,
        "working_set": {op: working_set(rec.ops[op], op, l3_bytes) for op in OPS if rec.ops[op].calls},
        # the share of calls whose size is their call site's previous one (a predictor learns them)
        "repeats": {op: round(rec.ops[op].repeats / rec.ops[op].calls, 4) for op in OPS
                    if rec.ops[op].calls and rec.ops[op].repeats is not None},
        "l3_bytes": l3_bytes,
    }
    write_file(out / SUMMARY, json.dumps(summary, indent=1) + "\n", "the recording", is_ours)
    return summary


# ---- reading a recording back (the report, tune, the replay) ----

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


def function_ws(summary: dict) -> dict:
    """function -> {working set its replay runs at: the share of its calls
    there}, for each function the recording has an estimate for (called,
    and enough calls sampled): the region its calls reuse, and dram for the
    share whose lines came from beyond the caches."""
    out = {}
    for op, e in (summary.get("working_set") or {}).items():
        if not e or not e.get("ws"):
            continue
        cold = e.get("cold_fraction") or 0
        out[op] = ({e["ws"]: 1.0} if e["ws"] == "dram" or not 0 < cold < 1
                   else {e["ws"]: round(1 - cold, 3), "dram": cold})
    return out


def recorded_ws(summary: dict) -> list[str]:
    """The working sets a replay of this recording runs at: hot, then each
    function's own (smallest first); none for a recording without estimates
    (made before them, or too few calls)."""
    levels = {ws for shares in function_ws(summary).values() for ws in shares}
    if not levels:
        return []
    order = {"hot": 0, "dram": 2}
    return ["hot"] + sorted(levels - {"hot"}, key=lambda w: (order.get(w, 1), parse_size(w) or 0))


def replay_arguments(args: list, data_dir: Optional[str]) -> list:
    """size-distributions' arguments for replaying data_dir (its data=
    argument, else $MEMKIT_DATA): a recording without ws= among them is
    replayed at its recorded working sets and hot (one without estimates at
    the experiment's own)."""
    for a in args:
        if a.startswith("data="):
            data_dir = a[len("data="):]
    if not data_dir or not is_recording(Path(data_dir)):
        return list(args)
    summary = load_summary(Path(data_dir))
    out = list(args)
    if not any(a.startswith("ws=") for a in args):
        levels = recorded_ws(summary)
        out += ["ws=" + ",".join(levels)] if levels else []
    if not any(a.startswith(("calls=", "batch=")) for a in args):
        out.append(f"batch={REPLAY_BATCH}")
    return out


# A replay batch of a function draws at most this many bytes of its sizes (a
# function of small calls its 50,000 calls, more than a branch predictor
# learns): a program of 16 MiB memmoves replayed 50,000 of them a batch (800
# GB) and did not finish in 150 s; with one count for every function, its
# memsets got 12 calls a batch, too short to time.
REPLAY_BATCH = "128M"


# ---- the prediction ----

# A replay races the preload library too (peer=libmemkit_preload.so): memkit as
# a program gets it, through the shim's jump, under this series name.
PRELOAD_SERIES = "memkit_preload"


def replay_times(ms, rec_dir) -> dict:
    """{(distribution, ws): {"glibc": ns, "memkit": ns, "preload": ns,
    "ws_bytes": bytes}}: size-distributions' ns per call (the medians) when
    it replayed rec_dir ("preload": through the preload library, where the
    replay raced it); ws None in records from before there were several."""
    want = str(Path(rec_dir).resolve())
    out: dict = {}
    for m in ms:
        p = m.get("params") or {}
        if p.get("data") != want or m.get("metric") != "ns_per_call" or not m.get("value"):
            continue
        who = m["series"].split()[0]
        who = "preload" if who == PRELOAD_SERIES else who
        if who in ("glibc", "memkit", "preload"):
            at = out.setdefault((p.get("distribution"), p.get("ws")), {"ws_bytes": p.get("ws_bytes")})
            at[who] = m["value"]
            if m.get("ratios"):   # per round, glibc's time over this one's: the prediction's interval
                at[who + "_ratios"] = m["ratios"]
    return {k: v for k, v in out.items() if "glibc" in v and "memkit" in v}


def latest_replay(db, rec_dir) -> dict:
    """replay_times of the newest run in the database db that replayed rec_dir ({}: none)."""
    for run in reversed(db.runs()):
        times = replay_times(db.measurements(run["id"], "size-distributions"), rec_dir)
        if times:
            return times
    return {}


@dataclass
class OpPrediction:
    op: str
    calls: int
    ws: Optional[str]        # the working set the replay measured it at
    glibc_ns: float
    memkit_ns: float         # through the preload library where the replay raced it
    note: str = ""           # why not at the recorded working set
    ratio_interval: Optional[tuple] = None   # glibc's time over memkit's per call, its ~95% interval
    mean_bytes: float = 0.0  # the recorded calls' mean size

    @property
    def saving_s(self) -> float:
        return self.calls * (self.glibc_ns - self.memkit_ns) * 1e-9

    @property
    def glibc_s(self) -> float:
        """What these calls take on glibc's routines."""
        return self.calls * self.glibc_ns * 1e-9

    def saving_interval(self) -> tuple[float, float]:
        if not self.ratio_interval:
            return self.saving_s, self.saving_s
        lo, hi = self.ratio_interval
        return self.glibc_s * (1 - 1 / lo), self.glibc_s * (1 - 1 / hi)


@dataclass
class Prediction:
    ops: list                       # [OpPrediction]
    unreplayed: list                # functions called that no replay measured
    run_seconds: Optional[float]    # the recorded run's wall time (it ran memkit's routines)

    @property
    def saving_s(self) -> float:
        return sum(o.saving_s for o in self.ops)

    @property
    def glibc_seconds(self) -> Optional[float]:
        """The run's time had glibc's routines served its calls."""
        return None if self.run_seconds is None else self.run_seconds + self.saving_s

    @property
    def speedup(self) -> Optional[float]:
        """glibc's time over memkit's, > 1: faster with memkit."""
        if not self.run_seconds:
            return None
        return self.glibc_seconds / self.run_seconds

    def speedup_interval(self) -> Optional[tuple[float, float]]:
        """The speed-up with each function's per-call speed-up at the ends
        of its replay's ~95% interval (all low, all high): the replay's
        noise, not how well it stands for the program."""
        if not self.run_seconds:
            return None
        lo = sum(o.saving_interval()[0] for o in self.ops)
        hi = sum(o.saving_interval()[1] for o in self.ops)
        base = self.glibc_seconds
        return base / (base - lo), base / (base - hi)

    @property
    def calls_glibc_s(self) -> float:
        """What the replayed calls take on glibc's routines: the most memkit can save."""
        return sum(o.glibc_s for o in self.ops)

    def against(self, measured: float, interval: tuple[float, float]) -> str:
        """One line: whether a measured speed-up (memkit try's median ratio
        and its interval) agrees with this prediction, and if not, why it
        cannot."""
        pi = self.speedup_interval()
        if self.speedup is None or pi is None:
            return "no prediction to compare: the recording has no run time"
        said = (f"predicted {self.speedup:.3f}x ({pi[0]:.3f}-{pi[1]:.3f}), measured {measured:.3f}x "
                f"({interval[0]:.3f}-{interval[1]:.3f})")
        if pi[0] <= measured <= pi[1]:
            return f"{said}: the prediction holds"
        if interval[0] <= pi[1] and pi[0] <= interval[1]:
            return f"{said}: the intervals overlap"
        moved = abs(self.glibc_seconds * (1 - 1 / measured))
        if moved > self.calls_glibc_s:
            return (f"{said}: more than the calls can explain (they take {self.calls_glibc_s:.3g} s on "
                    f"glibc's routines, the run moved {moved:.3g} s): the rest of the program moved "
                    "(where its code and data landed, the preload's start-up)")
        top = max(self.ops, key=lambda o: abs(o.saving_s))
        if top.mean_bytes >= FRESH_PAGES_FROM:
            return (f"{said}: the replay does not stand for the program here: most of the predicted "
                    f"change is in {top.op}'s calls of {fmt_size(round(top.mean_bytes))} on average, whose "
                    "destination in a program is often memory just allocated, with page faults the "
                    "replay's arenas (faulted in advance) do not pay (copy-read dst=fresh times them)")
        return (f"{said}: the replay does not stand for the program here (its calls' order and reuse, "
                "which the replay draws afresh at the recorded working set)")

    def headline(self) -> str:
        """'predicted: memkit saves 0.21 s of 1.90 s (1.12x)'."""
        if not self.ops:
            return "predicted: nothing (no replay of this recording measured its functions)"
        s = self.saving_s
        verb = f"saves {s:.3g} s" if s >= 0 else f"costs {-s:.3g} s more"
        if self.speedup is None:
            return f"predicted: memkit {verb} (the recording has no run time)"
        lo, hi = self.speedup_interval()
        return (f"predicted: memkit {verb} of {self.glibc_seconds:.3g} s ({self.speedup:.3f}x, "
                f"replay noise {lo:.3f}-{hi:.3f})")

    def lines(self) -> list[str]:
        """The headline, then how: per function calls x per-call saving."""
        out = [self.headline()]
        for o in self.ops:
            out.append(f"  {o.op}: {o.calls:,} calls x ({o.glibc_ns:.1f} - {o.memkit_ns:.1f} ns) at ws={o.ws}"
                       f" = {o.saving_s:+.3g} s{' (' + o.note + ')' if o.note else ''}")
        if self.unreplayed:
            out.append(f"  not replayed: {', '.join(self.unreplayed)} (left out)")
        if self.run_seconds is not None:
            out.append(f"  the recorded run took {self.run_seconds:.3g} s on memkit's routines (the recorder "
                       f"included); on glibc's, {self.glibc_seconds:.3g} s predicted")
        return out


# Calls this large are mostly into memory just allocated (numpy's 16 MiB
# copies: predicted 1.30x from a pre-faulted replay, 1.14x measured, Zen 5).
FRESH_PAGES_FROM = 1 << 20


def _nearest_replayed(replayed: dict, want_bytes: Optional[float]) -> str:
    """The replayed working set closest (in log size) to want_bytes (hot's: its window)."""
    def size(ws):
        return HOT_BYTES if ws == "hot" else (replayed[ws].get("ws_bytes") or HOT_BYTES)
    target = want_bytes if want_bytes and not math.isinf(want_bytes) else max(size(w) for w in replayed)
    return min(replayed, key=lambda w: abs(math.log(size(w) / target)))


def _mixed(op: str, calls: int, parts: list, note: str) -> OpPrediction:
    """One function's prediction from its parts (working set replayed, its
    share of the calls, glibc ns, memkit ns, per-call speed-up interval):
    the calls' mean times, and the interval of their speed-up with every
    part at the same end of its own."""
    glibc = sum(sh * g for _, sh, g, _, _ in parts)
    memkit = sum(sh * m for _, sh, _, m, _ in parts)
    interval = None
    if all(ci for *_, ci in parts):
        interval = tuple(glibc / sum(sh * g / ci[end] for _, sh, g, _, ci in parts) for end in (0, 1))
    ws = " + ".join(w if sh == 1 else f"{w} ({sh:.0%})" for w, sh, *_ in parts)
    return OpPrediction(op, calls, ws, glibc, memkit, note, interval)


def predict(summary: dict, replay: dict) -> Prediction:
    """calls x (glibc ns - memkit ns) per function at its recorded working set,
    from a replay (replay_times), against the recorded run's wall time:
    predict(load_summary(d), replay_times(measurements, d)).  A function
    whose working set the replay did not measure takes the nearest one it
    did (said in its note); a recording without estimates, hot."""
    estimates = summary.get("working_set") or {}
    ops, unreplayed = [], []
    for op in OPS:
        calls = (summary.get("calls") or {}).get(op, 0)
        if not calls:
            continue
        dist = FILES[op][:-4]
        replayed = {ws: t for (d, ws), t in replay.items() if d == dist}
        if not replayed:
            unreplayed.append(op)
            continue
        est = estimates.get(op) or {}
        shares, notes = function_ws(summary).get(op), []
        if not shares:
            shares, notes = {"hot": 1.0}, ["no working-set estimate: hot"]
        parts = []   # (share, glibc ns, memkit ns, per-call speed-up interval)
        for want, share in shares.items():
            if want not in replayed:
                got = _nearest_replayed(replayed, math.inf if want == "dram" else est.get("bytes_per_side"))
                notes.append(f"ws={want} not replayed, nearest: {got}")
                want = got
            t = replayed[want]
            who = "preload" if "preload" in t else "memkit"
            ratios = t.get(who + "_ratios")
            if ratios and len(ratios) >= 6:   # per round, paired: the median and its interval
                parts.append((want, share, t["glibc"], t["glibc"] / median(ratios),
                              median_interval(ratios, TRY_CONFIDENCE)))
            else:
                parts.append((want, share, t["glibc"], t[who], None))
        if any("preload" not in replayed[w] for w in shares if w in replayed):
            notes.append("memkit called directly: the preload's jump not counted")
        o = _mixed(op, calls, parts, "; ".join(notes))
        o.mean_bytes = ((summary.get("bytes") or {}).get(op) or 0) / calls
        ops.append(o)
    return Prediction(ops, unreplayed, summary.get("seconds"))
