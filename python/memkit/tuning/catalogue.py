# SPDX-License-Identifier: Apache-2.0
"""The strategies `memkit tune` races: each family's ways of running a size
range, forced through MEMKIT_TUNABLES settings (and those settings as text),
the sizes timed, and which strategy memkit runs at a size under given
tunables (Paths, asked of memkit-tunables)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from memkit.lab import experiments as lab


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

# The parallel engine cuts work into 2 MiB chunks: below two there is nothing to share.
FAMILY_MIN_SIZE = {"parallel": 1 << 20}


def thread_counts(cpus: int) -> list[int]:
    """The pool sizes worth trying: 2, 4, 8 and the CPU count, up to 8."""
    return sorted({n for n in (2, 4, 8, min(cpus, 8)) if 2 <= n <= cpus})


# rep movsb with the other alignment condition than the defaults' (1: any
# dst - src; 64: only a multiple of 64, as on AMD): on the misaligned copy
# inside rep movsb's window it decides rep_movsb_align (decide_align).
ALIGN_FLIP = "rep_movsb_flip"


def flipped_align(defaults: dict) -> int:
    return 64 if defaults.get("rep_movsb_align") == 1 else 1


def strategies(family: str, cpus: int = 1, defaults: Optional[dict] = None) -> list[Strategy]:
    """A family's strategies; with the defaults, memcpy's include the
    alignment flip (ALIGN_FLIP)."""
    if family == "memcpy" and defaults is not None:
        a = flipped_align(defaults)
        return [s for s in STRATEGIES if s.family == family] + [
            Strategy(ALIGN_FLIP, family, (("rep_movsb_threshold", 0), ("rep_movsb_stop", NEVER),
                                          ("rep_movsb_align", a), ("nt_copy_threshold", NEVER)),
                     f"rep movsb with rep_movsb_align={a}")]
    if family == "parallel":
        return [Strategy("one", family, (("parallel_threshold", NEVER),), "one thread")] + [
            Strategy(f"threads={n}", family, (("parallel_threshold", 0), ("threads", n)), f"{n} threads")
            for n in thread_counts(cpus)]
    return [s for s in STRATEGIES if s.family == family]


def family_grid(family: str, grid: list[int]) -> list[int]:
    return [s for s in grid if s >= FAMILY_MIN_SIZE.get(family, 0)]


def candidate_name(s: Strategy) -> str:
    return f"{s.family}:{s.name}"


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


def tunables_text(t: dict) -> str:
    """parse_tunables' inverse, names in order: the MEMKIT_TUNABLES spec
    of a dict (the default pool's size, "pool_threads", is no tunable)."""
    return ":".join(f"{k}={NEVER if v is None else v}" for k, v in sorted(t.items()) if k != "pool_threads")


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


# ---- the strategy memkit runs at a size ----

class Paths:
    """Which strategy memkit runs for a cell (op, size) under tunables t (a
    parse_tunables dict; "pool_threads": the default pool's size): asked of
    the library, which decides it once (lab.paths, src/internal.h
    mk_set_path/mk_copy_path), and remembered; never decided here."""

    def __init__(self, bench_dir: Path):
        self.bench_dir = bench_dir
        self.known: dict = {}
        self._workloads: Optional[dict] = None

    @property
    def workloads(self) -> dict:
        """The timed workloads, op -> (family, in words), in their order: the
        library's table (src/diagnostics/workloads.def, through memkit-tunables)."""
        if self._workloads is None:
            self._workloads = {w["op"]: (w["family"], w["words"])
                               for w in lab.tunables(self.bench_dir)["workloads"]}
        return self._workloads

    def ops(self, family: str) -> list[str]:
        return [op for op, (fam, _) in self.workloads.items() if fam == family]

    def of(self, t: dict, op: str, sizes: list[int]) -> list[str]:
        spec = tunables_text(t)
        missing = [s for s in dict.fromkeys(sizes) if (spec, op, s) not in self.known]
        if missing:
            for s, p in zip(missing, self.ask(spec, op, missing)):
                self.known[(spec, op, s)] = p
        got = [self.known[(spec, op, s)] for s in sizes]
        # the parallel engine's ("one loop", "pool nt"): the pool named by its size
        return [f"threads={t.get('pool_threads')}" + p[4:] if p.startswith("pool ") else p for p in got]

    def ask(self, spec: str, op: str, sizes: list[int]) -> list[str]:
        return lab.paths(self.bench_dir, spec, op, sizes)

    def at(self, t: dict, op: str, size: int) -> str:
        return self.of(t, op, [size])[0]

    def of_cells(self, t: dict, cells) -> dict:
        """{(op, size): strategy} for many cells, one question to the library per op."""
        by_op: dict = {}
        for op, size in cells:
            by_op.setdefault(op, []).append(size)
        return {(op, size): p for op, sizes in by_op.items() for size, p in zip(sizes, self.of(t, op, sizes))}
