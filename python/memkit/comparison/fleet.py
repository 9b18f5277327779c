# SPDX-License-Identifier: Apache-2.0
"""The fleet: every host's latest run against that host's previous one that
shares measurements with it (of the same kind first: a `memkit try` of the
same command, or a lab run of the same grid;
memkit.programs.whole_program.previous_comparable, the rule `compare` uses).

For each host: what changed in its fingerprint (microcode, kernel, glibc,
tunables, profile, CPU) and which measurements moved beyond the noise
(flagged by memkit.comparison.compare, as `memkit compare` flags them).  Hosts are
grouped by CPU model, and within a group the hosts that took the same change
are put side by side with what moved on all of them: the Downs seed's
microcode update, seen across machines, is one line.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from memkit.errors import MemkitError
from memkit.comparison import compare as cmp
from memkit.lab.fingerprint import LOUD_FIELDS, changed_keys, describe_change
from memkit.programs import whole_program
from memkit.terminal import printable

MAX_SHOWN = 3   # moved measurements named per host line


def machine_changes(fa: dict, fb: dict) -> dict:
    """{key: [before, after]} for the fingerprint fields that change performance."""
    fa, fb = fa or {}, fb or {}
    return {k: [fa.get(k), fb.get(k)] for k in changed_keys(fa, fb) if k in LOUD_FIELDS}


def change_text(changes: dict) -> str:
    return "; ".join(describe_change(k, a, b) for k, (a, b) in changes.items())


def measurement_name(c) -> str:
    return " ".join(x for x in (c.experiment, c.series, cmp.params_text(c.params), c.metric) if x)


def _strength(c) -> float:
    return abs(math.log(c.ratio)) if c.ratio and c.ratio > 0 and not math.isnan(c.ratio) else 0.0


@dataclass
class HostStatus:
    host: str
    cpu_model: str
    latest: dict
    previous: Optional[dict]
    runs: int
    changes: dict = field(default_factory=dict)       # fingerprint key -> [before, after]
    moved: list = field(default_factory=list)         # compare.Change flagged, strongest first
    compared: int = 0                                 # measurements in both runs
    bottom_line: Optional[str] = None                 # the latest run's, when it is a `memkit try`

    def count(self, direction: str) -> int:
        return sum(c.direction == direction for c in self.moved)


@dataclass
class Pattern:
    """Two or more hosts of one CPU model that took the same fingerprint change, and the
    measurements that moved the same way on every one of them."""
    cpu_model: str
    changes: dict
    hosts: list
    common: list       # [(measurement name, direction, [ratio per host])]
    others: list       # hosts of the model without that change


def latest_runs(db, hosts: list) -> list[dict]:
    """The latest run of each named host (for `compare --machine A --machine B`)."""
    out = []
    for h in hosts:
        runs = db.runs(host=h)
        if not runs:
            known = sorted({r["hostname"] for r in db.runs() if r["hostname"]})
            raise MemkitError(f"no runs of host '{h}' (hosts: {', '.join(known) or 'none'})")
        out.append(runs[-1])
    return out


def host_statuses(db) -> list[HostStatus]:
    by_host: dict = {}
    for r in db.runs():
        by_host.setdefault(r["hostname"] or "(unknown)", []).append(r)
    out = []
    for host, runs in sorted(by_host.items()):
        latest = runs[-1]
        prev = whole_program.previous_comparable(db, runs, latest)
        st = HostStatus(host, (latest["fingerprint"] or {}).get("cpu_model") or "unknown CPU", latest, prev,
                        len(runs), bottom_line=whole_program.stored_bottom_line(db, latest["id"]))
        if prev is not None:
            st.changes = machine_changes(prev["fingerprint"], latest["fingerprint"])
            res = cmp.compare_measurements(db.measurements(prev["id"]), db.measurements(latest["id"]),
                                           busy=bool(prev.get("busy") or latest.get("busy")),
                                           quick=bool(prev["quick"] and latest["quick"]))
            st.compared = len(res.changes)
            st.moved = sorted(res.flagged, key=_strength, reverse=True)
        out.append(st)
    return out


def groups(statuses: list[HostStatus]) -> list[tuple[str, list[HostStatus]]]:
    by_cpu: dict = {}
    for s in statuses:
        by_cpu.setdefault(s.cpu_model, []).append(s)
    return sorted(by_cpu.items())


def patterns(cpu_model: str, hosts: list[HostStatus]) -> list[Pattern]:
    by_change: dict = {}
    for s in hosts:
        if s.changes:
            by_change.setdefault(change_text(s.changes), []).append(s)
    out = []
    for _, same in sorted(by_change.items()):
        if len(same) < 2:
            continue   # one host: its own line says it all
        # What moved the same way on every host that took this change.
        seen = Counter()
        for s in same:
            seen.update({(measurement_name(c), c.direction) for c in s.moved})
        common = []
        for (name, verdict), n in seen.items():
            if n == len(same):
                ratios = [next(c.ratio for c in s.moved if measurement_name(c) == name) for s in same]
                common.append((name, verdict, ratios))
        common.sort(key=lambda x: -max(abs(math.log(r)) for r in x[2] if r > 0))
        out.append(Pattern(cpu_model, same[0].changes, [s.host for s in same], common,
                           [s.host for s in hosts if s not in same]))
    return out


def to_json(statuses: list[HostStatus]) -> dict:
    out = []
    for cpu, hosts in groups(statuses):
        out.append({
            "cpu_model": cpu,
            "hosts": [{
                "host": s.host, "runs": s.runs,
                "run": s.latest["id"], "started_at": s.latest["started_at"], "quick": bool(s.latest["quick"]),
                "incomplete": s.latest.get("incomplete"),
                "previous_run": s.previous["id"] if s.previous else None,
                "previous_incomplete": s.previous.get("incomplete") if s.previous else None,
                "bottom_line": s.bottom_line,
                "fingerprint_changes": s.changes,
                "compared": s.compared,
                "better": s.count("better"), "worse": s.count("worse"), "changed": s.count("changed"),
                "moved": [c.as_json() for c in s.moved],
            } for s in hosts],
            "patterns": [{"changes": p.changes, "hosts": p.hosts, "without_change": p.others,
                          "moved_on_all": [{"measurement": n, "direction": v, "ratios": r} for n, v, r in p.common]}
                         for p in patterns(cpu, hosts)],
        })
    return {"hosts": len(statuses), "groups": out}


def host_line(s: HostStatus) -> str:
    head = f"{printable(s.host)}: run {s.latest['id']} {s.latest['started_at']}{' quick' if s.latest['quick'] else ''}"
    if s.bottom_line:
        head += f" (memkit try: {printable(s.bottom_line)})"
    if s.latest.get("incomplete"):   # killed midway, or still running: not a run like the others
        head += f" INCOMPLETE: {printable(s.latest['incomplete'])}"
    if s.previous is None:
        return f"{head}; its first run{' of this command' if s.bottom_line else ''}, nothing to compare with"
    parts = [f"vs run {s.previous['id']}" + (" (incomplete)" if s.previous.get("incomplete") else "")]
    parts.append(f"CHANGED {change_text(s.changes)}" if s.changes else "same machine state")
    if not s.compared:
        parts.append("no measurement in both runs")
    elif not s.moved:
        parts.append(f"nothing moved beyond the noise ({s.compared} compared)")
    else:
        counts = ", ".join(f"{n} {v}" for v in ("worse", "better", "changed") if (n := s.count(v)))
        shown = "; ".join(f"{measurement_name(c)} x{c.ratio:.2f}" for c in s.moved[:MAX_SHOWN])
        more = f"; +{len(s.moved) - MAX_SHOWN} more" if len(s.moved) > MAX_SHOWN else ""
        parts.append(f"moved: {counts} of {s.compared}: {shown}{more}")
    return f"{head}; " + "; ".join(parts)


def pattern_line(p: Pattern) -> str:
    who = f"{len(p.hosts)} host{'s' if len(p.hosts) > 1 else ''} ({', '.join(p.hosts)})"
    if not p.common:
        return f"{who} took {change_text(p.changes)}: nothing moved the same way on all of them"
    worst = "; ".join(f"{n} {v} (x{min(r):.2f}..x{max(r):.2f})" for n, v, r in p.common[:MAX_SHOWN])
    more = f"; +{len(p.common) - MAX_SHOWN} more" if len(p.common) > MAX_SHOWN else ""
    without = f" (not taken by {', '.join(p.others)})" if p.others else ""
    return (f"{who} took {change_text(p.changes)}{without}: {len(p.common)} measurement"
            f"{'s' if len(p.common) > 1 else ''} moved the same way on all: {worst}{more}")


def text_lines(statuses: list[HostStatus]) -> list[str]:
    lines = []
    for cpu, hosts in groups(statuses):
        lines.append(f"== {cpu} ({len(hosts)} host{'s' if len(hosts) > 1 else ''})")
        lines += [f"  {host_line(s)}" for s in hosts]
        for p in patterns(cpu, hosts):
            lines.append(f"  => {pattern_line(p)}")
    return lines
