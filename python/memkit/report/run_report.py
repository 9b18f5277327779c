# SPDX-License-Identifier: Apache-2.0
"""The HTML report of one run: a one-screen headline (the fastest method per
operation and size range and memkit's ratio to it, memkit's losses, what
changed since the previous run), then each experiment's main result as a
plot, its verdicts, and its numbers in a folded table.

Layout on disk: OUT/index.html and OUT/plots/<experiment>-….png; the plots
folder is emptied first, so no file of an earlier report stays beside it.
"""

from __future__ import annotations

import html
import math
import shlex
from collections import defaultdict
from pathlib import Path

from memkit.comparison import compare as cmp
from memkit.comparison.compare import params_text
from memkit.judging import stats
from memkit.lab import glibc, ranking
from memkit.lab.fingerprint import cache_levels, describe_lines, differences
from memkit.lab.sizes import fmt_size
from memkit.programs import whole_program
from memkit.report import plots
from memkit.report.run_figures import (PLOTS_DIR, choose_rows, compact, experiment_figures, preferences,
                                       recorded_figures, slug, trade_figure, try_figures, varying, ws_order)
from memkit.results import records
from memkit.store.outdir import OutputDir
from memkit.tuning.evidence import unmeasured_note

FOLD_ROWS = 12
MAX_TABLE_ROWS = 400
LOSSES_SHOWN = 5      # the rest folded: the headline stays one screen


def working_set_rows(exp: str, ms: list[dict], memkit: set[str]) -> list[dict]:
    """Per working set (and operation): memkit's geometric-mean speed-up
    over the baseline, its worst point, and every other series' geometric
    mean; [] where the experiment measured no working sets.  memkit: the
    names the lab's rankings gave memkit's routine (memkit.lab.ranking)."""
    rows = [m for m in choose_rows(ms, preferences(exp, ms)) if records.speedup(m) is not None]
    if not any("ws" in m["params"] for m in rows):
        return []
    groups = defaultdict(list)
    for m in rows:
        groups[(m["params"].get("ws"), m["params"].get("op"))].append(m)
    out = []
    for ws in ws_order(rows):
        for (w, op), gms in groups.items():
            if w != ws:
                continue
            point_keys = [k for k in varying(gms) if k not in ("ws_bytes", "pages")]
            by_series = defaultdict(list)
            for m in gms:
                by_series[m["series"]].append(m)
            mk = [s for s in by_series if s in memkit]
            if not mk:
                continue
            main = mk[0]
            worst = min(by_series[main], key=lambda m: m["ratio"])
            out.append({"ws": ws, "ws_bytes": gms[0]["params"].get("ws_bytes"), "op": op, "memkit": main,
                        "baseline": worst.get("ratio_to"),
                        "geomean": stats.geomean([m["ratio"] for m in by_series[main]]),
                        "points": len(by_series[main]), "worst": worst["ratio"],
                        "worst_at": compact(worst["params"], point_keys),
                        "others": {s: stats.geomean([m["ratio"] for m in ss]) for s, ss in by_series.items()
                                   if s != main}})
    return out


def working_set_html(exp: str, ms: list[dict], memkit: set[str]) -> list[str]:
    """The experiment's working sets as one table: memkit per level, its
    worst, the others.  It describes; the losses are the lab's verdicts."""
    rows = working_set_rows(exp, ms, memkit)
    if not rows:
        return []
    e = html.escape
    out = ["<table class='ws'><tr><th>working set</th>" + ("<th>op</th>" if any(r["op"] for r in rows) else "") +
           "<th>memkit: geometric mean speed-up</th><th>memkit's worst</th>"
           "<th>the others (geometric mean)</th></tr>"]
    for r in rows:
        size = "in cache" if r["ws"] == "hot" else f"{fmt_size(r['ws_bytes'])} per side"
        others = ", ".join(f"{s} {g:.2f}x" for s, g in r["others"].items() if g)
        out.append(f"<tr><td>{e(r['ws'])} ({e(size)})</td>" + (f"<td>{e(r['op'] or '')}</td>" if any(
            x["op"] for x in rows) else "") +
            f"<td>{r['geomean']:.2f}x ({e(r['memkit'])} vs {e(r['baseline'] or '?')}, {r['points']} points)</td>"
            f"<td>{r['worst']:.2f}x ({e(r['worst_at'])})</td><td>{e(others)}</td></tr>")
    out.append("</table><p class='meta'>speed-ups over the baseline (&gt; 1: faster): the median of each point's "
               "paired rounds, their geometric mean over the points; where memkit is slower than the fastest "
               "method beyond the noise: the headline and the verdicts</p>")
    return out


# ---- the headline ----

TRADE_EXPERIMENT = "size-distributions"


def headline_html(db, run: dict, exps: list[dict], plot_dir: Path) -> list[str]:
    """One screen: the trade on this CPU as one picture, memkit's losses in
    red, then, folded, the fastest method per operation and range; then
    memkit against glibc tuned, and what changed since the previous run."""
    e = html.escape
    run_id = run["id"]
    parts = ["<section class='headline'><h2>Headline</h2>"]
    if exps and all(whole_program.is_try(x) for x in exps):
        parts += real_programs_html(db, run, exps)
        parts += ["<h3>Since the previous try of this command</h3>"] + changes_html(db, run)
        return parts + ["</section>"]
    verdicts = db.verdict_records(run_id)
    parts += trade_html(db, run_id, exps, plot_dir)
    parts += losses_html(verdicts)
    parts += real_programs_html(db, run, exps)
    parts += fastest_html(verdicts)
    spec = (run.get("fingerprint") or {}).get(glibc.TUNABLES_KEY)
    against = [(x["name"], glibc.headline(db.measurements(run_id, x["name"]),
                                          ranking.memkit_series(verdicts, x["name"]), spec))
               for x in exps]
    if any(line for _, line in against):
        parts.append("<h3>memkit against glibc as shipped and tuned</h3><ul class='versus-glibc'>" +
                     "".join(f"<li><b>{e(n)}</b>: {e(line)}</li>" for n, line in against if line) + "</ul>")
    parts.append("<h3>Since the previous run</h3>")
    parts += changes_html(db, run)
    parts.append("</section>")
    return parts


def trade_html(db, run_id: int, exps: list[dict], plot_dir: Path) -> list[str]:
    """The trade picture (run_figures.trade_figure), or why there is none."""
    e = html.escape
    ran = any(x["name"] == TRADE_EXPERIMENT for x in exps)
    figure = trade_figure(db.measurements(run_id, TRADE_EXPERIMENT), plot_dir) if ran else None
    if figure is None:
        why = "timed no working sets" if ran else "did not run it"
        return [f"<p class='meta'>The trade on this CPU, memkit against glibc per operation and cache level, "
                f"comes from {TRADE_EXPERIMENT}: this run {why} (<code>memkit run {TRADE_EXPERIMENT}</code>).</p>"]
    src, caption = figure
    return [f"<figure class='trade'><img src='{e(src)}' alt='{e(caption)}'><figcaption>{e(caption)} "
            f"(<a href='#{slug(TRADE_EXPERIMENT)}'>{TRADE_EXPERIMENT}</a>)</figcaption></figure>"]


def losses_html(verdicts: list[dict]) -> list[str]:
    e = html.escape
    losses = [v for v in verdicts if v.get("kind") == "loss"]
    parts = [f"<h3>memkit's losses{f' ({len(losses)})' if losses else ''}</h3>"]
    if losses:
        items = [f"<li><b>{e(v['experiment'])}</b>: {e(v['text'])}</li>" for v in losses]
        parts.append("<ul class='losses'>" + "".join(items[:LOSSES_SHOWN]) + "</ul>")
        if len(items) > LOSSES_SHOWN:
            parts.append(f"<details><summary>{len(items) - LOSSES_SHOWN} more</summary><ul class='losses'>"
                         + "".join(items[LOSSES_SHOWN:]) + "</ul></details>")
    elif any(v.get("kind") for v in verdicts):
        parts.append("<p>None: no experiment found memkit slower than the best other method beyond the noise.</p>")
    else:
        parts.append("<p>The experiments of this run do not classify their verdicts; the table of the fastest "
                     "methods shows where memkit trails.</p>")
    return parts


def fastest_html(verdicts: list[dict]) -> list[str]:
    """The fastest method per operation and range, as each experiment
    ranked them (memkit.lab.ranking), folded."""
    e = html.escape
    rows = ranking.headline_rows(verdicts)
    if not rows:
        return ["<p>No experiment of this run ranked memkit beside other methods.</p>"]
    slower = sum(ranking.is_loss(r) for r in rows)
    parts = [f"<details class='fastest'><summary>The fastest method per operation and range: {len(rows)} rows"
             f"{f', memkit slower beyond the noise in {slower}' if slower else ''}</summary>"
             "<table class='fastest'><tr><th>operation</th><th>where</th><th>fastest here</th><th>memkit</th></tr>"]
    for r in rows:
        cls = " class='loss'" if ranking.is_loss(r) else ""
        parts.append(f"<tr><td>{e(r['experiment'])}: {e(r['what'])}</td><td>{e(r['where'])}</td>"
                     f"<td>{e(r['fastest'])}</td><td{cls}>{e(r['memkit'])}: "
                     f"{e(ranking.standing_text(r))}</td></tr>")
    parts.append("</table><p class='meta'>as each experiment judged it (its \"fastest\" verdict): a range "
                 "goes on while its method is the fastest or within its noise; memkit slower than the "
                 "fastest other method beyond the noise in red, each such point one of the losses "
                 "above</p></details>")
    return parts


def real_programs_html(db, run: dict, exps: list[dict]) -> list[str]:
    """What memkit did to whole programs: a `memkit try` run's bottom line;
    for a lab run, the latest try of each command on its host as it stood
    then (a report of an old run does not change with later tries)."""
    e = html.escape
    tried = [x for x in exps if whole_program.is_try(x)]
    if tried:
        line = whole_program.stored_bottom_line(db, run["id"]) or ""
        cls = "loss" if any(v.get("kind") == "loss" for v in db.verdict_records(run["id"], whole_program.EXPERIMENT)) \
            else "bottom-line"
        return [f"<p class='{cls}'>{e(line)}</p>",
                f"<p class='meta'><code>{e(shlex.join(whole_program.tried_argv(tried[0])))}</code> run as a whole "
                "process without and with memkit's preload library, in interleaved pairs; ratio = time without "
                "÷ time with (&gt; 1: faster with memkit), its median and ~95% interval over the pairs.</p>"]
    lines = whole_program.latest_bottom_lines(db, run.get("hostname"), up_to=run["id"])
    if not lines:
        return []
    return ["<h3>Real programs (<code>memkit try</code> on this host, the latest of each)</h3><ul class='tried'>"] + \
        [f"<li>{e(text)} <span class='meta'>(run {run_id})</span></li>" for run_id, text in lines] + ["</ul>"]


def changes_html(db, run: dict) -> list[str]:
    e = html.escape
    runs = db.runs()
    prev = whole_program.previous_comparable(db, runs, run)
    if prev is None:
        return ["<p>No earlier run in the database measured the same.</p>" if any(r["id"] < run["id"] for r in runs)
                else "<p>This is the first run in the database.</p>"]
    result = cmp.compare_measurements(db.measurements(prev["id"]), db.measurements(run["id"]),
                                      busy=bool(prev.get("busy") or run.get("busy")),
                                      quick=bool(prev["quick"] and run["quick"]))
    loud, quiet = differences(prev["fingerprint"] or {}, run["fingerprint"] or {})
    out = [f"<p>Compared with run {prev['id']} ({e(prev['started_at'])}): {len(result.changes)} measurements "
           f"in both, {len(result.flagged)} changed beyond the noise "
           f"({sum(c.direction == 'worse' for c in result.flagged)} worse, "
           f"{sum(c.direction == 'better' for c in result.flagged)} better).</p>"]
    if loud:
        out.append("<p class='loss'>The machine changed: " + e("; ".join(loud)) + "</p>")
    if quiet:
        out.append("<p class='meta'>Also differs: " + e("; ".join(quiet)) + "</p>")
    flagged = sorted(result.flagged, key=lambda c: -abs(math.log(c.ratio)))[:6]
    if flagged:
        out.append("<ul>" + "".join(
            f"<li>{e(c.direction)}: {e(c.experiment)} {e(c.series)} {e(params_text(c.params))}: {e(c.metric)} "
            f"{c.a:.4g} &rarr; {c.b:.4g} {e(c.unit)} (x{c.ratio:.3f}, interval {c.low:.3f}..{c.high:.3f})</li>"
            for c in flagged) + "</ul>")
    out.append(f"<p class='meta'>Details: <code>memkit compare {prev['id']} {run['id']}</code></p>")
    return out


# ---- the page ----

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1000px;
       margin: 1.5em auto; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 1.6em; }
h3 { margin: .8em 0 .3em; font-size: 1.05em; }
/* Nothing is wider than the page, nor scrolls in a box of its own: a long
   word (a GLIBC_TUNABLES line, a JSON key, the CPU's flags) wraps, and a
   table's cells wrap before the table outgrows the page. */
body { overflow-wrap: break-word; }
table { border-collapse: collapse; font-size: .85em; margin: .4em 0; max-width: 100%; }
td, th { border: 1px solid #ddd; padding: .15em .5em; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
th { background: #f4f4f4; }
table.fastest { width: 100%; }
figure.trade { margin: .4em 0; }
details.fastest > summary { font-weight: bold; margin: .8em 0 .3em; cursor: pointer; }
.loss { color: #b00; font-weight: bold; }
.verdicts li { margin: .2em 0; overflow-wrap: anywhere; }
.failed { color: #b00; font-weight: bold; }
img { max-width: 100%; border: 1px solid #eee; box-sizing: border-box; }
figure { margin: 1em 0; } figcaption { font-size: .85em; color: #555; }
pre { background: #f8f8f8; padding: .6em; overflow-x: auto; font-size: .78em; }
.meta { color: #555; font-size: .9em; }
.bottom-line { font-size: 1.15em; font-weight: bold; }
"""


def _table(ms: list[dict]) -> str:
    rows = []
    for m in ms[:MAX_TABLE_ROWS]:
        spread = f"{m['min']:.4g} .. {m['max']:.4g}" if m.get("min") is not None and m.get("max") is not None else ""
        ratio = ""
        if m.get("ratio") is not None:
            kind = "speed-up" if records.speedup(m) is not None else "value ÷"
            ratio = f"{kind} {m.get('ratio_to')}: {m['ratio']:.3f}"
            if m.get("ratio_min") is not None:
                ratio += f" ({m['ratio_min']:.3f} .. {m['ratio_max']:.3f})"
        cells = [m["series"], params_text(m["params"]), m["metric"],
                 f"{m['value']:.4g} {m.get('unit') or ''}" if m["value"] is not None else "-",
                 spread, str(m.get("samples") or ""), ratio]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    more = len(ms) - MAX_TABLE_ROWS
    tail = f"<p>... and {more} more rows (`memkit export` prints them all).</p>" if more > 0 else ""
    head = "".join(f"<th>{h}</th>" for h in ("series", "params", "metric", "value", "min .. max",
                                               "samples", "ratio (min .. max)"))
    table = f"<table class='data'><tr>{head}</tr>{''.join(rows)}</table>{tail}"
    if len(ms) > FOLD_ROWS:
        return f"<details><summary>the numbers ({len(ms)} rows)</summary>{table}</details>"
    return table


def write_report(db, run_id: int, out: Path) -> Path:
    """Writes out/index.html and out/plots/*.png for one run, replacing the
    files of an earlier report there and nothing else (memkit.store.outdir);
    returns the HTML's path."""
    run = db.run(run_id)   # a missing run: nothing written
    with OutputDir(out, "the report") as staging:
        _write_report(db, run, staging)
    return out / "index.html"


def _write_report(db, run: dict, out: Path):
    plots.reset_colors()
    run_id = run["id"]
    plot_dir = out / PLOTS_DIR
    plot_dir.mkdir()
    fp = run["fingerprint"] or {}
    levels = cache_levels(fp)
    e = html.escape
    exps = run["experiments"]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>memkit lab report, run {run_id}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>memkit lab report: run {run_id}</h1>",
             f"<p class='meta'>{e(fp.get('cpu_model', '?'))} &middot; {e(run['started_at'])} .. "
             f"{e(run['finished_at'])}{' &middot; quick grid' if run['quick'] else ''}"
             f" &middot; tuned profile: {e(run['profile'] or 'none')}"
             f"{' &middot; <span class=loss>busy machine: ' + e(run['busy']) + '</span>' if run.get('busy') else ''}"
             f"</p>"]
    note = unmeasured_note(fp)
    if note:
        parts.append(f"<p class='loss'>{e(note)}</p>")
    parts += headline_html(db, run, exps, plot_dir)

    parts.append("<h2>Experiments</h2><table><tr><th>experiment</th><th>status</th><th>seconds</th></tr>")
    for x in exps:
        status = x["status"] if x["status"] == "ok" else f"<span class='failed'>{e(x['status'])}</span>"
        parts.append(f"<tr><td><a href='#{slug(x['name'])}'>{e(x['name'])}</a></td><td>{status}</td>"
                     f"<td>{x['seconds'] or 0:.1f}</td></tr>")
    parts.append("</table>")

    for x in exps:
        parts += _experiment_html(db, run_id, x, levels, plot_dir)
    parts += _machine_html(fp, levels)
    parts.append(_history_html(db))
    (out / "index.html").write_text("\n".join(parts))


def _experiment_html(db, run_id: int, x: dict, levels, plot_dir: Path) -> list[str]:
    """One experiment's section: its figures, verdicts, table and own output."""
    e = html.escape
    name = x["name"]
    parts = [f"<h2 id='{slug(name)}'>{e(name)}</h2>",
             f"<p>{e(x['description'] or '')}<br><span class='meta'>seed: {e(x['seed'] or '-')}"
             f" &middot; {x['seconds'] or 0:.1f} s</span></p>"]
    if x["status"] != "ok":
        parts.append(f"<p class='failed'>{e(x['error'] or x['status'])}</p>")
    vs = db.verdict_records(run_id, name)
    memkit = ranking.memkit_series(vs)
    ms = db.measurements(run_id, name)
    if whole_program.is_try(x):   # no grid to plot: the pairs, in the order they ran
        figures, rows = try_figures(name, ms, plot_dir), ms
    else:
        figures, rows = experiment_figures(name, ms, levels, plot_dir, frozenset(memkit))
        figures += recorded_figures(name, ms, plot_dir)
    # The picture first, as a reader scrolling to the experiment looks for it; then what the lab concluded.
    for src, caption in figures:
        parts.append(f"<figure><img src='{e(src)}' alt='{e(caption)}'><figcaption>{e(caption)}</figcaption>"
                     "</figure>")
    if vs:
        items = "".join(f"<li{' class=loss' if v.get('kind') == 'loss' else ''}>{e(v['text'])}</li>" for v in vs)
        lst = f"<ul class='verdicts'>{items}</ul>"
        parts.append(lst if len(vs) <= FOLD_ROWS else
                     f"<details open><summary>{len(vs)} verdicts</summary>{lst}</details>")
    parts += working_set_html(name, ms, memkit)
    if rows:
        parts.append(_table(rows))
    if x["output"]:
        parts.append(f"<details><summary>the experiment's own table</summary><pre>{e(x['output'])}</pre>"
                     "</details>")
    return parts


def _machine_html(fp: dict, levels) -> list[str]:
    e = html.escape
    parts = ["<h2>Machine</h2><table>"]
    parts += [f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in describe_lines(fp)]
    parts.append("</table>")
    if levels:
        parts.append("<p class='meta'>Plot bands: " + ", ".join(f"{n} up to {fmt_size(b)}" for n, b in levels) +
                     ", RAM beyond.</p>")
    return parts


def _history_html(db) -> str:
    """Every run of the database, folded, and how to compare two."""
    e = html.escape
    history = ["<table><tr><th>run</th><th>started</th><th>grid</th><th>CPU</th><th>microcode</th>"
               "<th>kernel</th><th>glibc</th><th>commit</th><th>profile</th><th>busy</th></tr>"]
    all_runs = db.runs()
    for r in all_runs:
        f = r["fingerprint"] or {}
        history.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in (
            r["id"], r["started_at"], "quick" if r["quick"] else "default", f.get("cpu_model", "?"),
            f.get("microcode", "?"), f.get("kernel", "?"), f.get("glibc", "?"), f.get("memkit_commit", "?"),
            r["profile"] or "-", r.get("busy") or "")) + "</tr>")
    history.append("</table>")
    return (f"<h2>History</h2><details><summary>{len(all_runs)} runs</summary>{''.join(history)}</details>"
            "<p class='meta'>Compare two runs: <code>memkit compare A B</code>.</p></body></html>")
