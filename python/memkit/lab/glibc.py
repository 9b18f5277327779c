# SPDX-License-Identifier: Apache-2.0
"""glibc's own view of this machine, beside memkit's: the cache sizes and
thresholds the C library computed when it started (its x86 `cpu_features`,
as `ld.so --list-diagnostics` prints them from glibc 2.33 on), where they
disagree with the caches memkit measured (the fingerprint's `cache`), what
that costs, and the GLIBC_TUNABLES setting that corrects each.

The one reader of that output (`parse`; memkit.lab.machine runs the loader) and the one place that
decides "disagrees" (`checks`); the fingerprint stores the view under KEY,
and `memkit env`, `memkit system-check` and the report print it from here.
The view is the one in force: a GLIBC_TUNABLES in the environment shows in
it, so `GLIBC_TUNABLES=... memkit env` checks a correction.

glibc tuned as a baseline: `tunables_argument` reads a GLIBC_TUNABLES setting
as the commands take it (SPEC or @FILE); the lab races glibc under it as the
series glibc-tuned (its experiments' glibc_tunables=, bench/lab/lab.h), and
`versus_glibc` gives memkit's speed-ups over glibc as shipped and tuned.
"""

from __future__ import annotations

import math
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError, UsageError
from memkit.lab.sizes import fmt_size, parse_size

# The fingerprint's key: {field: bytes} as glibc computed them, or a
# sentence saying why they could not be read ("not available: ...").
KEY = "glibc_x86"

# x86.cpu_features.<field> in ld.so --list-diagnostics.  Each but the stop
# threshold has its tunable, glibc.cpu.x86_<field>; glibc derives the stop
# (2.34 on): the L2 on AMD, the non-temporal threshold elsewhere.  glibc 2.33
# prints no stop: rep movsb runs up to the non-temporal threshold there.
FIELDS = ("data_cache_size", "shared_cache_size", "non_temporal_threshold",
          "rep_movsb_threshold", "rep_movsb_stop_threshold", "rep_stosb_threshold")
_PREFIX = "x86.cpu_features."

# glibc's non-temporal threshold disagrees with memkit's caches when it lies
# beyond this many L3s (the L3 memkit measured).  Past the L3, a copy's
# stores through the cache cannot stay there: they only evict.  glibc's own
# rule (3/4 of its shared cache, or of one thread's share of it in Debian's
# 2.36) keeps it within one L3 wherever it sees the right L3: 0.38x on the
# Xeon 6/207, 0.39x on the 6/167.  On the Zen 3 VM it saw a 256 MiB shared
# cache for a 32 MiB L3 and put the threshold at 6x (tests/data/glibc/).
NT_THRESHOLD_MAX_L3S = 1.0


def interpreter(exe: Path) -> Optional[str]:
    """The program interpreter (PT_INTERP) an x86-64 ELF executable names,
    e.g. /lib64/ld-linux-x86-64.so.2; None for a static or foreign file."""
    try:
        with open(exe, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4:6] != b"\x02\x01":   # 64-bit, little-endian
                return None
            (phoff,) = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                if p_type == 3:   # PT_INTERP
                    f.seek(p_offset)
                    return f.read(p_filesz).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def parse(text: str) -> dict:
    """{field: bytes} of FIELDS, those `ld.so --list-diagnostics` printed."""
    found = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        field = name[len(_PREFIX):] if name.startswith(_PREFIX) else ""
        if sep and field in FIELDS:
            try:
                found[field] = int(value, 0)
            except ValueError:
                pass
    return {f: found[f] for f in FIELDS if f in found}


# The largest value an integer tunable takes (SIZE_MAX); glibc ignores one
# beyond its tunable's bounds without a word.
TUNABLE_MAX = (1 << 64) - 1
# glibc 2.36's bounds on the thresholds (sysdeps/x86/dl-cacheinfo.h): it
# takes a value above the lower bound, up to the upper one, and ignores
# any other without a word (checked against this system's glibc:
# tests/python/test_machine.py).  rep movsb's lower bound is 8 vectors of
# the width glibc's memmove uses.
NT_THRESHOLD_ABOVE = 0x4040
NT_THRESHOLD_MAX = TUNABLE_MAX >> 4


def _rep_movsb_minimum(text: str, fp: dict) -> int:
    flags = {line.partition("=")[0].rsplit(".", 1)[-1]: line.partition("=")[2].strip()
             for line in text.splitlines() if line.startswith(_PREFIX + "preferred.")}
    isa = fp.get("isa") or {}
    if isa.get("avx512f") and isa.get("os_avx512") and flags.get("Prefer_No_AVX512") == "0x0":
        return 64 * 8
    if flags.get("AVX_Fast_Unaligned_Load") == "0x1":
        return 32 * 8
    return 16 * 8


def diagnostics_under(text: str, tunables: str, fp: dict) -> str:
    """`ld.so --list-diagnostics`'s output `text` (glibc as shipped) as
    glibc 2.36 would print it under GLIBC_TUNABLES=tunables: each of the
    x86 thresholds within its bounds taken, the rest ignored; the stop of
    rep movsb follows the non-temporal threshold except on AMD, where it
    is the L2 (dl-cacheinfo.h).  For a recorded machine
    (memkit.lab.machine), where no glibc can be asked."""
    above = {"non_temporal_threshold": (NT_THRESHOLD_ABOVE, NT_THRESHOLD_MAX),
             "rep_movsb_threshold": (_rep_movsb_minimum(text, fp), TUNABLE_MAX),
             "rep_stosb_threshold": (0, TUNABLE_MAX),
             "data_cache_size": (0, TUNABLE_MAX), "shared_cache_size": (0, TUNABLE_MAX)}
    tuned = parse(text)
    for item in tunables.split(":"):
        name, _, value = item.partition("=")
        field = name.removeprefix("glibc.cpu.x86_")
        v = _integer(value) if name.startswith("glibc.cpu.x86_") and field in above else None
        if v is not None and above[field][0] < v <= above[field][1]:
            tuned[field] = v
    if fp.get("vendor") != "AuthenticAMD" and "non_temporal_threshold" in tuned:
        tuned["rep_movsb_stop_threshold"] = tuned["non_temporal_threshold"]
    lines = []
    for line in text.splitlines():
        field = line.partition("=")[0][len(_PREFIX):] if line.startswith(_PREFIX) else ""
        lines.append(f"{_PREFIX}{field}={tuned[field]:#x}" if field in FIELDS and field in tuned else line)
    return "\n".join(lines) + "\n"


@dataclass
class Check:
    """One of glibc's choices beside memkit's measurement of this machine."""
    what: str                   # "non-temporal", "rep movsb"
    state: str                  # glibc's value, and memkit's beside it
    disagrees: Optional[bool]   # None: memkit cannot tell (no L3 measured)
    cost: str = ""              # what the disagreement costs
    tunable: str = ""           # the glibc tunable that corrects it ...
    value: int = 0              # ... set to this

    @property
    def setting(self) -> str:
        return f"{self.tunable}={self.value}"


def rep_movsb_stop(view: dict) -> Optional[int]:
    """Where glibc's rep movsb window ends in `view`: its stop threshold
    (2.34 on), else (2.33 prints none) the non-temporal threshold."""
    return view.get("rep_movsb_stop_threshold", view.get("non_temporal_threshold"))


def rep_movsb_align(fp: dict) -> Optional[int]:
    """The alignment of dst - src below which memkit's rep movsb does not
    run on the fingerprint's CPU (its strategy row's rep_movsb_align, as
    the library held it: src/strategy.c, `memkit-tunables`), where rep movsb
    falls off a cliff; None when the fingerprint does not say."""
    return _memkit_setting(fp, "rep_movsb_align")


def rep_movsb_falls_misaligned(fp: dict) -> bool:
    """Whether rep movsb falls off a cliff on this CPU when dst - src is not
    a multiple of 64: what memkit's own table says of it (rep_movsb_align
    above 1), the one place that CPU fact is written."""
    align = rep_movsb_align(fp)
    return align is not None and align > 1


def _times(n: int, of: int) -> str:
    r = n / of
    return f"{r:.0f}x" if r >= 2 else f"{r:.1f}x"


def _memkit_setting(fp: dict, name: str) -> Optional[int]:
    """A memkit tunable in force as the fingerprint records it ("a=1:b=2"),
    in bytes; None when absent or never."""
    for item in str(fp.get("tunables") or "").split(":"):
        key, _, value = item.partition("=")
        if key == name:
            return parse_size(value)
    return None


def _non_temporal(fp: dict, view: dict) -> Optional[Check]:
    nt = view.get("non_temporal_threshold")
    if nt is None:
        return None
    l3 = ((fp.get("cache") or {}).get("l3")) or 0
    shared = view.get("shared_cache_size")
    glibc_saw = f"glibc's shared cache: {fmt_size(shared)}" if shared else "glibc printed no shared cache"
    if not l3:
        return Check("non-temporal", f"copies from {fmt_size(nt)}; memkit measured no L3 ({glibc_saw})", None)
    if nt <= NT_THRESHOLD_MAX_L3S * l3:
        return Check("non-temporal", f"copies from {fmt_size(nt)}, within the {fmt_size(l3)} L3 memkit measured "
                                     f"({glibc_saw})", False)
    # memkit's own threshold for the same choice, else the generic row's
    # L3/2 (source and destination both in the cache).
    ours = _memkit_setting(fp, "nt_copy_threshold")
    fix = ours if ours and ours <= l3 else l3 // 2
    return Check("non-temporal",
                 f"copies from {fmt_size(nt)}, {_times(nt, l3)} the {fmt_size(l3)} L3 memkit measured ({glibc_saw})",
                 True,
                 f"copies of up to {fmt_size(nt)} store through the cache and evict what it held; memkit copies "
                 f"non-temporally from {fmt_size(fix)} here",
                 "glibc.cpu.x86_non_temporal_threshold", fix)


def _rep_movsb(fp: dict, view: dict) -> Optional[Check]:
    start = view.get("rep_movsb_threshold")
    stop = rep_movsb_stop(view)
    if start is None or stop is None:
        return None
    if start >= stop:
        return Check("rep movsb", f"never (from {fmt_size(start)}, stopped at {fmt_size(stop)})", False)
    window = f"for copies of {fmt_size(start)} to {fmt_size(stop)}"
    if not rep_movsb_falls_misaligned(fp):
        return Check("rep movsb", f"{window}; no misalignment cliff known on this CPU", False)
    # glibc takes rep movsb only below its stop threshold: a threshold at
    # the stop leaves no size to it.
    return Check("rep movsb", window, True,
                 f"this CPU's rep movsb runs many times slower when dst - src is not a multiple of "
                 f"{rep_movsb_align(fp)} (memkit's strategy row: rep_movsb_align={rep_movsb_align(fp)}), where "
                 "memkit's vector loop does not fall",
                 "glibc.cpu.x86_rep_movsb_threshold", stop)


def checks(fp: dict) -> list[Check]:
    """glibc's choices beside the caches memkit measured, each judged; none
    when the fingerprint has no view of glibc (an older run, or none could
    be read)."""
    view = fp.get(KEY)
    if not isinstance(view, dict):
        return []
    return [c for c in (_non_temporal(fp, view), _rep_movsb(fp, view)) if c]


def tunables_spec(found: list[Check]) -> str:
    """a=1:b=2, the GLIBC_TUNABLES value correcting every disagreement found."""
    return ":".join(c.setting for c in found if c.disagrees)


def tunables_setting(found: list[Check]) -> str:
    """GLIBC_TUNABLES=a=1:b=2, correcting every disagreement found."""
    return "GLIBC_TUNABLES=" + tunables_spec(found)


def caches_text(view: dict) -> str:
    return ", ".join(f"{label} {fmt_size(view[k])}" for k, label in
                     (("data_cache_size", "data cache"), ("shared_cache_size", "shared cache")) if k in view)


def thresholds_text(view: dict) -> str:
    parts = []
    if "non_temporal_threshold" in view:
        parts.append(f"non-temporal copies from {fmt_size(view['non_temporal_threshold'])}")
    if "rep_movsb_threshold" in view:
        start, stop = view["rep_movsb_threshold"], rep_movsb_stop(view)
        # glibc takes rep movsb below its stop only: a start at or past it is no window at all
        parts.append(f"rep movsb never (from {fmt_size(start)}, at or past its stop {fmt_size(stop)})"
                     if stop is not None and start >= stop else f"rep movsb {fmt_size(start)}..{fmt_size(stop)}")
    if "rep_stosb_threshold" in view:
        parts.append(f"rep stosb from {fmt_size(view['rep_stosb_threshold'])}")
    return ", ".join(parts)


def view_text(view) -> str:
    """One line of what glibc computed, or why it could not be read."""
    if not isinstance(view, dict):
        return str(view)
    return "; ".join(t for t in (caches_text(view), thresholds_text(view)) if t)


def describe_rows(fp: dict) -> list[tuple[str, str]]:
    """The fingerprint's rows for glibc's view (`memkit env`, the report):
    its caches, its thresholds, then each disagreement with the setting
    that corrects it (and all of them together when several).  None for a
    fingerprint from before memkit read it."""
    if KEY not in fp:
        return []
    view = fp[KEY]
    if not isinstance(view, dict):
        return [("glibc sees", str(view))]
    rows = [("glibc sees", caches_text(view) + f" (glibc {fp.get('glibc', '?')}, ld.so --list-diagnostics)"),
            ("glibc uses", thresholds_text(view))]
    found = [c for c in checks(fp) if c.disagrees]
    rows += [("  disagrees", f"{c.what} {c.state}: {c.cost}; corrected by GLIBC_TUNABLES={c.setting}")
             for c in found]
    if len(found) > 1:
        rows.append(("  together", tunables_setting(found)))
    return rows


# ---- glibc tuned as a baseline ----

# The fingerprint's key for the GLIBC_TUNABLES glibc-tuned ran under (the
# lab's fingerprint record names it so too, records.def).
TUNABLES_KEY = "glibc_tunables"
# The lab's argument that races glibc tuned, where an experiment takes it.
TUNABLES_ARG = "glibc_tunables"
# The series of glibc tuned begin with it (LAB_GLIBC_TUNED).
TUNED = "glibc-tuned"
_VARIABLE = "GLIBC_TUNABLES="


# glibc's tunables whose value is text (glibc.cpu.hwcaps=-AVX2_Usable,...);
# every other one takes an integer (dl-tunables.list: SIZE_T, UINT_64,
# INT_32), which glibc reads as strtoul does: decimal, 0x hex, 0 octal.
TEXT_TUNABLES = ("glibc.cpu.hwcaps", "glibc.cpu.x86_ibt", "glibc.cpu.x86_shstk")
# A @FILE holds one line: anything much longer is not a GLIBC_TUNABLES line
# (/dev/zero, a log), and is refused before it is read whole.
TUNABLES_FILE_MAX = 64 << 10


def _integer(value: str) -> Optional[int]:
    """value as glibc reads an integer tunable, None when it is not one."""
    if len(value) > 24:   # 2**64 - 1 takes 20 digits, 0x and 16 hex digits 18, in octal 23
        return None
    base, digits = ((16, value[2:]) if value[:2].lower() == "0x" else
                    (8, value[1:]) if value[:1] == "0" and len(value) > 1 else (10, value))
    try:
        return int(digits, base) if digits and digits.isalnum() else None
    except ValueError:
        return None


def check_tunables(spec: str) -> str:
    """spec when it is GLIBC_TUNABLES' syntax over glibc's own tunables
    (glibc.NAMESPACE.NAME=VALUE joined by ':', each integer value one glibc
    can hold), else a UsageError saying which item is not.  glibc ignores an
    item it cannot read without a word, so a typo would race glibc as
    shipped under the name glibc tuned.  The lab holds its glibc_tunables=
    to the same rule (lab_glibc_tunables_check)."""
    if not spec:
        raise UsageError("no glibc tunable given (expected glibc.NAMESPACE.NAME=VALUE:...)")
    for item in spec.split(":"):
        name, eq, value = item.partition("=")
        if not item:
            raise UsageError(f"glibc tunables {spec!r}: an empty item (two ':' in a row, or one at an end)")
        if not eq or not value:
            raise UsageError(f"glibc tunables: {item!r} is not NAME=VALUE")
        parts = name.split(".")
        if parts[0] != "glibc" or len(parts) < 3 or not all(parts):
            raise UsageError(f"glibc tunables: {item!r}: only glibc's own tunables "
                             f"(glibc.NAMESPACE.NAME=VALUE, e.g. glibc.cpu.x86_non_temporal_threshold=0x1000000)")
        if any(c <= " " or c == "\x7f" for c in item):
            raise UsageError(f"glibc tunables: {item!r} holds a space or a control character")
        number = _integer(value)
        if name not in TEXT_TUNABLES and (number is None or number > TUNABLE_MAX):
            shown = value if len(value) <= 40 else f"{value[:20]}... ({len(value)} characters)"
            raise UsageError(f"glibc tunables: {name}={shown}: not an integer from 0 to {TUNABLE_MAX} "
                             f"(decimal or 0x hex), the values glibc holds")
    return spec


def _read_tunables_file(path: Path) -> str:
    """The text of a @FILE, read only when it is a regular file of at most
    TUNABLES_FILE_MAX bytes (a device or a FIFO would be read without end)."""
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise MemkitError(f"the glibc tunables file {path}: not a regular file")
            data = f.read(TUNABLES_FILE_MAX + 1)
    except OSError as e:
        raise MemkitError(f"cannot read the glibc tunables file {path}: {e.strerror or e}")
    if len(data) > TUNABLES_FILE_MAX:
        raise MemkitError(f"the glibc tunables file {path}: larger than {fmt_size(TUNABLES_FILE_MAX)}, "
                          f"not a GLIBC_TUNABLES line")
    return data.decode(errors="replace")


def tunables_argument(value: str) -> str:
    """A GLIBC_TUNABLES setting as a command takes it, checked
    (check_tunables): the spec itself, or @FILE, a file holding one line,
    `GLIBC_TUNABLES=SPEC` (`export` before it, quotes around the spec, blank
    lines and # comments allowed) or the plain spec, as `memkit tune --glibc`
    writes it.  A spec typed is a usage error (exit 2); a file that does not
    hold one is refused input (1)."""
    if not value.startswith("@"):
        return check_tunables(value[len(_VARIABLE):] if value.startswith(_VARIABLE) else value)
    path = Path(value[1:])
    text = _read_tunables_file(path)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) != 1:
        raise MemkitError(f"{path}: expected one line, GLIBC_TUNABLES=... or the spec itself; "
                          f"found {len(lines) or 'no'} line{'s' if len(lines) != 1 else ''} (besides comments)")
    line = lines[0].removeprefix("export ").strip()
    line = line[len(_VARIABLE):] if line.startswith(_VARIABLE) else line
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "'\"":
        line = line[1:-1]
    try:
        return check_tunables(line)
    except MemkitError as e:
        raise MemkitError(f"{path}: {e}") from None


def check_shipped_environment(env: dict, command: str) -> None:
    """glibc as shipped, raced beside glibc tuned, must start under no
    GLIBC_TUNABLES: one already in the environment is refused (exit 1)."""
    if "GLIBC_TUNABLES" in env:
        raise MemkitError(f"GLIBC_TUNABLES is already set ({env['GLIBC_TUNABLES']}): the runs of glibc as shipped "
                          f"would have it too; unset it for `{command} --glibc-tunables`")


def race_tuned(names: list[str], takes: dict[str, bool], args: dict[str, list[str]], spec: str) -> dict:
    """args with glibc_tunables=spec added for every experiment that races
    glibc (`takes`: its name -> whether it takes the argument); a
    MemkitError when none of them does, or one was given it already."""
    racing = [n for n in names if takes.get(n)]
    if not racing:
        raise MemkitError(f"--glibc-tunables: none of the experiments to run races glibc "
                          f"({', '.join(names)}); one that does takes {TUNABLES_ARG}= (its --help)")
    out = dict(args)
    for n in racing:
        if any(a.startswith(TUNABLES_ARG + "=") for a in out.get(n, ())):
            raise MemkitError(f"{n}: glibc tunables given twice (--glibc-tunables and {TUNABLES_ARG}=): give them once")
        out[n] = list(out.get(n, ())) + [f"{TUNABLES_ARG}={spec}"]
    return out


def versus_glibc(measurements: list[dict], memkit: set[str]) -> Optional[dict]:
    """memkit's speed-ups over glibc as shipped and over glibc tuned, where a
    run raced both: {"points", "shipped", "tuned", "baseline"}, each speed-up
    (geometric mean, lowest, highest) over the points where memkit has both
    (its series among `memkit`); None where glibc tuned was not raced.  Each
    is paired round by round in its own processes; between glibc and glibc
    tuned there is no pairing (they never share a process)."""
    both = [m for m in measurements if m.get("series") in memkit and m.get("ratio")
            and isinstance(m.get("tuned"), dict) and m["tuned"].get("ratio")]
    if not both:
        return None

    def spread(xs):
        return (math.exp(sum(math.log(x) for x in xs) / len(xs)), min(xs), max(xs))
    return {"points": len(both), "shipped": spread([m["ratio"] for m in both]),
            "tuned": spread([m["tuned"]["ratio"] for m in both]), "baseline": both[0]["tuned"].get("baseline", TUNED)}


def headline(measurements: list[dict], memkit: set[str], spec: Optional[str]) -> Optional[str]:
    """One experiment's memkit over glibc as shipped and tuned, in one line
    (the summary's and the report's headline), or None where glibc tuned
    was not raced; memkit: its series as the rankings name them
    (ranking.memkit_series)."""
    v = versus_glibc(measurements, memkit)
    return versus_text(v, spec) if v else None


def versus_text(v: dict, spec: Optional[str]) -> str:
    """versus_glibc's answer in one line."""
    def x(t):
        return f"{t[0]:.3f}x ({t[1]:.2f}..{t[2]:.2f})"
    return (f"memkit over glibc as shipped {x(v['shipped'])}, over glibc tuned "
            f"{x(v['tuned'])}, geometric mean (lowest..highest) over {v['points']} points, each paired "
            f"in its own processes{' (GLIBC_TUNABLES=' + spec + ')' if spec else ''}; glibc tuned "
            f"against glibc as shipped only across processes")
