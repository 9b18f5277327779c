# SPDX-License-Identifier: Apache-2.0
"""Sizes as people write and read them: the library's grammar (src/text.h,
mk_text_parse_size, what MEMKIT_TUNABLES takes), which the lab's arguments
take too (bench/lab/sizes.c): 4096, 64K, 1M, 2G, the letter in either case,
then B or iB (64KB, 64KiB); shown as 1 KiB, 1.5 MiB.  tests/data/sizes.tsv
holds the cases the C and the Python tests both check."""

from __future__ import annotations

import re
from typing import Optional

from memkit.errors import UsageError

# ASCII digits only (Python's \d and int() take other scripts' digits and
# underscores, the library does not), then a unit letter and its B or iB.
_SIZE = re.compile(r"([0-9]+)(?:([kKmMgG])(?:iB|B)?)?")
_SHIFT = {"k": 10, "m": 20, "g": 30}
_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"]
# The library's never (SIZE_MAX): no threshold, and no size.
_NEVER = (1 << 64) - 1


def parse_size(text) -> Optional[int]:
    """4096, 64K, 1M, 2G (64KB, 64KiB); None when it is not a size,
    including what the library reads as never (a threshold, not a size)."""
    m = _SIZE.fullmatch(str(text))
    if not m:
        return None
    n = int(m[1]) << (_SHIFT[m[2].lower()] if m[2] else 0)
    return n if n < _NEVER else None


def size_arg(text: str) -> int:
    """parse_size for a command-line value: refused with what was expected."""
    n = parse_size(text)
    if n is None:
        raise UsageError(f"bad size '{text}' (expected e.g. 4096, 64K, 1M)")
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
