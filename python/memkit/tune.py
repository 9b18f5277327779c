"""`memkit tune`'s decisions: from interleaved timings of memkit's own paths,
each strategy forced through MEMKIT_TUNABLES in its own process, to the
thresholds of this machine's profile, and the profile file itself.

The rule: at each measured size the strategy the table's default would run
there (the incumbent) stays, unless another strategy was faster in enough
paired rounds for a one-sided sign test to say p <= ALPHA, and by at least
MARGIN at the median.  A threshold moves off its default only where those
per-size choices put a different strategy on a measured size than the
default does; the profile says at which sizes and with what confidence.

A profile is MEMKIT_TUNABLES settings, one `name=value` a line, `#`
comments, and a `cpu=` line naming the CPU it was measured on (libmemkit
ignores it on another model).  The library looks for it at $MEMKIT_PROFILE,
else $XDG_CONFIG_HOME/memkit/profile, else ~/.config/memkit/profile;
MEMKIT_TUNABLES overrides it.
"""

from __future__ import annotations

import datetime
import math
import os
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Optional

ALPHA = 0.01      # one-sided sign test: how unlikely a win this consistent is by chance
MARGIN = 0.03     # and the median speed-up must be at least this


@dataclass(frozen=True)
class Strategy:
    """One way memkit can run a size range, forced through MEMKIT_TUNABLES."""
    name: str
    family: str                 # "memset" or "memcpy"
    settings: tuple             # ((tunable, value), ...)
    says: str                   # in words

    def tunables(self) -> str:
        return ":".join(f"{k}={v}" for k, v in self.settings)


NEVER = "never"
STRATEGIES = [
    Strategy("loop", "memset", (("rep_stosb_threshold", NEVER), ("nt_threshold", NEVER),
                                ("nt_threshold_zero", NEVER)), "the vector loop"),
    Strategy("rep_stosb", "memset", (("rep_stosb_threshold", 0), ("nt_threshold", NEVER),
                                     ("nt_threshold_zero", NEVER)), "rep stosb"),
    Strategy("nt", "memset", (("rep_stosb_threshold", NEVER), ("nt_threshold", 0),
                              ("nt_threshold_zero", 0)), "non-temporal stores"),
    Strategy("loop", "memcpy", (("rep_movsb_threshold", NEVER), ("nt_copy_threshold", NEVER)),
             "the vector loop"),
    Strategy("rep_movsb", "memcpy", (("rep_movsb_threshold", 0), ("rep_movsb_stop", NEVER),
                                     ("nt_copy_threshold", NEVER)), "rep movsb"),
    Strategy("nt", "memcpy", (("rep_movsb_threshold", NEVER), ("nt_copy_threshold", 0)),
             "non-temporal stores"),
]

# The probe's workloads: op -> (family, in words).
WORKLOADS = {
    "set0": ("memset", "memset of zero"),
    "set": ("memset", "memset of a non-zero value"),
    "copy": ("memcpy", "memcpy, aligned"),
    "copy3": ("memcpy", "memcpy, destination 3 bytes off"),
}


def strategies(family: str) -> list[Strategy]:
    return [s for s in STRATEGIES if s.family == family]


def candidate_name(s: Strategy) -> str:
    return f"{s.family}:{s.name}"


def default_profile_path(env=os.environ) -> Path:
    if env.get("MEMKIT_PROFILE") not in (None, "", "none"):
        return Path(env["MEMKIT_PROFILE"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "."), ".config")
    return Path(base) / "memkit" / "profile"


def parse_tunables(text: str) -> dict[str, Optional[int]]:
    """"a=4096:b=never" -> {"a": 4096, "b": None}; non-numeric values dropped."""
    out = {}
    for item in text.split(":"):
        k, _, v = item.partition("=")
        if v == NEVER:
            out[k] = None
        elif v.isdigit():
            out[k] = int(v)
    return out


def fmt_size(n: Optional[int]) -> str:
    if n is None:
        return "never"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def size_grid(lo: int, hi: int, per_octave: int, offset: float = 0.0) -> list[int]:
    """Sizes from lo to hi, per_octave a doubling, starting `offset` of a
    step above lo; multiples of 64 bytes."""
    out, i = [], 0
    while True:
        s = int(round(lo * 2 ** ((i + offset) / per_octave) / 64)) * 64
        if s > hi:
            return out
        if not out or s > out[-1]:
            out.append(s)
        i += 1


# ---- statistics on paired rounds ----

def sign_test(wins: int, n: int) -> float:
    """One-sided: P(at least `wins` of n fair coin flips)."""
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n if n else 1.0


def wins_needed(n: int, alpha: float = ALPHA) -> Optional[int]:
    """Fewest wins of n that the sign test accepts; None when n is too few."""
    return next((w for w in range(n + 1) if sign_test(w, n) <= alpha), None)


@dataclass
class Evidence:
    """A challenger against an incumbent at one size, over paired rounds."""
    challenger: str
    incumbent: str
    size: int
    speedups: list[float]       # per round: incumbent time / challenger time (> 1: challenger faster)

    @property
    def rounds(self) -> int:
        return len(self.speedups)

    @property
    def wins(self) -> int:
        return sum(r > 1 for r in self.speedups)

    @property
    def losses(self) -> int:
        return sum(r < 1 for r in self.speedups)

    @property
    def median(self) -> float:
        return median(self.speedups)

    @property
    def p_faster(self) -> float:
        return sign_test(self.wins, self.rounds)

    @property
    def p_slower(self) -> float:
        return sign_test(self.losses, self.rounds)

    def faster(self, alpha=ALPHA, margin=MARGIN) -> bool:
        return self.p_faster <= alpha and self.median >= 1 + margin

    def slower(self, alpha=ALPHA, margin=MARGIN) -> bool:
        return self.p_slower <= alpha and self.median <= 1 / (1 + margin)

    def says(self) -> str:
        return (f"{self.median:.2f}x, faster in {self.wins}/{self.rounds} rounds "
                f"(sign test p={self.p_faster:.2g})")


# times: {candidate: {(op, size): [ns per call, one per round]}}
Times = dict


def paired(times: Times, challenger: str, incumbent: str, ops: list[str], size: int) -> Evidence:
    """Per round, the geometric mean over ops of incumbent/challenger time."""
    per_op = [list(zip(times[incumbent][(op, size)], times[challenger][(op, size)])) for op in ops]
    n = min(len(p) for p in per_op)
    speedups = [math.exp(sum(math.log(p[k][0] / p[k][1]) for p in per_op) / len(per_op))
                for k in range(n)]
    return Evidence(challenger, incumbent, size, speedups)


@dataclass
class Pick:
    """What runs at one size: the default's strategy unless evidence moved it."""
    size: int
    default: str
    chosen: str
    evidence: Optional[Evidence]   # the winning challenger's, when chosen != default


def pick(times: Times, family: str, names: list[str], ops: list[str], size: int,
         default: str) -> Pick:
    """The fastest challenger that beats the incumbent with confidence on
    the ops together and is not confidently slower on any one of them."""
    best = None
    for name in names:
        if name == default:
            continue
        ch, inc = f"{family}:{name}", f"{family}:{default}"
        ev = paired(times, ch, inc, ops, size)
        if not ev.faster() or any(paired(times, ch, inc, [op], size).slower() for op in ops):
            continue
        if best is None or ev.median > best.median:
            best = ev
    if best is None:
        return Pick(size, default, default, None)
    return Pick(size, default, best.challenger.split(":", 1)[1], best)


# ---- the defaults' strategy at a size ----

def memset_default(t: dict, value_zero: bool, size: int) -> str:
    nt_from = t.get("nt_threshold_zero" if value_zero else "nt_threshold")
    if nt_from is not None and size >= nt_from:
        return "nt"
    rep = t.get("rep_stosb_threshold")
    return "rep_stosb" if rep is not None and size >= rep else "loop"


def memcpy_default(t: dict, size: int) -> str:
    rep, stop = t.get("rep_movsb_threshold"), t.get("rep_movsb_stop")
    if rep is not None and size >= rep and (stop is None or size < stop):
        return "rep_movsb"
    nt = t.get("nt_copy_threshold")
    return "nt" if nt is not None and size >= nt else "loop"


# ---- from picks to thresholds ----

@dataclass
class Choice:
    """One tunable: its default, the value measured, and why."""
    name: str
    default: Optional[int]          # None = never
    value: Optional[int]
    why: str
    moved: bool

    def setting(self) -> str:
        return f"{self.name}={NEVER if self.value is None else self.value}"


def first_grid_size(grid: list[int], threshold: Optional[int]) -> Optional[int]:
    """The smallest grid size a threshold applies to (None: none)."""
    if threshold is None:
        return None
    return next((s for s in grid if s >= threshold), None)


def suffix_start(picks: list[Pick], strategy: str) -> Optional[int]:
    """The smallest size from which every larger pick is `strategy`."""
    start = None
    for p in reversed(picks):
        if p.chosen != strategy:
            break
        start = p.size
    return start


def evidence_text(picks: list[Pick], sizes: set) -> str:
    """The evidence at the sizes whose strategy changed, in one phrase."""
    evs = [p.evidence for p in picks if p.size in sizes and p.evidence]
    if not evs:
        return ""
    lo, hi = min(e.median for e in evs), max(e.median for e in evs)
    worst = max(evs, key=lambda e: e.p_faster)
    span = (fmt_size(evs[0].size) if len(evs) == 1
            else f"{fmt_size(evs[0].size)}..{fmt_size(evs[-1].size)} ({len(evs)} sizes)")
    speed = f"{lo:.2f}x" if len(evs) == 1 else f"{lo:.2f}-{hi:.2f}x"
    return (f"at {span} {speed} faster than the default's choice, in at least "
            f"{worst.wins}/{worst.rounds} rounds at each (sign test p<={worst.p_faster:.2g})")


def threshold(name: str, default: Optional[int], measured_from: Optional[int],
              grid: list[int], picks: list[Pick], strategy: str, what: str) -> Choice:
    """The default stays when it puts `strategy` on the same measured sizes
    as the measurement does; else the measured grid size."""
    if first_grid_size(grid, default) == measured_from:
        why = (f"{what}: the default puts it on the same sizes as measured "
               f"({fmt_size(grid[0])}..{fmt_size(grid[-1])})")
        return Choice(name, default, default, why, False)
    changed = {p.size for p in picks if (p.chosen == strategy) != (p.default == strategy)}
    where = f"from {fmt_size(measured_from)}" if measured_from is not None else "never"
    why = f"{what} {where} (default {fmt_size(default)}): {evidence_text(picks, changed)}"
    return Choice(name, default, measured_from, why, True)


def decide_memset(times: Times, grid: list[int], defaults: dict) -> tuple[list[Choice], dict]:
    names = [s.name for s in strategies("memset")]
    picks = {}
    for op, zero in (("set0", True), ("set", False)):
        picks[op] = [pick(times, "memset", names, [op], s, memset_default(defaults, zero, s)) for s in grid]
    out = [threshold("nt_threshold_zero", defaults.get("nt_threshold_zero"), suffix_start(picks["set0"], "nt"),
                     grid, picks["set0"], "nt", "non-temporal stores for zero fills"),
           threshold("nt_threshold", defaults.get("nt_threshold"), suffix_start(picks["set"], "nt"),
                     grid, picks["set"], "nt", "non-temporal stores for non-zero fills")]
    # rep stosb against the vector loop, one threshold for both values: on
    # the sizes below both non-temporal thresholds, judged on both together.
    nt_from = min((c.value for c in out if c.value is not None), default=None)
    below = [s for s in grid if nt_from is None or s < nt_from]
    rep_default = defaults.get("rep_stosb_threshold")
    rep_picks = [pick(times, "memset", ["loop", "rep_stosb"], ["set0", "set"], s,
                      "rep_stosb" if rep_default is not None and s >= rep_default else "loop")
                 for s in below]
    if below:
        out.append(threshold("rep_stosb_threshold", rep_default, suffix_start(rep_picks, "rep_stosb"),
                             below, rep_picks, "rep_stosb", "rep stosb (zero and non-zero fills)"))
    picks["rep"] = rep_picks
    return out, picks


def decide_memcpy(times: Times, grid: list[int], defaults: dict) -> tuple[list[Choice], dict]:
    names = [s.name for s in strategies("memcpy")]
    picks = [pick(times, "memcpy", names, ["copy", "copy3"], s, memcpy_default(defaults, s)) for s in grid]
    out = [threshold("nt_copy_threshold", defaults.get("nt_copy_threshold"), suffix_start(picks, "nt"),
                     grid, picks, "nt", "non-temporal copies (aligned and misaligned together)")]
    # The rep movsb window: the first run of sizes where it was picked.
    run = []
    for p in picks:
        if p.chosen == "rep_movsb":
            run.append(p.size)
        elif run:
            break
    rep_from = run[0] if run else None
    after = [s for s in grid if run and s > run[-1]]
    stop = after[0] if after else None
    d_rep, d_stop = defaults.get("rep_movsb_threshold"), defaults.get("rep_movsb_stop")
    rep = threshold("rep_movsb_threshold", d_rep, rep_from, grid, picks, "rep_movsb", "rep movsb")
    out.append(rep)
    if rep.moved and rep.value is not None:
        # The window's end matters only where the window is.
        in_grid = [s for s in grid if s >= rep.value]
        out.append(threshold("rep_movsb_stop", d_stop, stop, in_grid, picks, "rep_movsb",
                             "rep movsb stops"))
    return out, {"copy": picks}


DECIDERS = {"memset": decide_memset, "memcpy": decide_memcpy}


# ---- the profile ----

def cpu_line(fp: dict) -> str:
    """The profile's "cpu=" line, which libmemkit compares with the CPU it runs on."""
    return (f"cpu={fp.get('vendor', '?')} family={fp.get('family', '?')} model={fp.get('model', '?')} "
            f"microcode={fp.get('microcode', '?')}")


def write_profile(path: Path, choices: list[Choice], fingerprint: dict, method: str) -> None:
    """Writes the settings that moved off the defaults; the others as
    comments, so a new memkit's table still applies to them."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    lines = [
        "# memkit profile, written by `memkit tune`; read by libmemkit at load time.",
        f"# machine: {fingerprint.get('cpu_model', '?')} (microcode {fingerprint.get('microcode', '?')}), "
        f"kernel {fingerprint.get('kernel', '?')}, glibc {fingerprint.get('glibc', '?')}",
        f"# measured: {now}.  MEMKIT_TUNABLES overrides any line; delete this file to go back",
        "# to the built-in defaults.  `memkit tune --check` measures what this profile changes.",
        f"# method: {method}",
        "",
        "# the CPU measured on: libmemkit ignores this profile on another vendor, family or model",
        cpu_line(fingerprint),
    ]
    for c in choices:
        if c.moved:
            lines += ["", f"# {c.why}", c.setting()]
    kept = [c for c in choices if not c.moved]
    if kept:
        lines += ["", "# kept at the built-in default (not written, so a newer memkit's table applies):"]
        lines += [f"#   {c.name}={fmt_size(c.default) if c.default is not None else NEVER}: {c.why}"
                  for c in kept]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)   # a reader never sees half a profile
