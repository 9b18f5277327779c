# SPDX-License-Identifier: Apache-2.0
"""The fleet report: one HTML page over every host (`memkit report --fleet`).

Per CPU model, a table of its hosts: the latest run, the fingerprint fields
that matter (a changed one highlighted with its earlier value), what moved
beyond the noise since the host's previous run; then the changes that two or
more hosts took together and what moved on all of them; then, folded, every
moved measurement per host.
"""

from __future__ import annotations

import html
from pathlib import Path

from memkit.comparison import fleet
from memkit.lab import glibc
from memkit.lab.fingerprint import LOUD_FIELDS
from memkit.report.run_report import CSS
from memkit.store.outdir import OutputDir

EXTRA_CSS = """
td.changed { background: #fff1d6; } .worse { color: #b00; } .better { color: #070; }
"""


def _value(key: str, value) -> str:
    if value in ("", None):
        return "-"
    return glibc.view_text(value) if key == glibc.KEY else str(value)


def _cell(s: fleet.HostStatus, key: str) -> str:
    e = html.escape
    text = e(_value(key, (s.latest["fingerprint"] or {}).get(key)))
    if key in s.changes:
        before = s.changes[key][0]
        return f"<td class='changed'><b>{text}</b><br><span class='meta'>was {e(_value(key, before))}</span></td>"
    return f"<td>{text}</td>"


def _moved_cell(s: fleet.HostStatus) -> str:
    e = html.escape
    if s.previous is None:
        return "<td class='meta'>first run</td>"
    if not s.moved:
        return f"<td>nothing beyond the noise ({s.compared} compared)</td>"
    counts = ", ".join(f"<span class='{v}'>{n} {v}</span>" for v in ("worse", "better", "changed")
                       if (n := s.count(v)))
    top = "<br>".join(f"<span class='{c.direction}'>x{c.ratio:.2f}</span> {e(fleet.measurement_name(c))}"
                      for c in s.moved[:fleet.MAX_SHOWN])
    return f"<td>{counts} of {s.compared}<br>{top}</td>"


def write_fleet_report(db, out: Path) -> Path:
    """Writes out/index.html over every host of db (replacing an earlier
    report's files there and nothing else: memkit.store.outdir); returns its path."""
    statuses = fleet.host_statuses(db)
    e = html.escape
    keys = [k for k in LOUD_FIELDS if k != "cpu_model"]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>memkit fleet report</title>"
             f"<style>{CSS}{EXTRA_CSS}</style></head><body>",
             f"<h1>memkit fleet: {len(statuses)} host{'s' if len(statuses) != 1 else ''}</h1>",
             f"<p class='meta'>{e(str(db.path))} &middot; each host's latest run against its previous run "
             "with the same grid; highlighted: what changed on the machine in between.</p>"]
    for cpu, hosts in fleet.groups(statuses):
        parts.append(f"<h2>{e(cpu)} &middot; {len(hosts)} host{'s' if len(hosts) != 1 else ''}</h2>")
        parts.append("<table><tr><th>host</th><th>latest run</th>" + "".join(f"<th>{e(k)}</th>" for k in keys) +
                     "<th>moved since its previous run</th></tr>")
        for s in hosts:
            run = s.latest
            prev = (f"<br><span class='meta'>vs run {s.previous['id']}"
                    f"{' (incomplete)' if s.previous.get('incomplete') else ''}</span>" if s.previous else "")
            unfinished = (f"<br><span class='worse'>incomplete: {e(run['incomplete'])}</span>"
                          if run.get("incomplete") else "")
            parts.append(f"<tr><td><b>{e(s.host)}</b></td><td>run {run['id']}<br>{e(run['started_at'])}"
                         f"{' (quick)' if run['quick'] else ''}{unfinished}{prev}</td>" +
                         "".join(_cell(s, k) for k in keys) + _moved_cell(s) + "</tr>")
        parts.append("</table>")
        pats = fleet.patterns(cpu, hosts)
        if pats:
            parts.append("<ul>" + "".join(f"<li>{e(fleet.pattern_line(p))}</li>" for p in pats) + "</ul>")
        for s in hosts:
            if len(s.moved) > fleet.MAX_SHOWN:
                rows = "".join(f"<tr><td class='{c.direction}'>{c.direction}</td><td>x{c.ratio:.3f}</td>"
                               f"<td>{e(fleet.measurement_name(c))}</td><td>{c.a:.4g} &rarr; {c.b:.4g} "
                               f"{e(c.unit)}</td><td>{c.low:.3f} .. {c.high:.3f}</td></tr>" for c in s.moved)
                parts.append(f"<details><summary>{e(s.host)}: all {len(s.moved)} moved measurements</summary>"
                             f"<table><tr><th></th><th>ratio</th><th>measurement</th><th>before &rarr; after</th>"
                             f"<th>95% interval of the ratio</th></tr>{rows}</table></details>")
    parts.append("<p class='meta'>Two hosts side by side: <code>memkit compare --machine A --machine B</code>; "
                 "the same as text: <code>memkit fleet</code>.</p></body></html>")
    with OutputDir(out, "the fleet report") as staging:
        (staging / "index.html").write_text("\n".join(parts))
    return out / "index.html"
