"""`memkit tune`'s analysis: from the lab's measurements to this machine's
crossover points, and the profile file the library reads at load time.

A profile is MEMKIT_TUNABLES settings, one `name=value` a line, with `#`
comments saying why each value was chosen.  The library looks for it at
$MEMKIT_PROFILE, else $XDG_CONFIG_HOME/memkit/profile, else
~/.config/memkit/profile; MEMKIT_TUNABLES overrides it.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Iterable, Optional

NEVER = None          # a threshold the challenger never reaches
MARGIN = 0.03         # a win must be at least this much beyond the incumbent


def default_profile_path(env=os.environ) -> Path:
    if env.get("MEMKIT_PROFILE") not in (None, "", "none"):
        return Path(env["MEMKIT_PROFILE"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "."), ".config")
    return Path(base) / "memkit" / "profile"


@dataclass
class Choice:
    """One tunable's value and the reason, in words."""
    name: str
    value: Optional[int]          # bytes or a count; None = "never"
    why: str

    def setting(self) -> str:
        return f"{self.name}={'never' if self.value is None else self.value}"


@dataclass
class Curve:
    """Throughput (higher is better) of one method by size."""
    method: str
    points: dict[int, float] = field(default_factory=dict)


def curves(measurements: Iterable[dict], metric: str, where: dict | None = None) -> dict[str, Curve]:
    """Group measurements of one metric (with params matching `where`) by
    series, keyed by their size param.  Repeated points are medianed."""
    acc: dict[str, dict[int, list[float]]] = {}
    for m in measurements:
        p = m.get("params", {})
        if m.get("metric") != metric or "size" not in p or m.get("value") is None:
            continue
        if where and any(p.get(k) != v for k, v in where.items()):
            continue
        acc.setdefault(m["series"], {}).setdefault(int(p["size"]), []).append(float(m["value"]))
    return {s: Curve(s, {k: median(v) for k, v in pts.items()}) for s, pts in acc.items()}


def best_of(cs: list[Curve]) -> Curve:
    """The pointwise best of several curves (the incumbent a challenger must beat)."""
    sizes = set.intersection(*(set(c.points) for c in cs)) if cs else set()
    return Curve("+".join(c.method for c in cs), {s: max(c.points[s] for c in cs) for s in sizes})


def crossover(challenger: Curve, incumbent: Curve, below: Optional[int] = None,
              margin: float = MARGIN) -> Optional[int]:
    """The smallest measured size from which the challenger beats the
    incumbent by `margin` at every measured size up to `below` (exclusive);
    None if it never does so through the largest size."""
    sizes = sorted(s for s in challenger.points if s in incumbent.points
                   and (below is None or s < below))
    start = None
    for s in sizes:
        wins = challenger.points[s] >= incumbent.points[s] * (1 + margin)
        if wins and start is None:
            start = s
        elif not wins:
            start = None
    return start


def gain_at(challenger: Curve, incumbent: Curve, size: int) -> float:
    return challenger.points[size] / incumbent.points[size] - 1


def fmt_size(n: Optional[int]) -> str:
    if n is None:
        return "never"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


# ---- the decisions, one function a family ----

def choose_memset(ms: list[dict]) -> list[Choice]:
    """From fill-regions: where non-temporal stores beat memkit's cached
    path (the vector loop) for zero and for non-zero fills, then where rep
    stosb beats the vector loop below those.  Each decision is against what
    memkit would otherwise run at that size, so a tuned value can only
    replace a slower path with a faster one."""
    out = []
    values = sorted({m["params"]["value"] for m in ms
                     if m.get("metric") == "fill_throughput" and "value" in m.get("params", {})})
    nt_from, rep_from, rep_gain = {}, {}, {}
    for value in values:
        c = curves(ms, "fill_throughput", {"value": value})
        if not {"nt-stores", "vector-loop"} <= set(c):
            continue
        name = "nt_threshold_zero" if value == 0 else "nt_threshold"
        what = "zero" if value == 0 else "non-zero"
        t = crossover(c["nt-stores"], c["vector-loop"])
        nt_from[value] = t
        out.append(Choice(name, t,
                          f"non-temporal stores never beat the vector loop for {what} fills up to the "
                          f"largest size measured" if t is None else
                          f"non-temporal stores beat the vector loop for {what} fills from {fmt_size(t)} "
                          f"on (+{gain_at(c['nt-stores'], c['vector-loop'], t):.0%} there)"))
        if "rep-stosb" in c:
            r = crossover(c["rep-stosb"], c["vector-loop"], below=t)
            rep_from[value] = r
            if r is not None:
                rep_gain[value] = gain_at(c["rep-stosb"], c["vector-loop"], r)
    if rep_from:
        # One threshold serves both values: it must pay for both.
        if any(r is None for r in rep_from.values()):
            out.append(Choice("rep_stosb_threshold", None,
                              "rep stosb never beat the vector loop consistently for both zero and "
                              "non-zero fills below the non-temporal thresholds"))
        else:
            t = max(rep_from.values())
            out.append(Choice("rep_stosb_threshold", t,
                              f"rep stosb beat the vector loop from {fmt_size(t)} on, for zero and "
                              f"non-zero fills (+{min(rep_gain.values()):.0%} at the crossover)"))
    return out


def choose_copy(ms: list[dict], metric: str = "gb_per_s") -> list[Choice]:
    """From copy-sweep: the rep movsb window and the non-temporal threshold,
    each against memkit's own vector loop (series names per copy-sweep)."""
    out = []
    c = curves(ms, metric, {"dst_offset": 0}) or curves(ms, metric)
    vector = next((c[s] for s in ("avx_aligned_unroll4", "avx_aligned", "vector-loop") if s in c), None)
    if vector is None:
        return out
    stream = next((c[s] for s in ("avx_stream_prefetch_unroll4", "avx_stream_unroll4", "avx_stream")
                   if s in c), None)
    nt = None
    if stream is not None:
        nt = crossover(stream, vector)
        out.append(Choice("nt_copy_threshold", nt,
                          "non-temporal copies never beat the vector loop up to the largest size measured"
                          if nt is None else
                          f"non-temporal copies ({stream.method}) beat the vector loop from {fmt_size(nt)} "
                          f"on (+{gain_at(stream, vector, nt):.0%} there)"))
    if "rep_movsb" in c:
        rep = c["rep_movsb"]
        t = crossover(rep, vector, below=nt)
        if t is None:
            out.append(Choice("rep_movsb_threshold", None,
                              "rep movsb never beat the vector loop consistently below the "
                              "non-temporal threshold"))
        else:
            out.append(Choice("rep_movsb_threshold", t,
                              f"rep movsb beat the vector loop from {fmt_size(t)} "
                              f"(+{gain_at(rep, vector, t):.0%} there)"))
    return out


def choose_parallel(ms: list[dict], metric: str = "copy_throughput") -> list[Choice]:
    """From a parallel sweep (series "threads=N"): the smallest thread count
    within 5% of the best at the largest size, and the size from which it
    beats one thread."""
    out = []
    c = {s: v for s, v in curves(ms, metric).items() if s.startswith("threads=")}
    if "threads=1" not in c or len(c) < 2:
        return out
    largest = max(c["threads=1"].points)
    at_largest = {int(s.split("=")[1]): v.points.get(largest, 0) for s, v in c.items()}
    best = max(at_largest.values())
    threads = min(n for n, v in at_largest.items() if v >= best * 0.95)
    out.append(Choice("threads", threads,
                      f"{threads} thread(s) reached {at_largest[threads] / at_largest[1]:.2f}x one thread "
                      f"at {fmt_size(largest)} (within 5% of the best count measured)"))
    if threads > 1:
        t = crossover(c[f"threads={threads}"], c["threads=1"])
        out.append(Choice("parallel_threshold", t,
                          f"{threads} threads beat one from {fmt_size(t)} on" if t is not None else
                          f"{threads} threads never beat one thread consistently"))
    return out


def cpu_line(fp: dict) -> str:
    """The profile's "cpu=" line, which libmemkit compares with the CPU it runs on."""
    return (f"cpu={fp.get('vendor', '?')} family={fp.get('family', '?')} model={fp.get('model', '?')} "
            f"microcode={fp.get('microcode', '?')}")


def write_profile(path: Path, choices: list[Choice], fingerprint: dict) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    lines = [
        "# memkit profile, written by `memkit tune`; read by libmemkit at load time.",
        f"# machine: {fingerprint.get('cpu_model', '?')} (microcode {fingerprint.get('microcode', '?')}), "
        f"kernel {fingerprint.get('kernel', '?')}, glibc {fingerprint.get('glibc', '?')}",
        f"# measured: {now}.  MEMKIT_TUNABLES overrides any line; delete this file to go back",
        "# to the built-in defaults.",
    ]
    lines += ["", "# the CPU measured on: libmemkit ignores this profile on another vendor, family or model",
              cpu_line(fingerprint)]
    for c in choices:
        lines += ["", f"# {c.why}", c.setting()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)   # a reader never sees half a profile
