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
import re
import shlex
from collections import defaultdict
from pathlib import Path
from typing import Optional

from memkit.comparison import compare as cmp
from memkit.comparison.compare import params_text
from memkit.judging import stats
from memkit.lab import ranking
from memkit.lab.fingerprint import cache_levels, describe_lines, differences
from memkit.lab.sizes import fmt_size
from memkit.programs import whole_program
from memkit.report import plots, recording_plot
from memkit.results import records
from memkit.store.outdir import OutputDir
from memkit.tuning.evidence import unmeasured_note

PLOTS_DIR = "plots"
SIZE_KEYS = ("size", "bytes", "region", "region_size")
MAX_LINE_STYLES = 4
MAX_SPLIT_FIGURES = 6
FOLD_ROWS = 12
MAX_TABLE_ROWS = 400
LOSSES_SHOWN = 5      # the rest folded: the headline stays one screen

# Where an experiment's main result is not its first metric against its
# axis: which metric, which x, which rows, and what to draw besides.
PLOT_PREFS = {
    # CPU per GB against threads (the seed's pathology is many threads).
    # One figure per cap and workload: lock kinds by colour, grains by line style.
    "zeroing": {"metrics": ("cpu_s_per_gb", "cpu_ms_per_gb", "gb_per_cpu_s"), "x": "threads",
                "ignore": ("peak_awake", "bytes"), "split": ("awake", "workload")},
    # Aligned throughput as the main plot; misalignment as one worst-offset ratio.
    "copy-sweep": {"fix": {"dst_offset": 0}, "worst_over": "dst_offset"},
    # Bars: first touch, warm touch, munmap...: a few numbers per mode.
    "faults": {"bars": True},
    # A figure per `then`: the copy read right after it is made, and the copy alone.
    "copy-read": {"split": ("then",)},
}
# Experiments measured at several working sets (ws=hot,l3,dram...): a figure
# per working set, its size and pages named by the figure, not the bars.
WS_PREF = {"split": ("ws",), "ignore": ("ws_bytes", "pages")}
# A metric plotted as its reciprocal, so the plot reads as its title says.
RECIPROCAL = {"GB/CPU-s": ("CPU-s/GB", "CPU seconds per GB")}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-").lower() or "x"


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def axis_of(ms: list[dict], pref: dict) -> tuple[Optional[str], str]:
    """(the x parameter, its unit): the records' own axis, else a size
    parameter every row has (old records), else none."""
    if pref.get("x") and all(_num(m["params"].get(pref["x"])) for m in ms):
        return pref["x"], ""
    named = [m["axis"] for m in ms if m.get("axis")]
    if named:
        return named[0].get("name"), named[0].get("unit") or ""
    if any(m.get("format", 1) >= 2 for m in ms):
        return None, ""   # the records say: no numeric axis
    for k in SIZE_KEYS:
        if all(_num(m["params"].get(k)) for m in ms):
            return k, "B"
    return None, ""


def speed(m: dict, v=None) -> Optional[float]:
    """The value turned so that higher is faster (by the record's direction)."""
    v = m["value"] if v is None else v
    d = records.better_direction(m)
    if v is None or d is None or (d == "lower" and v <= 0):
        return None
    return 1.0 / v if d == "lower" else v


def varying(ms: list[dict], skip=()) -> list[str]:
    """The parameters that take more than one value over ms."""
    keys = dict.fromkeys(k for m in ms for k in m["params"] if k not in skip)
    return [k for k in keys if len({repr(m["params"].get(k)) for m in ms}) > 1]


def compact(params: dict, keys: list[str]) -> str:
    return params_text({k: params.get(k) for k in keys}) or "-"


def choose_rows(ms: list[dict], pref: dict) -> list[dict]:
    """The experiment's main measurements: one headline metric per thing
    (or the preferred metric), restricted to the preferred rows."""
    rows = ms
    for metric in pref.get("metrics", ()):
        picked = [m for m in ms if m["metric"] == metric]
        if picked:
            rows = picked
            break
    else:
        rows = list(cmp.headline(ms).values())
    for k, v in pref.get("fix", {}).items():
        fixed = [m for m in rows if m["params"].get(k) == v]
        if fixed:
            rows = fixed
    return rows


def _label_unit(rows: list[dict]) -> tuple[str, str, bool]:
    """(metric label, unit, plotted as the reciprocal)."""
    unit = rows[0].get("unit") or ""
    if unit in RECIPROCAL:
        new_unit, label = RECIPROCAL[unit]
        return label, new_unit, True
    return rows[0]["metric"], unit, False


class Figures:
    """Collects one experiment's PNGs under the report's plots folder."""

    def __init__(self, exp: str, plot_dir: Path):
        self.exp, self.dir, self.items = exp, plot_dir, []

    def path(self, *parts) -> Path:
        name = "-".join([slug(self.exp)] + [slug(p) for p in parts if p]) + ".png"
        return self.dir / name

    def add(self, path: Path, caption: str):
        self.items.append((f"{PLOTS_DIR}/{path.name}", caption))


def line_figures(fig: Figures, rows: list[dict], x: str, unit: str, pref: dict, levels):
    label, yunit, recip = _label_unit(rows)
    size_axis = unit == "B" or x in SIZE_KEYS
    positive = [m for m in rows if _num(m["params"].get(x)) and m["params"][x] > 0] if size_axis else rows
    dropped = len(rows) - len(positive)
    others = [k for k in varying(positive, skip=(x,) + tuple(pref.get("ignore", ()))) if k != "series"]
    combos = list(dict.fromkeys(compact(m["params"], others) for m in positive))
    # Figures split by the preferred keys, else by the first key when there are too many lines.
    split = [k for k in pref.get("split", ()) if k in others] or \
        (others[:1] if len(combos) > MAX_LINE_STYLES else [])
    parts = [(None, positive)]
    if split:
        by = defaultdict(list)
        for m in positive:
            by[compact(m["params"], split)].append(m)
        parts = list(by.items())[:MAX_SPLIT_FIGURES]
    xlabel = f"{x} ({unit}, log scale)" if size_axis else x
    for tag, part in parts:
        rest = [k for k in others if k not in split]
        # A parameter that only repeats the series' name (lock=spin of series spin) labels nothing.
        rest = [k for k in rest if any(str(m["params"].get(k)) != m["series"] for m in part)]
        styles = list(dict.fromkeys(compact(m["params"], rest) for m in part))
        curves = defaultdict(list)
        for m in part:
            curves[(m["series"], compact(m["params"], rest) if rest else "")].append(m)
        out = []
        for (series, other), pts in curves.items():
            pts.sort(key=lambda m: m["params"][x])
            def val(v):
                return None if v is None else (1 / v if recip and v else v)
            ys = [val(m["value"]) for m in pts]
            lo = [val(m.get("max") if recip else m.get("min")) for m in pts]
            hi = [val(m.get("min") if recip else m.get("max")) for m in pts]
            ok = all(v is not None for v in lo + hi)
            out.append({"label": f"{series} {other}".strip(), "series": series,
                        "style": styles.index(other) if rest else 0, "x": [m["params"][x] for m in pts],
                        "y": ys, "lo": lo if ok else None, "hi": hi if ok else None})
        suffix = f" ({tag})" if tag else ""
        path = fig.path(label, tag)
        plots.lines(out, path=path, title=f"{fig.exp}: {label}{suffix}", xlabel=xlabel,
                    ylabel=f"{label} ({yunit})", size_axis=size_axis, levels=levels)
        note = f"; {x} 0 is not on the log axis (its numbers are in the table)" if dropped else ""
        fig.add(path, f"{label} in {yunit} against {x}{suffix}; shaded: min..max of the samples{note}")
        ratio_figure(fig, part, x, xlabel, size_axis, levels, tag)


def ratio_figure(fig: Figures, rows: list[dict], x: str, xlabel: str, size_axis: bool, levels, tag=None):
    """The paired ratios against the baseline, labelled by what they are:
    speed-ups (format 2) or the old records' value ÷ baseline's value."""
    with_ratio = [m for m in rows if m.get("ratio") is not None and m.get("ratio_to")]
    if len({m["params"][x] for m in with_ratio}) < 2:
        return
    new = [m for m in with_ratio if records.speedup(m) is not None]
    use = new or with_ratio
    curves = defaultdict(list)
    for m in use:
        curves[(m["series"], m.get("ratio_to"))].append(m)
    out = []
    for (series, base), pts in curves.items():
        pts.sort(key=lambda m: m["params"][x])
        spread = [middle_half(m) for m in pts]
        shaded = all(s is not None for s in spread)
        out.append({"label": f"{series} vs {base}", "series": series, "x": [m["params"][x] for m in pts],
                    "y": [m["ratio"] for m in pts],
                    "lo": [s[0] for s in spread] if shaded else None,
                    "hi": [s[1] for s in spread] if shaded else None})
    if new:
        ylabel, what = "speed-up vs baseline (> 1: faster)", "paired per-round speed-up over the baseline " \
                                                               "(> 1: the series is faster)"
    else:
        d = records.better_direction(use[0])
        faster = {"lower": "< 1: the series is faster", "higher": "> 1: the series is faster"}.get(d, "")
        ylabel = f"value ÷ baseline's value{' (' + faster + ')' if faster else ''}"
        what = f"paired ratio as the experiment reported it: value ÷ baseline's value ({faster or 'direction unknown'})"
    path = fig.path("ratio", tag)
    plots.lines(out, path=path, title=f"{fig.exp}: {what.split(' (')[0]}{' (' + tag + ')' if tag else ''}",
                xlabel=xlabel, ylabel=ylabel, size_axis=size_axis, levels=levels, reference=1.0)
    fig.add(path, what + "; shaded: the middle half of the rounds' ratios, where there are 4 or more")


def middle_half(m: dict) -> Optional[tuple[float, float]]:
    """The 25th..75th percentile of a measurement's per-round ratios (the
    extremes of a few rounds on a busy machine span 0.004..13x)."""
    rs = m.get("ratios") or []
    return stats.quartiles(rs) if len(rs) >= 4 else None


def worst_over_figure(fig: Figures, ms: list[dict], rows: list[dict], x: str, over: str, levels):
    """One worst-case ratio against x: for each series and x, the speed at
    the worst value of `over` ÷ the speed at the main rows' value."""
    main = {(m["series"], m["params"][x]): m for m in rows}
    fixed = rows[0]["params"].get(over)
    worst: dict = {}
    for m in ms:
        if m["metric"] != rows[0]["metric"] or m["params"].get(over) in (None, fixed):
            continue
        base_rec = m.get("baseline") or {}
        if records.speedup(m) is not None and (base_rec.get("params") or {}).get(over) == fixed:
            # The record's own paired speed-up over the aligned copy (format 2).
            key = (base_rec["series"], m["params"].get(x))
            if key not in worst or m["ratio"] < worst[key][0]:
                worst[key] = (m["ratio"], m["params"][over])
            continue
        key = (m["series"], m["params"].get(x))
        base = main.get(key)
        s, s0 = speed(m), speed(base) if base else None
        if s is None or not s0:
            continue
        r = s / s0
        if key not in worst or r < worst[key][0]:
            worst[key] = (r, m["params"][over])
    if len({k[1] for k in worst}) < 2:
        return
    curves = defaultdict(list)
    for (series, xv), (r, _) in sorted(worst.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        curves[series].append((xv, r))
    out = [{"label": s, "series": s, "x": [p[0] for p in pts], "y": [p[1] for p in pts]}
           for s, pts in curves.items()]
    path = fig.path("worst", over)
    plots.lines(out, path=path, title=f"{fig.exp}: speed at the worst {over} ÷ speed at {over}={fixed}",
                xlabel=f"{x} (B, log scale)", ylabel=f"worst {over} ÷ {over}={fixed} (< 1: slower)",
                size_axis=True, levels=levels, reference=1.0)
    fig.add(path, f"for each size, the speed at the worst {over} divided by the speed at {over}={fixed} "
                  f"(1: no cost; below 1: that much slower)")


def bar_figures(fig: Figures, rows: list[dict], pref: dict):
    """Bars, one figure per set of parameter names: measurements without
    `threads` (faults' single-threaded modes) are not a group "threads=None"
    beside the thread counts; and one per value of the preferred split keys
    (each working set its own figure)."""
    by_keys = defaultdict(list)
    for m in rows:
        by_keys[tuple(sorted(m["params"]))].append(m)
    common = set.intersection(*(set(k) for k in by_keys))
    for keys, part in by_keys.items():
        tag = "-".join(k for k in keys if k not in common) or None
        split = [k for k in pref.get("split", ()) if k in varying(part)]
        if not split:
            bar_figure(fig, part, pref, tag)
            continue
        by_split = defaultdict(list)
        for m in part:
            by_split[compact(m["params"], split)].append(m)
        for value, ms in by_split.items():
            bar_figure(fig, ms, pref, " ".join(t for t in (tag, value) if t))


def bar_figure(fig: Figures, rows: list[dict], pref: dict, tag: Optional[str] = None):
    label, yunit, recip = _label_unit(rows)
    cats_keys = varying(rows, skip=tuple(pref.get("ignore", ())))
    ups = [m for m in rows if records.speedup(m) is not None]
    categories = list(dict.fromkeys(compact(m["params"], cats_keys) for m in rows))
    # One category only: a bar per series, each named under its bar.
    by_series = len(categories) == 1
    if by_series:
        categories = list(dict.fromkeys(m["series"] for m in rows))
    if ups and len(ups) * 2 >= len([m for m in rows if m.get("ratio_to")] or [1]) and len(ups) > 1:
        def up_key(m):
            what = f"{m['series']} vs {m['ratio_to']}"
            return (what, "speed-up") if by_series else (compact(m["params"], cats_keys), what)
        values = {up_key(m): m["ratio"] for m in ups}
        errors = {up_key(m): (m.get("ratio_min", m["ratio"]), m.get("ratio_max", m["ratio"])) for m in ups}
        series = list(dict.fromkeys(s for _, s in values))
        up_categories = list(dict.fromkeys(c for c, _ in values)) if by_series else categories
        path = fig.path("speedup", tag)
        suffix = f" ({tag})" if tag else ""
        plots.bars(up_categories, series, values, errors=errors, path=path, reference=1.0,
                   title=f"{fig.exp}: speed-up over the baseline (> 1: faster){suffix}",
                   ylabel="speed-up vs baseline", by_category=by_series)
        fig.add(path, "paired per-round speed-up over the baseline, median with min..max (> 1: faster)" + suffix)
    values, errors = {}, {}
    for m in rows:
        if m["value"] is None:
            continue
        c = m["series"] if by_series else compact(m["params"], cats_keys)
        key = (c, label if by_series else m["series"])
        v, lo, hi = m["value"], m.get("min"), m.get("max")
        if recip:
            v, lo, hi = 1 / v, (1 / hi if hi else None), (1 / lo if lo else None)
        values[key] = v
        errors[key] = (lo if lo is not None else v, hi if hi is not None else v)
    series = [label] if by_series else list(dict.fromkeys(m["series"] for m in rows))
    path = fig.path(label, tag)
    suffix = f" ({tag})" if tag else ""
    plots.bars(categories, series, values, errors=errors, path=path, title=f"{fig.exp}: {label}{suffix}",
               ylabel=f"{label} ({yunit})", by_category=by_series)
    fig.add(path, f"{label} in {yunit}" + (f" by {', '.join(cats_keys)}" if cats_keys and not by_series else "") +
            suffix + "; whiskers: min..max of the samples")


def preferences(exp: str, ms: list[dict]) -> dict:
    """The experiment's PLOT_PREFS, and WS_PREF where it measured several working sets."""
    pref = dict(PLOT_PREFS.get(exp, {}))
    if len({m["params"].get("ws") for m in ms}) > 1:
        for k, v in WS_PREF.items():
            pref[k] = tuple(pref.get(k, ())) + v
    return pref


def experiment_figures(exp: str, ms: list[dict], levels, plot_dir: Path) -> tuple[list, list[dict]]:
    """Writes one experiment's PNGs; returns ([(src, caption)], the rows
    plotted, for the folded table)."""
    fig = Figures(exp, plot_dir)
    if not ms:
        return [], []
    pref = preferences(exp, ms)
    rows = choose_rows(ms, pref)
    x, unit = (None, "") if pref.get("bars") else axis_of(rows, pref)
    xs = {m["params"].get(x) for m in rows if x and _num(m["params"].get(x)) and m["params"][x] > 0}
    if x and len(xs) >= 3:
        line_figures(fig, rows, x, unit, pref, levels)
        if pref.get("worst_over"):
            worst_over_figure(fig, ms, rows, x, pref["worst_over"], levels)
    else:
        bar_figures(fig, rows, pref)
    return fig.items, rows


def ws_order(ms: list[dict]) -> list:
    """The working sets measured, hot first, then by their size."""
    sizes = {m["params"]["ws"]: m["params"].get("ws_bytes") or 0 for m in ms if "ws" in m["params"]}
    return sorted(sizes, key=lambda w: (w != "hot", sizes[w]))


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


def recorded_figures(exp: str, ms: list[dict], plot_dir: Path) -> list:
    """The recordings (`memkit record`) an experiment replayed, each a plot
    named after the experiment like every other."""
    out = []
    for name, caption in recording_plot.figures(ms, plot_dir, slug):
        final = f"{slug(exp)}-{name}"
        (plot_dir / name).replace(plot_dir / final)
        out.append((f"{PLOTS_DIR}/{final}", caption))
    return out


def try_figures(exp: str, ms: list[dict], plot_dir: Path) -> list:
    """A `memkit try`: each configuration's per-pair speed-up over the runs
    without memkit, in the order the pairs ran, with its median and interval."""
    curves = []
    for m in ms:
        if m["metric"] == "wall_s" and m.get("ratios"):
            e = whole_program.estimate(m["ratios"])
            curves.append({"label": f"{m['series']} vs {m['ratio_to']}", "y": m["ratios"],
                           "median": e.median, "low": e.low, "high": e.high})
    if not curves:
        return []
    fig = Figures(exp, plot_dir)
    path = fig.path("pairs")
    program = ms[0]["params"].get("program") or exp
    plots.pairs(curves, path=path, title=f"{program}: wall-time speed-up of each pair (> 1: faster with memkit)",
                ylabel="time without / time with")
    fig.add(path, "each pair's speed-up (time without memkit ÷ time with it); dashed: the median; band: its "
                  f"~{100 * whole_program.CONFIDENCE:.0f}% interval (order statistics); black: 1, no difference")
    return fig.items


# ---- the headline ----

def headline_html(db, run: dict, exps: list[dict]) -> list[str]:
    e = html.escape
    run_id = run["id"]
    parts = ["<section class='headline'><h2>Headline</h2>"]
    parts += real_programs_html(db, run, exps)
    if exps and all(whole_program.is_try(x) for x in exps):
        parts += ["<h3>Since the previous try of this command</h3>"] + changes_html(db, run)
        return parts + ["</section>"]
    verdicts = db.verdict_records(run_id)
    rows = ranking.headline_rows(verdicts)
    if rows:
        parts.append("<table class='fastest'><tr><th>operation</th><th>where</th><th>fastest here</th>"
                     "<th>memkit</th></tr>")
        for r in rows:
            cls = " class='loss'" if ranking.is_loss(r) else ""
            parts.append(f"<tr><td>{e(r['experiment'])}: {e(r['what'])}</td><td>{e(r['where'])}</td>"
                         f"<td>{e(r['fastest'])}</td><td{cls}>{e(r['memkit'])}: "
                         f"{e(ranking.standing_text(r))}</td></tr>")
        parts.append("</table><p class='meta'>as each experiment judged it (its \"fastest\" verdict): a range "
                     "goes on while its method is the fastest or within its noise; memkit slower than the "
                     "fastest other method beyond the noise in red, each such point one of the losses "
                     "below</p>")
    else:
        parts.append("<p>No experiment of this run ranked memkit beside other methods.</p>")
    parts.append("<h3>Since the previous run</h3>")
    parts += changes_html(db, run)
    losses = [v for v in verdicts if v.get("kind") == "loss"]
    parts.append("<h3>memkit's losses</h3>")
    if losses:
        items = [f"<li><b>{e(v['experiment'])}</b>: {e(v['text'])}</li>" for v in losses]
        parts.append("<ul class='losses'>" + "".join(items[:LOSSES_SHOWN]) + "</ul>")
        if len(items) > LOSSES_SHOWN:
            parts.append(f"<details><summary>{len(items) - LOSSES_SHOWN} more</summary><ul class='losses'>"
                         + "".join(items[LOSSES_SHOWN:]) + "</ul></details>")
    elif any(v.get("kind") for v in verdicts):
        parts.append("<p>None: no experiment found memkit slower than the best other method beyond the noise.</p>")
    else:
        parts.append("<p>The experiments of this run do not classify their verdicts; the table above shows "
                     "where memkit trails.</p>")
    parts.append("</section>")
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
                                      busy=bool(prev.get("busy") or run.get("busy")))
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
/* A wide table scrolls in its own box: the page itself never scrolls sideways. */
table { border-collapse: collapse; font-size: .85em; margin: .4em 0; display: block; max-width: 100%; overflow-x: auto; }
td, th { border: 1px solid #ddd; padding: .15em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.headline table.fastest td { white-space: nowrap; }
.loss { color: #b00; font-weight: bold; }
.verdicts li { margin: .2em 0; overflow-wrap: anywhere; }
.failed { color: #b00; font-weight: bold; }
img { max-width: 100%; border: 1px solid #eee; }
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
    parts += headline_html(db, run, exps)

    parts.append("<h2>Experiments</h2><table><tr><th>experiment</th><th>status</th><th>seconds</th></tr>")
    for x in exps:
        status = x["status"] if x["status"] == "ok" else f"<span class='failed'>{e(x['status'])}</span>"
        parts.append(f"<tr><td><a href='#{slug(x['name'])}'>{e(x['name'])}</a></td><td>{status}</td>"
                     f"<td>{x['seconds'] or 0:.1f}</td></tr>")
    parts.append("</table>")

    for x in exps:
        name = x["name"]
        parts.append(f"<h2 id='{slug(name)}'>{e(name)}</h2>")
        parts.append(f"<p>{e(x['description'] or '')}<br><span class='meta'>seed: {e(x['seed'] or '-')}"
                     f" &middot; {x['seconds'] or 0:.1f} s</span></p>")
        if x["status"] != "ok":
            parts.append(f"<p class='failed'>{e(x['error'] or x['status'])}</p>")
        vs = db.verdict_records(run_id, name)
        if vs:
            items = "".join(f"<li{' class=loss' if v.get('kind') == 'loss' else ''}>{e(v['text'])}</li>" for v in vs)
            lst = f"<ul class='verdicts'>{items}</ul>"
            parts.append(lst if len(vs) <= FOLD_ROWS else
                         f"<details open><summary>{len(vs)} verdicts</summary>{lst}</details>")
        ms = db.measurements(run_id, name)
        parts += working_set_html(name, ms, ranking.memkit_series(db.verdict_records(run_id, name)))
        if whole_program.is_try(x):   # no grid to plot: the pairs, in the order they ran
            figures, rows = try_figures(name, ms, plot_dir), ms
        else:
            figures, rows = experiment_figures(name, ms, levels, plot_dir)
            figures += recorded_figures(name, ms, plot_dir)
        for src, caption in figures:
            parts.append(f"<figure><img src='{e(src)}' alt='{e(caption)}'><figcaption>{e(caption)}</figcaption>"
                         "</figure>")
        if rows:
            parts.append(_table(rows))
        if x["output"]:
            parts.append(f"<details><summary>the experiment's own table</summary><pre>{e(x['output'])}</pre>"
                         "</details>")

    parts.append("<h2>Machine</h2><table>")
    parts += [f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in describe_lines(fp)]
    parts.append("</table>")
    if levels:
        parts.append("<p class='meta'>Plot bands: " + ", ".join(f"{n} up to {fmt_size(b)}" for n, b in levels) +
                     ", RAM beyond.</p>")
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
    parts.append(f"<h2>History</h2><details><summary>{len(all_runs)} runs</summary>{''.join(history)}</details>"
                 "<p class='meta'>Compare two runs: <code>memkit compare A B</code>.</p></body></html>")
    (out / "index.html").write_text("\n".join(parts))
