"""The HTML report: one section per experiment of a run, with PNG plots in
the style of the seeds' figures (log size axis, the cache levels as bands,
one series per method) and the verdicts in words; a table where there is
nothing to plot against size."""

from __future__ import annotations

import html
import math
import re
from collections import defaultdict
from pathlib import Path

from memkit import recording_plot
from memkit.compare import params_text
from memkit.fingerprint import cache_levels, describe_lines, fmt_size

# Parameters that are a size in bytes: plotted on the x axis.
SIZE_KEYS = ("size", "bytes", "region", "region_size")
MAX_LINE_STYLES = 4
MAX_SHADED = 5
MAX_TABLE_ROWS = 400

BAND_COLORS = ["#e8f1fb", "#fdf0e0", "#eaf7e8", "#f4ecf8"]
LINE_STYLES = ["-", "--", ":", "-."]


def _size_key(params: dict):
    for k in SIZE_KEYS:
        v = params.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return k
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _size_formatter():
    from matplotlib.ticker import FuncFormatter

    def f(x, _pos):
        if x <= 0:
            return ""
        for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if x >= scale:
                v = x / scale
                return f"{v:.0f}{unit}" if abs(v - round(v)) < 1e-9 else f"{v:.1f}{unit}"
        return f"{x:.0f}"
    return FuncFormatter(f)


def _draw_bands(ax, levels, xmin, xmax):
    """The seed figures' cache-level bands: L1 | L2 | L3 | RAM."""
    edges = [xmin] + [min(max(b, xmin), xmax) for _, b in levels] + [xmax]
    names = [n for n, _ in levels] + ["RAM"]
    for i, name in enumerate(names):
        lo, hi = edges[i], edges[i + 1]
        if hi <= lo:
            continue
        ax.axvspan(lo, hi, color=BAND_COLORS[i % len(BAND_COLORS)], zorder=0, lw=0)
        ax.text(math.sqrt(lo * hi), 1.0, name, transform=ax.get_xaxis_transform(), ha="center",
                va="bottom", fontsize=8, color="#555")


def _groups(ms, size_key):
    """{(series, other params text): [measurements sorted by size]}"""
    g = defaultdict(list)
    for m in ms:
        other = {k: v for k, v in m["params"].items() if k != size_key}
        g[(m["series"], params_text(other))].append(m)
    for v in g.values():
        v.sort(key=lambda m: m["params"][size_key])
    return g


def plot_vs_size(ms, size_key, levels, title, ylabel, path, ratio=False):
    """One line per (series, other params): color by series, line style by
    the other params; the shaded spread is min..max of the samples."""
    plt = _pyplot()
    groups = _groups(ms, size_key)
    series = list(dict.fromkeys(s for s, _ in groups))
    others = list(dict.fromkeys(o for _, o in groups))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, ax = plt.subplots(figsize=(11, 4.8), dpi=100)
    xs_all = [m["params"][size_key] for m in ms]
    xmin, xmax = min(xs_all) / 1.15, max(xs_all) * 1.15
    _draw_bands(ax, levels, xmin, xmax)
    for (s, o), rows in groups.items():
        xs = [m["params"][size_key] for m in rows]
        if ratio:
            ys = [m["ratio"] for m in rows]
            lo = [m.get("ratio_min") if m.get("ratio_min") is not None else y for m, y in zip(rows, ys)]
            hi = [m.get("ratio_max") if m.get("ratio_max") is not None else y for m, y in zip(rows, ys)]
        else:
            ys = [m["value"] for m in rows]
            lo = [m.get("min") if m.get("min") is not None else y for m, y in zip(rows, ys)]
            hi = [m.get("max") if m.get("max") is not None else y for m, y in zip(rows, ys)]
        color = colors[series.index(s) % len(colors)]
        style = LINE_STYLES[others.index(o) % len(LINE_STYLES)]
        # Parameters the series name already says (series "threads=2") are not repeated.
        label = " ".join([s] + [w for w in o.split() if w not in s.split()])
        if ratio:
            label += f" / {rows[0].get('ratio_to')}"
        ax.plot(xs, ys, style, color=color, label=label, lw=1.6, marker="." if len(xs) < 30 else None)
        if len(xs) > 1 and len(groups) <= MAX_SHADED:   # more spreads than that hide the lines
            ax.fill_between(xs, lo, hi, color=color, alpha=0.07, lw=0)
    if ratio:
        ax.axhline(1.0, color="#333", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlim(xmin, xmax)
    ax.xaxis.set_major_formatter(_size_formatter())
    ys_all = [m["ratio"] if ratio else m["value"] for m in ms if (m["ratio"] if ratio else m["value"]) is not None]
    positive = [y for y in ys_all if y > 0]
    if positive and max(positive) / min(positive) > 100:
        ax.set_yscale("log")
    elif positive:
        # Scaled to the values, not to an outlier's min..max shading.
        ax.set_ylim(0, max(max(positive) * 1.15, 1.2 if ratio else 0))
    ax.set_xlabel(f"{size_key} (bytes, log scale)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11, pad=16)
    ax.grid(True, which="major", color="#ccc", lw=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _table(ms) -> str:
    rows = []
    for m in ms[:MAX_TABLE_ROWS]:
        spread = ""
        if m.get("min") is not None and m.get("max") is not None:
            spread = f"{m['min']:.4g} .. {m['max']:.4g}"
        ratio = ""
        if m.get("ratio") is not None:
            ratio = f"{m['ratio']:.3f} vs {m.get('ratio_to')}"
            if m.get("ratio_min") is not None:
                ratio += f" ({m['ratio_min']:.3f} .. {m['ratio_max']:.3f})"
        cells = [m["series"], params_text(m["params"]), m["metric"],
                 f"{m['value']:.4g} {m.get('unit') or ''}" if m["value"] is not None else "-",
                 spread, str(m.get("samples") or ""), ratio]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    more = len(ms) - MAX_TABLE_ROWS
    tail = f"<p>... and {more} more rows (all are in the database).</p>" if more > 0 else ""
    head = "".join(f"<th>{h}</th>" for h in ("series", "params", "metric", "value", "min .. max",
                                               "samples", "ratio (min .. max)"))
    return f"<table class='data'><tr>{head}</tr>{''.join(rows)}</table>{tail}"


def experiment_figures(exp, ms, levels, out: Path) -> tuple[list[tuple[str, str]], list[dict]]:
    """Writes the PNGs for one experiment; returns ([(file, caption)], the
    measurements left for a table)."""
    figures, leftover = [], []
    by_metric = defaultdict(list)
    for m in ms:
        by_metric[(m["metric"], m.get("unit") or "")].append(m)
    for (metric, unit), rows in by_metric.items():
        keys = {_size_key(m["params"]) for m in rows}
        size_key = next(iter(keys)) if len(keys) == 1 else None
        if not size_key or len({m["params"][size_key] for m in rows}) < 2:
            leftover.extend(rows)
            continue
        # Too many line styles to tell apart: one figure per value of the
        # first other parameter.
        groups = _groups(rows, size_key)
        others = list(dict.fromkeys(o for _, o in groups))
        parts = [(None, rows)]
        if len(others) > MAX_LINE_STYLES:
            first = sorted(k for k in rows[0]["params"] if k != size_key)[0]
            parts = defaultdict(list)
            for m in rows:
                parts[m["params"].get(first)].append(m)
            parts = [(f"{first}={v}", p) for v, p in parts.items()][:8]
        for tag, part in parts:
            suffix = f" ({tag})" if tag else ""
            name = f"{_slug(exp)}-{_slug(metric)}{('-' + _slug(tag)) if tag else ''}.png"
            plot_vs_size(part, size_key, levels, f"{exp}: {metric}{suffix}", f"{metric} ({unit})",
                         out / name)
            figures.append((name, f"{metric} in {unit} by {size_key}{suffix}" +
                            ("; shaded: min..max of the samples" if len(_groups(part, size_key)) <= MAX_SHADED else "")))
            with_ratio = [m for m in part if m.get("ratio") is not None]
            if len({m["params"][size_key] for m in with_ratio}) >= 2:
                targets = sorted({str(m.get("ratio_to")) for m in with_ratio})
                rname = name[:-4] + "-ratio.png"
                plot_vs_size(with_ratio, size_key, levels,
                             f"{exp}: ratio of {metric}{suffix} (>1: the series is ahead)",
                             "ratio", out / rname, ratio=True)
                figures.append((rname, "interleaved ratio to " + ", ".join(targets) +
                                "; shaded: min..max over the interleaved rounds"))
    return figures, leftover


CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1000px;
       margin: 2em auto; color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: .85em; margin: .5em 0; }
td, th { border: 1px solid #ddd; padding: .2em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.verdicts li { margin: .2em 0; }
.failed { color: #b00; font-weight: bold; }
img { max-width: 100%; border: 1px solid #eee; }
figure { margin: 1em 0; } figcaption { font-size: .85em; color: #555; }
pre { background: #f8f8f8; padding: .6em; overflow-x: auto; font-size: .78em; }
.meta { color: #555; font-size: .9em; }
"""


def write_report(db, run_id: int, out: Path) -> Path:
    """Writes out/index.html and its PNGs for one run; returns the HTML's path."""
    out.mkdir(parents=True, exist_ok=True)
    run = db.run(run_id)
    fp = run["fingerprint"] or {}
    levels = cache_levels(fp)
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>memkit lab report, run {run_id}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>memkit lab report: run {run_id}</h1>",
             f"<p class='meta'>{e(run['started_at'])} .. {e(run['finished_at'])}"
             f"{' &middot; quick grid' if run['quick'] else ''}"
             f" &middot; tuned profile: {e(run['profile'] or 'none')}</p>"]

    parts.append("<h2>Summary</h2><table><tr><th>experiment</th><th>status</th><th>seconds</th>"
                 "<th>verdicts</th></tr>")
    for x in run["experiments"]:
        vs = db.verdicts(run_id, x["name"])
        status = x["status"] if x["status"] == "ok" else f"<span class='failed'>{e(x['status'])}</span>"
        parts.append(f"<tr><td><a href='#{_slug(x['name'])}'>{e(x['name'])}</a></td><td>{status}</td>"
                     f"<td>{x['seconds'] or 0:.1f}</td><td>{'<br>'.join(e(v) for v in vs) or e(x['error'] or '')}"
                     f"</td></tr>")
    parts.append("</table>")

    parts.append("<h2>Machine</h2><table>")
    parts += [f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in describe_lines(fp)]
    parts.append("</table>")
    if levels:
        parts.append("<p class='meta'>Plot bands: " + ", ".join(f"{n} up to {fmt_size(b)}" for n, b in levels) +
                     ", RAM beyond.</p>")

    for x in run["experiments"]:
        name = x["name"]
        parts.append(f"<h2 id='{_slug(name)}'>{e(name)}</h2>")
        parts.append(f"<p>{e(x['description'] or '')}<br><span class='meta'>seed: {e(x['seed'] or '-')}"
                     f" &middot; {x['seconds'] or 0:.1f} s</span></p>")
        if x["status"] != "ok":
            parts.append(f"<p class='failed'>{e(x['error'] or x['status'])}</p>")
        vs = db.verdicts(run_id, name)
        if vs:
            parts.append("<ul class='verdicts'>" + "".join(f"<li>{e(v)}</li>" for v in vs) + "</ul>")
        ms = db.measurements(run_id, name)
        figures, leftover = experiment_figures(name, ms, levels, out)
        figures += recording_plot.figures(ms, out, _slug)
        for fname, caption in figures:
            parts.append(f"<figure><img src='{e(fname)}' alt='{e(caption)}'>"
                         f"<figcaption>{e(caption)}</figcaption></figure>")
        if leftover:
            parts.append(_table(leftover))
        if x["output"]:
            parts.append(f"<details><summary>the experiment's own table</summary><pre>{e(x['output'])}</pre>"
                         "</details>")

    parts.append("<h2>History</h2><table><tr><th>run</th><th>started</th><th>grid</th><th>CPU</th>"
                 "<th>microcode</th><th>kernel</th><th>glibc</th><th>commit</th><th>profile</th></tr>")
    for r in db.runs():
        f = r["fingerprint"] or {}
        parts.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in (
            r["id"], r["started_at"], "quick" if r["quick"] else "default", f.get("cpu_model", "?"),
            f.get("microcode", "?"), f.get("kernel", "?"), f.get("glibc", "?"), f.get("memkit_commit", "?"),
            r["profile"] or "-")) + "</tr>")
    parts.append("</table><p class='meta'>Compare two runs: <code>memkit compare A B</code>.</p></body></html>")
    path = out / "index.html"
    path.write_text("\n".join(parts))
    return path
