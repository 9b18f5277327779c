# SPDX-License-Identifier: Apache-2.0
"""Sizes as people write and read them, one grammar for all of memkit's
Python: 4096, 64K, 1M, 2G (also 64KiB, 64kb) in; 1 KiB, 1.5 MiB out (the
lab's C side reads and writes the same: bench/lab/sizes.c)."""

from __future__ import annotations

from typing import Optional

from memkit.errors import MemkitError

_SHIFT = {"K": 10, "M": 20, "G": 30, "T": 40}
_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"]


def parse_size(text: str) -> Optional[int]:
    """4096, 64K, 1M, 2G (a B or iB after the letter is allowed); None when
    it is not a size."""
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    try:
        return int(t[:-1]) << _SHIFT[t[-1]] if t and t[-1] in _SHIFT else int(t)
    except ValueError:
        return None


def size_arg(text: str) -> int:
    """parse_size for a command-line value: refused with what was expected."""
    n = parse_size(text)
    if n is None or n < 0:
        raise MemkitError(f"bad size '{text}' (expected e.g. 4096, 64K, 1M)")
    return n


def fmt_size(n) -> str:
    """1024 -> '1 KiB', 1536 -> '1.5 KiB'; None -> 'never' (a threshold never
    reached); what is not a number, as it is."""
    if n is None:
        return "never"
    try:
        v = float(n)
    except (TypeError, ValueError):
        return str(n)
    u = 0
    while v >= 1024 and u < len(_UNITS) - 1:
        v /= 1024
        u += 1
    return f"{v:.0f} {_UNITS[u]}" if v == int(v) else f"{v:.1f} {_UNITS[u]}"
