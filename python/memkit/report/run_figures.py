# SPDX-License-Identifier: Apache-2.0
"""The figures of one run's report: for each experiment, which metric
against which axis, which rows, split how, drawn as lines, ratios or bars
(memkit.report.plots draws them); a recording's and a `memkit try`'s
figures."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Optional

from memkit.comparison import compare as cmp
from memkit.comparison.compare import params_text
from memkit.judging import stats
from memkit.lab import glibc
from memkit.lab.sizes import fmt_size
from memkit.programs import whole_program
from memkit.report import plots, recording_plot
from memkit.results import records
from memkit.tuning import level_choice


PLOTS_DIR = "plots"
SIZE_KEYS = ("size", "bytes", "region", "region_size")
MAX_LINE_STYLES = 4
MAX_SPLIT_FIGURES = 6

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
    # The seed's matrix: size range by offset range, a panel per working set.
    "memset-random": {"matrix": {
        "rows": ("granularity", "min_size", "max_size"), "cols": ("clear_l1", "min_offset", "max_offset"),
        "row_label": lambda p: f"{p['min_size']}..{p['max_size']} B, step {p['granularity']}",
        "col_label": lambda p: f"offsets {p['min_offset']}..{p['max_offset']}" +
                               ("\nL1 cleared" if p["clear_l1"] else ""),
        "memkit_only": True}},
    # Every distribution at every level in one figure: a row of panels per
    # method, memkit's first, a panel per operation.
    "size-distributions": {"matrix": {
        "rows": ("distribution",), "cols": ("ws",), "row_label": lambda p: p["distribution"],
        "panel_order": lambda series: (series.partition(" ")[0] != "memkit", series.partition(" ")[0],
                                       _index(level_choice.VARIANT_FUNCTIONS, series.partition(" ")[2]))}},
}
# Experiments measured at several working sets (ws=hot,l3,dram...): a figure
# per working set, its size and pages named by the figure, not the bars.
WS_PREF = {"split": ("ws",), "ignore": ("ws_bytes", "pages")}
# A metric plotted as its reciprocal, so the plot reads as its title says.
RECIPROCAL = {"GB/CPU-s": ("CPU-s/GB", "CPU seconds per GB")}


def ws_order(ms: list[dict]) -> list:
    """The working sets measured, hot first, then by their size."""
    sizes = {m["params"]["ws"]: m["params"].get("ws_bytes") or 0 for m in ms if "ws" in m["params"]}
    return sorted(sizes, key=lambda w: (w != "hot", sizes[w]))


def level_label(ws: str) -> str:
    return ws if ws == "hot" else ws.upper()


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


def experiment_figures(exp: str, ms: list[dict], levels, plot_dir: Path,
                       memkit: frozenset = frozenset()) -> tuple[list, list[dict]]:
    """Writes one experiment's PNGs; returns ([(src, caption)], the rows
    plotted, for the folded table).  memkit: the names the lab's rankings
    gave memkit's routine (a matrix of memkit's alone draws those)."""
    fig = Figures(exp, plot_dir)
    if not ms:
        return [], []
    pref = preferences(exp, ms)
    rows = choose_rows(ms, pref)
    if pref.get("matrix") and matrix_figure(fig, rows, pref, memkit):
        return fig.items, rows
    x, unit = (None, "") if pref.get("bars") else axis_of(rows, pref)
    xs = {m["params"].get(x) for m in rows if x and _num(m["params"].get(x)) and m["params"][x] > 0}
    if x and len(xs) >= 3:
        line_figures(fig, rows, x, unit, pref, levels)
        if pref.get("worst_over"):
            worst_over_figure(fig, ms, rows, x, pref["worst_over"], levels)
    else:
        bar_figures(fig, rows, pref)
    return fig.items, rows


def _index(items, item) -> int:
    return items.index(item) if item in items else len(items)


def _sort_key(value):
    return (0, value, "") if _num(value) or isinstance(value, bool) else (1, 0, str(value))


def matrix_figure(fig: Figures, rows: list[dict], pref: dict, memkit: frozenset) -> bool:
    """A grid with two axes as matrices of speed-ups (plots.heatmap): the
    preference's row parameters down, its column parameters across, a panel
    per series and per value of whatever else varies (a working set).
    False, nothing drawn, where the records lack those parameters or any
    speed-up (older records: the bars then)."""
    spec = pref["matrix"]
    keys = spec["rows"] + spec["cols"]
    ups = [m for m in rows if records.speedup(m) is not None and all(k in m["params"] for k in keys)]
    if spec.get("memkit_only") and any(m["series"] in memkit for m in ups):
        ups = [m for m in ups if m["series"] in memkit]
    if not ups:
        return False
    ws = ws_order(ups)
    ignore = set(keys) | set(pref.get("ignore", ())) | {"ws_bytes", "pages"}

    def label(m, which):
        own = spec.get(f"{which[:-1]}_label")
        if own:
            return own(m["params"])
        if spec[which] == ("ws",):
            return level_label(m["params"]["ws"])
        return compact(m["params"], list(spec[which]))

    def order(m, which):
        if spec[which] == ("ws",):
            return (ws.index(m["params"]["ws"]),)
        return tuple(_sort_key(m["params"][k]) for k in spec[which])

    panels = defaultdict(list)
    for series in dict.fromkeys(m["series"] for m in ups):
        mine = [m for m in ups if m["series"] == series]
        rest = [k for k in varying(mine) if k not in ignore]
        for m in mine:
            panels[(series, m.get("ratio_to"), compact(m["params"], rest) if rest else "")].append(m)
    panel_order = spec.get("panel_order") or (lambda series: series not in memkit)
    out = []
    for (series, base, where), pts in sorted(panels.items(), key=lambda kv: (
            panel_order(kv[0][0]), _index(ws, kv[1][0]["params"].get("ws")))):
        row_labels = [label(m, "rows") for m in sorted(pts, key=lambda m: order(m, "rows"))]
        col_labels = [label(m, "cols") for m in sorted(pts, key=lambda m: order(m, "cols"))]
        row_labels, col_labels = list(dict.fromkeys(row_labels)), list(dict.fromkeys(col_labels))
        cell = {(label(m, "rows"), label(m, "cols")): m["ratio"] for m in pts}
        size = pts[0]["params"].get("ws_bytes")
        per_side = (" (in cache)" if where == "ws=hot" else f" ({fmt_size(size)} per side)") \
            if where.startswith("ws=") and size else ""
        out.append({"title": f"{series} vs {base}" + (f"\n{where}{per_side}" if where else ""),
                    "rows": row_labels, "cols": col_labels,
                    "values": [[cell.get((r, c)) for c in col_labels] for r in row_labels]})
    path = fig.path("matrix")
    down, across = (" and ".join(spec[w]) for w in ("rows", "cols"))
    plots.heatmap(out, path=path, title=f"{fig.exp}: speed-up over the baseline (> 1: faster)",
                  label="speed-up (> 1: faster)", per_row=3)
    fig.add(path, f"each cell: the series' paired per-round speed-up over the baseline (median), by {down} "
                  f"down and {across} across; blue: faster, red: slower, white: the same; which cells are "
                  "beyond the noise: the verdicts")
    return True


def trade_figure(ms: list[dict], plot_dir: Path) -> Optional[tuple[str, str]]:
    """The trade on this CPU in one picture, from size-distributions'
    records: per operation and cache level, memkit's speed-up over glibc as
    shipped, and glibc tuned's and each peer's where the run raced them, the
    levels' numbers as `memkit tune` and the summary weigh them
    (level_choice.level_scores).  None without memkit's or without working
    sets."""
    fns = level_choice.VARIANT_FUNCTIONS
    contenders = list(dict.fromkeys(m["series"].partition(" ")[0] for m in ms
                                    if records.speedup(m) is not None and m["series"].partition(" ")[2] in fns))
    if "memkit" not in contenders:
        return None
    contenders.sort(key=lambda who: who != "memkit")
    scores = {who: level_choice.level_scores(ms, who) for who in contenders}
    tuned = level_choice.level_scores(ms, glibc.TUNED, "value")
    if tuned:
        shipped = level_choice.level_scores(ms, "glibc", "value")
        scores["glibc tuned"] = {fn: {lv: shipped[fn][lv] / t for lv, t in by.items() if lv in shipped.get(fn, {})}
                                 for fn, by in tuned.items()}
        contenders.insert(1, "glibc tuned")
    levels = [lv for lv in ws_order(ms) if any(lv in scores[who].get(fn, {}) for who in contenders for fn in fns)]
    if not levels:
        return None
    panels = [{"title": who, "rows": [fn for fn in fns if fn in scores[who]],
               "cols": [level_label(lv) for lv in levels],
               "values": [[scores[who][fn].get(lv) for lv in levels] for fn in fns if fn in scores[who]]}
              for who in contenders if scores[who]]
    path = plot_dir / "headline-trade.png"
    plots.heatmap(panels, path=path, title="speed-up over glibc as shipped, production size distributions",
                  label="speed-up (> 1: faster)", per_row=4)
    caption = ("each cell: the geometric mean over size-distributions' production distributions of the paired "
               "per-round speed-up over glibc as shipped (median), per operation and working set (hot: in cache, "
               "then sized to each cache level and beyond); blue: faster, red: slower")
    if tuned:
        caption += "; glibc tuned: glibc's time ÷ glibc tuned's, across processes (they never share one)"
    return f"{PLOTS_DIR}/{path.name}", caption


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
