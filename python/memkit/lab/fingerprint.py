# SPDX-License-Identifier: Apache-2.0
"""The machine fingerprint: printing it, the cache levels it implies, and
what changed between two of them."""

from __future__ import annotations

import json

from memkit.lab import glibc
from memkit.lab.sizes import fmt_size

# Fields whose change silently changes performance (the Downs seed: a
# microcode update switched off the zero-store optimisation overnight).
# glibc's thresholds (memkit.lab.glibc) too: GLIBC_TUNABLES, or a glibc update
# that computes them anew, moves every program's copies, the lab's glibc
# baseline included.
LOUD_FIELDS = ("microcode", "kernel", "glibc", glibc.KEY, "tunables", "profile", "cpu_model", "strategy")
# Fields worth mentioning when they differ, but expected to (a new commit).
QUIET_FIELDS = ("memkit_commit", "memkit_version", "thp", "governor", "cpus_online", "variants", "isa", "cache",
                "boost", "smt", "hypervisor", "timing_cpu")
# Fields memkit began to record later: a fingerprint from before has none,
# which is no change of the machine (else every older run would differ).
LATER_FIELDS = (glibc.KEY,)

ISA_NAMES = [("sse2", "SSE2"), ("avx2", "AVX2"), ("avx512f", "AVX-512F"), ("avx512bw", "AVX-512BW"),
             ("avx512vl", "AVX-512VL"), ("erms", "ERMS"), ("fsrm", "FSRM"), ("amx", "AMX")]


def cache_levels(fp: dict) -> list[tuple[str, float]]:
    """[(level, upper bound in bytes)], e.g. [('L1', 32768), ('L2', ...), ('L3', ...)];
    RAM is everything above the last."""
    cache = (fp or {}).get("cache") or {}
    out = []
    for key, name in (("l1d", "L1"), ("l2", "L2"), ("l3", "L3")):
        size = cache.get(key) or 0
        if size and (not out or size > out[-1][1]):
            out.append((name, float(size)))
    return out


def runnable_variants(isa: dict) -> list[str]:
    """The variants (src/isa.def) a CPU with these ISA flags (a fingerprint's
    "isa") runs, by what each needs."""
    out = ["sse2"]
    if isa.get("avx2") and isa.get("os_avx"):
        out.append("avx2")
    if isa.get("avx512f") and isa.get("avx512bw") and isa.get("avx512vl") and isa.get("os_avx512"):
        out += ["avx512", "evex"]
    return out


def describe_lines(fp: dict) -> list[tuple[str, str]]:
    """The fingerprint as (label, text) rows, for `memkit env` and the report."""
    isa = fp.get("isa") or {}
    flags = " ".join(name for key, name in ISA_NAMES if isa.get(key)) or "none detected"
    os_state = []
    if isa.get("os_avx"):
        os_state.append("AVX")
    if isa.get("os_avx512"):
        os_state.append("AVX-512")
    if os_state:
        flags += f" (the OS saves {' and '.join(os_state)} state)"
    cache = fp.get("cache") or {}
    caches = ", ".join(f"{label} {fmt_size(cache[k])}" for k, label in
                       (("l1d", "L1d"), ("l2", "L2"), ("l3", "L3"), ("line", "line")) if cache.get(k))
    variants = fp.get("variants") or {}
    return [
        ("CPU", f"{fp.get('cpu_model', '?')} ({fp.get('vendor', '?')} family {fp.get('family', '?')} "
                f"model {fp.get('model', '?')} stepping {fp.get('stepping', '?')})"),
        ("microcode", str(fp.get("microcode", "unknown"))),
        ("kernel", str(fp.get("kernel", "unknown"))),
        ("glibc", str(fp.get("glibc", "unknown"))),
        ("ISA", flags),
        ("caches", caches or "unknown"),
        *glibc.describe_rows(fp),
        ("CPUs online", str(fp.get("cpus_online", "?"))),
        ("THP", str(fp.get("thp", "unknown"))),
        ("governor", str(fp.get("governor", "unknown"))),
        ("turbo/boost", str(fp.get("boost", "unknown"))),
        ("SMT", str(fp.get("smt", "unknown"))),
        ("hypervisor", str(fp.get("hypervisor", "unknown"))),
        ("timing CPU", f"CPU {fp['timing_cpu']} (single-threaded experiments pin each process to it)"
                       if isinstance(fp.get("timing_cpu"), int) and fp["timing_cpu"] >= 0 else "unknown"),
        ("memkit", f"{fp.get('memkit_version', '?')} (commit {fp.get('memkit_commit', '?')})"),
        ("variants", ", ".join(f"{op} {v}" for op, v in variants.items()) or "?"),
        ("strategy", f"{fp['strategy']} ({fp.get('strategy_matched', '?')})" if fp.get("strategy")
                     else "unknown"),
        *([("  evidence", str(fp["strategy_evidence"]))] if fp.get("strategy_evidence") else []),
        ("tunables", str(fp.get("tunables", "")) or "(defaults)"),
        ("profile", str(fp.get("profile", "")) or "(none: no tuned profile in force)"),
    ]


def _settings(text: str) -> dict:
    """"a=1:b=2" (MEMKIT_TUNABLES syntax) -> {"a": "1", "b": "2"}."""
    out = {}
    for item in (text or "").split(":"):
        if item:
            k, _, v = item.partition("=")
            out[k] = v
    return out


def _show(v) -> str:
    if v in ("", None):
        return "(none)"
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def changed_keys(a: dict, b: dict) -> list[str]:
    """The fingerprint keys whose values differ, loud ones first (a field
    of LATER_FIELDS only where both record it)."""
    keys = [k for k in dict.fromkeys(list(LOUD_FIELDS) + sorted(set(a) | set(b))) if a.get(k) != b.get(k)
            and (k not in LATER_FIELDS or (k in a and k in b))]
    return keys


def describe_change(key: str, a, b) -> str:
    """"tunables: memset=auto -> sse2": only the parts of a key that changed."""
    if key == "tunables" or (isinstance(a, str) and isinstance(b, str) and "=" in a + b and ":" in a + b):
        a, b = _settings(a or ""), _settings(b or "")
    if isinstance(a, dict) and isinstance(b, dict):
        parts = []
        for k in dict.fromkeys(list(a) + list(b)):
            if k not in a:
                parts.append(f"{k}={_show(b[k])} added")
            elif k not in b:
                parts.append(f"{k}={_show(a[k])} removed")
            elif a[k] != b[k]:
                parts.append(f"{k}={_show(a[k])} -> {_show(b[k])}")
        return f"{key}: " + ", ".join(parts)
    return f"{key}: {_show(a)} -> {_show(b)}"


def differences(a: dict, b: dict) -> tuple[list[str], list[str]]:
    """(loud, quiet) descriptions of what differs from fingerprint a to b,
    each naming only the key (and its parts) that changed."""
    loud, quiet = [], []
    for k in changed_keys(a, b):
        (loud if k in LOUD_FIELDS else quiet).append(describe_change(k, a.get(k), b.get(k)))
    return loud, quiet
