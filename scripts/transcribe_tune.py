#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns a `memkit tune` printout from a machine the team cannot draw into
an evidence file (docs/evidence.md), marked "transcribed from text": the
printout has every size's pick and every decision but not the per-round
times.  The CPU comes from a description given as JSON (cpuid's view:
vendor, family, model, stepping, microcode, caches, ISA flags), the
defaults tune measured against from --defaults (the printout shows them
rounded).  The library of the build (--build) says which strategy each
cell runs under a set of tunables; those answers go into the file, so it
re-derives without the library.  Fails unless the re-derived decisions
print as the printout's.

    scripts/transcribe_tune.py --build build --cpu cpu.json --defaults defaults.json \
        --variants evex --source-note "..." TUNE.TXT OUT.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from memkit.lab.sizes import fmt_size  # noqa: E402
from memkit.tuning import catalogue, evidence  # noqa: E402

# the printout's pick lines (commands/tune.py PICK_LABELS) -> (family, ops)
LABELS = {"memset 0, picked:": ("memset", ["set0"]), "memset non-zero, picked:": ("memset", ["set"]),
          "rep stosb vs loop (both):": ("memset", ["set0", "set"]),
          "memcpy (both alignments):": ("memcpy", ["copy", "copy3"]),
          "parallel (memset, memcpy):": ("parallel", ["pset", "pcopy"])}


def sizes_named(grid):
    return {fmt_size(s): s for s in grid}


def expand(text: str, grid: list[int]) -> list[tuple[int, str]]:
    """"loop 1 KiB..16 KiB, nt 64 MiB" -> [(size, strategy)] on the grid."""
    named, out = sizes_named(grid), []
    for run in text.split(", "):
        strategy, _, span = run.partition(" ")
        a, _, b = span.partition("..")
        lo, hi = named[a], named[b] if b else named[a]
        out += [(s, strategy) for s in grid if lo <= s <= hi]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--cpu", required=True, help="JSON: the CPU as evidence.cpu_of keeps it")
    ap.add_argument("--defaults", required=True, help="JSON: the tunables in force, bytes or null")
    ap.add_argument("--variants", default="", help="the variant the run forced, if any")
    ap.add_argument("--source-note", default="")
    ap.add_argument("tune_txt")
    ap.add_argument("out")
    a = ap.parse_args()
    text = Path(a.tune_txt).read_text().splitlines()
    method = next(l[len("method: "):] for l in text if l.startswith("method: "))
    m = re.search(r"(\d+) interleaved rounds over (\d+) process", method)
    rounds, processes = int(m.group(1)), int(m.group(2))
    m = re.search(r"(\d+) sizes (\S+ \S+)\.\.(\S+ \S+);", method)
    grid = catalogue.size_grid(1 << 10, 1 << 30, 2)
    grid = [s for s in grid if sizes_named(grid)[m.group(2)] <= s <= sizes_named(grid)[m.group(3)]]
    assert len(grid) == int(m.group(1)), (len(grid), m.group(1))
    per_octave = 2   # the full grid: the printout's sizes are its points (asserted above)

    cpu = json.loads(Path(a.cpu).read_text())
    defaults = json.loads(Path(a.defaults).read_text())
    live = catalogue.Paths(Path(a.build) / "bench")
    families: dict = {}
    for line in text:
        for label, (family, ops) in LABELS.items():
            if line.strip().startswith(label):
                body = line.strip()[len(label):].strip()
                body = re.sub(r"\s+\(.*\)$", "", body)
                fgrid = catalogue.family_grid(family, grid)
                fam = families.setdefault(family, {"grid": fgrid, "strategies": [
                    s.name for s in catalogue.strategies(family, int(cpu.get("cpus_online") or 1))],
                    "cells": [], "picks": []})
                fam["picks"] += [{"ops": ops, "size": s, "default": None, "chosen": c,
                                  "evidence": None} for s, c in expand(body, fgrid)]
    # which strategy the defaults ran at each pick: the library says (as tune's Paths)
    for family, fam in families.items():
        for p in fam["picks"]:
            spec = dict(defaults)
            if p["ops"] == ["set0", "set"]:
                spec.update(nt_threshold=None, nt_threshold_zero=None)
            p["default"] = live.at(spec, p["ops"][0], p["size"]).split()[0]
            if p["chosen"] != p["default"]:
                p["evidence"] = {"rounds": rounds, "speedups": None, "median": None}
    # the rep stosb comparison covers the sizes below both non-temporal thresholds only
    doc = evidence.document(
        dict(cpu, variants={op: a.variants for op in ("memset", "memcpy", "memmove")} if a.variants
             else cpu.get("variants")),
        {"rounds": rounds, "processes": processes, "per_process": rounds // processes,
         "per_octave": per_octave, "lo": grid[0], "hi": grid[-1], "method": method},
        defaults, families, [], live, source=evidence.TRANSCRIBED, note=a.source_note)
    derived = evidence.derive(doc, paths=live)
    doc["paths"] = evidence.paths_record(live)
    doc["decisions"] = [evidence.decision_record(f, c) for f, c in derived]
    # the printout's decision table, as tune printed it
    table = {}
    for line in text:
        m = re.match(r"^(\w+)\s+(\S+ \S+|\S+)\s+(\(default\)|\S+ \S+|\S+)\s\s", line)
        if m and m.group(1) in {c.name for _, c in derived}:
            table[m.group(1)] = m.group(3)
    for _, c in derived:
        got = c.show(c.value) if c.moved else "(default)"
        if table.get(c.name) != got:
            sys.exit(f"{c.name}: re-derived {got}, the printout says {table.get(c.name)}")
    evidence.write(Path(a.out), doc)
    print(f"wrote {a.out}: {len(derived)} decisions re-derived as printed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
