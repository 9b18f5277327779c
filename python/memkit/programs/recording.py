# SPDX-License-Identifier: Apache-2.0
"""Recordings made by `memkit record`: the preload library's per-process
count files (src/preload/record.c; memkit.programs.count_files) merged into
size distributions in the
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
import re
from statistics import median
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError
from memkit.judging.judge import TRY_CONFIDENCE
from memkit.judging.stats import median_interval
from memkit.lab.sizes import fmt_size, parse_size
from memkit.programs.count_files import OPS, OpCounts, Recording
from memkit.programs.ws_estimate import HOT_BYTES, LINE, replay_ws, side_lines
from memkit.store.outdir import check_target, remove_file, write_file

FILES = {"memset": "Memset.csv", "memcpy": "Memcpy.csv", "memmove": "Memmove.csv"}
SUMMARY = "summary.json"
SUMMARY_FORMAT = 2   # 1 (no "format" key): before source alignments, working sets and the run time


def files_in(out: Path) -> list[str]:
    """The files of a recording that out already holds."""
    return [f for f in (*FILES.values(), SUMMARY) if (out / f).exists()]


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
