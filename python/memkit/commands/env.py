# SPDX-License-Identifier: Apache-2.0
"""memkit env: this machine's fingerprint, as every run records it; the
library's tunables and per-CPU strategy table, printed from its code; or
where memkit's installed files are (the preload library above all, which
`pip install` puts inside site-packages)."""

import json
from pathlib import Path

from memkit.commands._common import add_build_option
from memkit.errors import MemkitError, UsageError
from memkit.lab import experiments, load, machine
from memkit.lab.fingerprint import describe_lines
from memkit.tuning.evidence import unmeasured_note

NAME = "env"
HELP = "print this machine's fingerprint (CPU, microcode, kernel, glibc and its thresholds, ISA, caches, tunables...)"
DESCRIPTION = """\
Prints this machine's fingerprint as every run records it (CPU, microcode,
kernel, glibc, ISA, caches, the strategy row and tunables in force) and the
load now; --tunables, --strategies or --paths print the library's tables or
where memkit's files are instead.

--record DIR writes the machine as memkit reads it into a new folder (the
fingerprint, glibc's ld.so --list-diagnostics, /proc/cpuinfo's first CPU);
MEMKIT_MACHINE=DIR then makes every command read that machine instead of
this one (env, system-check, the run estimate, try's and tune's advice
about glibc): to reproduce what memkit said on another machine.  What is
timed still runs here.

Beside the caches memkit measured stands what glibc computed for its own
copies (ld.so --list-diagnostics, glibc 2.33 and later; otherwise why not),
and where that costs here, the GLIBC_TUNABLES setting that corrects it: a
non-temporal threshold past the L3, and on AMD before Zen 5 glibc's rep
movsb window.  GLIBC_TUNABLES=... memkit env shows whether a setting took.
On an AMD EPYC Zen 3 VM with glibc 2.36:
  caches       L1d 32 KiB, L2 512 KiB, L3 32 MiB, line 64 B
  glibc sees   data cache 32 KiB, shared cache 256 MiB (glibc 2.36, ld.so --list-diagnostics)
  glibc uses   non-temporal copies from 192 MiB, rep movsb 2.1 KiB..512 KiB, rep stosb from 2 KiB
    disagrees  non-temporal copies from 192 MiB, 6x the 32 MiB L3 memkit measured (...): ...;
               corrected by GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=8388608
    disagrees  rep movsb for copies of 2.1 KiB to 512 KiB: ...;
               corrected by GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=524288
    together   GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=8388608:glibc.cpu.x86_rep_movsb_threshold=524288"""


PATHS = ["preload", "library", "static", "include", "pkgconfig", "cmake", "experiments"]


def add_arguments(p):
    add_build_option(p)
    p.add_argument("--json", action="store_true", help="print the fingerprint (or the table asked for) as JSON")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--tunables", action="store_true",
                      help="print each tunable: its default on this CPU, the value in force, its bounds "
                           "and what it controls")
    view.add_argument("--strategies", action="store_true",
                      help="print the per-CPU strategy table: how each row sets the per-CPU tunables' "
                           "defaults (* the row in force)")
    view.add_argument("--paths", nargs="?", const="all", choices=["all"] + PATHS, metavar="NAME",
                      help="print where memkit's files are: the preload library, the shared and static "
                           "libraries, the header's folder, pkg-config's and CMake's folders, the experiments; "
                           "with NAME (" + ", ".join(PATHS) + ") only that path, e.g. "
                           "LD_PRELOAD=$(memkit env --paths preload)")
    view.add_argument("--record", metavar="DIR",
                      help="write this machine as memkit reads it (fingerprint, glibc's diagnostics, "
                           "/proc/cpuinfo) into DIR, a new folder; MEMKIT_MACHINE=DIR reads it back")
    p.add_argument("--markdown", action="store_true",
                   help="with --tunables or --strategies: the Markdown table docs/library.md or "
                        "docs/strategy.md holds")


def main(args) -> int:
    if args.markdown and not (args.tunables or args.strategies):
        raise UsageError("--markdown goes with --tunables or --strategies")
    bench_dir = experiments.find_bench_dir(args.build)
    if args.paths:
        return print_paths(experiments.native_paths(bench_dir), args.paths, args.json)
    if args.tunables or args.strategies:
        table = experiments.tunables(bench_dir)
        if args.json:
            print(json.dumps(table["tunables"] if args.tunables else table["strategies"], indent=2))
        elif args.markdown:
            print(tunables_markdown(table) if args.tunables else strategies_markdown(table), end="")
        else:
            print(tunables_text(table) if args.tunables else strategies_text(table), end="")
        return 0
    fp = experiments.fingerprint(experiments.discover(bench_dir))
    if args.record:
        for path in machine.record(Path(args.record), fp):
            print(f"wrote {path}")
        print(f"MEMKIT_MACHINE={args.record} memkit COMMAND reads it instead of this machine")
        return 0
    now = load.sample()
    if args.json:
        print(json.dumps(dict(fp, load=now.as_record()), indent=2, sort_keys=True))
        return 0
    rows = describe_lines(fp) + [("library", experiments.library_version(bench_dir)), ("load", now.describe())]
    if machine.current().recorded:
        rows.append(("recorded", f"read from {machine.current().recorded} ({machine.ENV}), not this machine"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    note = unmeasured_note(fp)
    if note:
        print(note)
    return 0


def print_paths(paths: dict, which: str, as_json: bool) -> int:
    """One path alone (for $(...)), or all of them; a missing one is an
    error when asked for alone, "not found" in the list."""
    if which != "all":
        if paths[which] is None:
            raise MemkitError(f"no {which} path beside the experiments in {paths['experiments']}"
                              + (" (a build tree has none; `make install PREFIX=DIR` writes it)"
                                 if which in ("pkgconfig", "cmake") else ""))
        print(paths[which])
        return 0
    if as_json:
        print(json.dumps({k: str(v) if v else None for k, v in paths.items()}, indent=2))
        return 0
    print(aligned([[k, str(v) if v else "not found"] for k, v in paths.items()]), end="")
    return 0


def aligned(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in rows)


def markdown(rows: list[list[str]]) -> str:
    head = "| " + " | ".join(rows[0]) + " |\n" + "|---" * len(rows[0]) + "|\n"
    return head + "".join("| " + " | ".join(r) + " |\n" for r in rows[1:])


def tunables_text(table: dict) -> str:
    rows = [["name", "default here", "in force", "bounds", "what"]]
    for t in table["tunables"]:
        rows.append([t["name"], t["default"], t["in_force"], t["bounds"], t["help"]])
    return aligned(rows)


def tunables_markdown(table: dict) -> str:
    """docs/library.md's table: the same on every CPU, so a per-CPU default is
    "per CPU" (docs/strategy.md's table has the rows' values)."""
    rows = [["name", "default", "bounds", "what"]]
    for t in table["tunables"]:
        rows.append([f"`{t['name']}`", "per CPU" if t["per_cpu"] else f"`{t['default']}`", t["bounds"],
                     t["help"]])
    return markdown(rows)


def per_cpu_names(table: dict) -> list[str]:
    return [t["name"] for t in table["tunables"] if t["per_cpu"]]


def strategies_text(table: dict) -> str:
    """One line per per-CPU tunable, a column per row: narrower than the
    rows as lines."""
    rows = [["tunable"] + [s["name"] + ("*" if s["name"] == table["strategy"] else "")
                           for s in table["strategies"]]]
    for name in per_cpu_names(table):
        rows.append([name] + [s["defaults"][name] for s in table["strategies"]])
    rows.append(["variant"] + [variant_text(s) for s in table["strategies"]])
    rows.append(["measured"] + [measured_text(s) for s in table["strategies"]])
    return aligned(rows)


def variant_text(row: dict) -> str:
    """The row's variant ("auto": the first the CPU runs), and a function's
    own where it differs from the others' ("evex, memmove avx2")."""
    per_fn = {fn: v or "auto" for fn, v in (row.get("variants") or {}).items()}
    if not per_fn:
        return "auto"
    common = max(per_fn.values(), key=list(per_fn.values()).count)
    return ", ".join([common] + [f"{fn} {v}" for fn, v in per_fn.items() if v != common])


def measured_text(row: dict) -> str:
    """yes: the row has its evidence file (docs/evidence.md); no: a guess."""
    return "yes" if row.get("measured") else "no"


def strategies_markdown(table: dict) -> str:
    """docs/strategy.md's table: a line per row, a column per per-CPU tunable."""
    names = per_cpu_names(table)
    rows = [["row"] + [f"`{n}`" for n in names] + ["variant", "measured"]]
    for s in table["strategies"]:
        rows.append([f"`{s['name']}`"] + [s["defaults"][n] for n in names] +
                    [variant_text(s),
                     f"[{measured_text(s)}](../{s['evidence_file']})" if s.get("measured") else measured_text(s)])
    return markdown(rows)
