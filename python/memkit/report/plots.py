# SPDX-License-Identifier: Apache-2.0
"""The report's figures: a line plot against a numeric axis (log size axis
with the cache levels as bands, as in the seeds' figures) and grouped bars
for results without one.  Each function writes one PNG."""

from __future__ import annotations

import math
from typing import Optional

BAND_COLORS = ["#e8f1fb", "#fdf0e0", "#eaf7e8", "#f4ecf8"]
LINE_STYLES = ["-", "--", ":", "-."]
MAX_SHADED = 5

# One colour per method across every figure of a report: a reader who has
# learnt "memkit is red" in one plot must not find glibc red in the next.
# The baseline and memkit's own dispatched routines have fixed colours (the
# same in every report); any other method takes the next free colour of the
# palette the first time a figure draws it.
FIXED_COLORS = {"glibc": "#222222", "libc": "#222222", "without memkit": "#222222",
                "memkit": "#d62728", "mk_memset": "#d62728", "mk_memcpy": "#d62728", "mk_memmove": "#d62728"}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5"]
_assigned: dict[str, str] = {}


def reset_colors():
    """A new report: its methods take the palette from its start."""
    _assigned.clear()


def method_key(label: str) -> str:
    """The method a curve or bar stands for: "avx2 vs glibc" is avx2's
    speed-up, "aocl-libmem memcpy" is aocl-libmem's (the operation is the
    figure's, not the method's)."""
    words = label.split(" vs ")[0].split()
    return words[0] if words else label


def method_color(label: str) -> str:
    method = method_key(label)
    if method in FIXED_COLORS:
        return FIXED_COLORS[method]
    if method not in _assigned:
        used = set(_assigned.values())
        free = [c for c in PALETTE if c not in used]
        _assigned[method] = free[0] if free else PALETTE[len(_assigned) % len(PALETTE)]
    return _assigned[method]


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def size_formatter():
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


def draw_bands(ax, levels, xmin, xmax):
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


# A size axis from a few bytes to megabytes draws as two panels, below and
# from SMALL_EDGE: on one log axis the small sizes' few nanoseconds share a
# tenth of the height and seven methods' lines lie on top of each other.
SMALL_EDGE = 1024


def _size_panels(xs: list[float], size_axis: bool) -> list[tuple[float, float]]:
    lo, hi = min(xs), max(xs)
    if size_axis and lo < SMALL_EDGE / 4 and hi >= SMALL_EDGE * 8:
        return [(lo, SMALL_EDGE), (SMALL_EDGE, hi)]
    return [(lo, hi)]


def _clip(c: dict, lo: float, hi: float) -> dict:
    keep = [i for i, x in enumerate(c["x"]) if lo <= x <= hi]
    out = dict(c, x=[c["x"][i] for i in keep], y=[c["y"][i] for i in keep])
    for k in ("lo", "hi"):
        if c.get(k):
            out[k] = [c[k][i] for i in keep]
    return out


def lines(curves: list[dict], *, path, title: str, xlabel: str, ylabel: str, size_axis: bool,
          levels=(), reference: Optional[float] = None):
    """curves: [{"label", "series" (the method: its colour), "style" (line style index), "x": [...],
    "y": [...], "lo": [...] or None, "hi": [...] or None}]."""
    plt = pyplot()
    xs_all = [x for c in curves for x in c["x"]]
    panels = _size_panels(xs_all, size_axis)
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 4.4 if len(panels) == 1 else 7.6), dpi=90,
                             squeeze=False)
    shade = len(curves) <= MAX_SHADED
    for n, (ax, (lo, hi)) in enumerate(zip(axes[:, 0], panels)):
        part = [p for p in (_clip(c, lo, hi) for c in curves) if p["x"]]
        xs = [x for c in part for x in c["x"]]
        log_x = size_axis or (min(xs) > 0 and max(xs) / min(xs) >= 16)
        if log_x:
            xmin, xmax = min(xs) / 1.15, max(xs) * 1.15
            if size_axis and levels:
                draw_bands(ax, levels, xmin, xmax)
            ax.set_xscale("log", base=2)
            ax.set_xlim(xmin, xmax)
            if size_axis:
                ax.xaxis.set_major_formatter(size_formatter())
        for c in part:
            color = method_color(c["series"])
            # memkit's own routine, wide and beneath: it stays visible where a
            # variant it dispatches to draws the very same line.
            own = method_key(c["series"]) in FIXED_COLORS and color != FIXED_COLORS["glibc"]
            ax.plot(c["x"], c["y"], LINE_STYLES[c.get("style", 0) % len(LINE_STYLES)], color=color,
                    label=c["label"], lw=3.4 if own else 1.5, zorder=1.9 if own else 2,
                    alpha=0.75 if own else 1.0, marker="." if len(c["x"]) < 30 and not own else None)
            if shade and c.get("lo") and len(c["x"]) > 1:
                ax.fill_between(c["x"], c["lo"], c["hi"], color=color, alpha=0.08, lw=0)
        if reference is not None:
            ax.axhline(reference, color="#333", lw=0.8)
        ys = [y for c in part for y in c["y"] if y is not None and y > 0]
        if ys and max(ys) / min(ys) > 100:
            ax.set_yscale("log")
        elif ys:
            top = max(ys) * 1.15
            if reference is not None:
                top = max(top, reference * 1.1)
            ax.set_ylim(0, top)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if len(panels) > 1:
            ax.set_title(("below " if n == 0 else "from ") + size_formatter()(SMALL_EDGE, None) + " B",
                         fontsize=9, loc="left")
        ax.grid(True, which="major", color="#ccc", lw=0.5)
    axes[0, 0].set_title(title, fontsize=11, pad=16)
    axes[0, 0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def bars(categories: list[str], series: list[str], values: dict, *, path, title: str, ylabel: str,
         errors: Optional[dict] = None, reference: Optional[float] = None, by_category: bool = False):
    """Grouped bars: one group per category, one bar per series.
    values[(category, series)] = number; errors likewise (lo, hi).  Many
    categories: horizontal, so the labels stay readable.  by_category: the
    categories are the methods (one series), each bar in its method's colour."""
    plt = pyplot()
    n_cat, n_ser = len(categories), max(1, len(series))
    horizontal = n_cat > 6 or max((len(c) for c in categories), default=0) > 14
    width = 0.8 / n_ser
    if horizontal:
        fig, ax = plt.subplots(figsize=(10, min(14, 1.2 + n_cat * (0.12 + 0.12 * n_ser))), dpi=90)
    else:
        fig, ax = plt.subplots(figsize=(10, 4.4), dpi=90)
    for j, s in enumerate(series):
        pos, vals, err_lo, err_hi = [], [], [], []
        for i, c in enumerate(categories):
            v = values.get((c, s))
            if v is None:
                continue
            pos.append(i - 0.4 + width * (j + 0.5))
            vals.append(v)
            lo, hi = (errors or {}).get((c, s), (v, v))
            err_lo.append(max(0.0, v - lo))
            err_hi.append(max(0.0, hi - v))
        kw = dict(color=[method_color(c) for c in categories if values.get((c, s)) is not None]
                  if by_category else method_color(s), label=None if by_category else s)
        err = [err_lo, err_hi] if errors else None
        if horizontal:
            ax.barh(pos, vals, height=width, xerr=err, error_kw=dict(lw=0.7), **kw)
        else:
            ax.bar(pos, vals, width=width, yerr=err, error_kw=dict(lw=0.7), **kw)
    if horizontal:
        ax.set_yticks(range(n_cat))
        ax.set_yticklabels(categories, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
        if reference is not None:
            ax.axvline(reference, color="#333", lw=0.8)
        ax.grid(True, axis="x", color="#ccc", lw=0.5)
    else:
        ax.set_xticks(range(n_cat))
        ax.set_xticklabels(categories, fontsize=8, rotation=20 if n_cat > 3 else 0, ha="right" if n_cat > 3 else "center")
        ax.set_ylabel(ylabel)
        if reference is not None:
            ax.axhline(reference, color="#333", lw=0.8)
        ax.grid(True, axis="y", color="#ccc", lw=0.5)
    ax.set_title(title, fontsize=11)
    if not by_category:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def pairs(curves: list[dict], *, path, title: str, ylabel: str, reference: Optional[float] = 1.0):
    """Per-pair values in the order the pairs ran (drift shows as a trend):
    curves [{"label", "y": [one per pair], "median", "low", "high" (nan: no
    interval)}], each with its median as a dashed line and its interval as
    a band."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.0), dpi=90)
    for c in curves:
        color = method_color(c.get("series", c["label"]))
        xs = list(range(1, len(c["y"]) + 1))
        ax.plot(xs, c["y"], "o-", color=color, lw=0.8, ms=4, label=c["label"])
        ax.axhline(c["median"], color=color, lw=1.2, ls="--")
        if not (math.isnan(c["low"]) or math.isnan(c["high"])):
            ax.axhspan(c["low"], c["high"], color=color, alpha=0.12, lw=0)
    if reference is not None:
        ax.axhline(reference, color="#333", lw=0.8)
    ax.set_xlabel("pair (in the order they ran)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(True, color="#ccc", lw=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# A speed-up matrix: each cell coloured by its log ratio, red below 1, blue
# above, white at 1, the same intensity for 2x faster and 2x slower; the
# scale saturates at SATURATE (or the largest ratio's distance from 1, if
# smaller, but never below FLOOR: 1.02 against 0.98 is not deep colour).
SATURATE = 2.5
FLOOR = 1.25
CELL_IN = (0.7, 0.3)   # a cell's width and height, inches
RATIO_TICKS = (0.4, 0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0, 2.5)


def _ratio_scale(values: list[float]) -> float:
    far = max((abs(math.log(v)) for v in values if v and v > 0), default=0.0)
    return min(math.log(SATURATE), max(math.log(FLOOR), far))


def heatmap(panels: list[dict], *, path, title: str, label: str = "speed-up over glibc (> 1: faster)",
            per_row: int = 3):
    """Matrices of ratios, one panel each, on one shared scale around 1:
    panels [{"title", "rows": [labels], "cols": [labels], "values": [[ratio or None per col] per row]}];
    each cell shows its number.  A panel whose row labels repeat its left
    neighbour's leaves them to it."""
    plt = pyplot()
    from matplotlib.colors import Normalize
    cmap = plt.get_cmap("RdBu")
    flat = [v for p in panels for row in p["values"] for v in row if v]
    scale = _ratio_scale(flat)
    norm = Normalize(-scale, scale)
    label_in = 0.075 * max((len(r) for p in panels for r in p["rows"]), default=4) + 0.2
    ncols = min(per_row, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    width_cells = max(len(p["cols"]) for p in panels)
    height_cells = max(len(p["rows"]) for p in panels)
    panel_w = width_cells * CELL_IN[0] + label_in
    panel_h = height_cells * CELL_IN[1] + 0.75
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, dpi=90, constrained_layout=True,
                             figsize=(max(5.0, ncols * panel_w + 0.9), nrows * panel_h + 0.55))
    for i, ax in enumerate(axes.flat):
        if i >= len(panels):
            ax.axis("off")
            continue
        p = panels[i]
        grid = [[math.log(v) if v and v > 0 else float("nan") for v in row] for row in p["values"]]
        ax.imshow(grid, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
        for r, row in enumerate(p["values"]):
            for c, v in enumerate(row):
                if not v:
                    ax.text(c, r, "-", ha="center", va="center", fontsize=7, color="#999")
                    continue
                dark = abs(math.log(v)) > 0.6 * scale
                ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=9,
                        color="white" if dark else "#222")
        ax.set_xticks(range(len(p["cols"])))
        ax.set_xticklabels(p["cols"], fontsize=9)
        ax.xaxis.tick_top()
        ax.set_yticks(range(len(p["rows"])))
        left = panels[i - 1] if i % ncols else None
        ax.set_yticklabels([] if left and left["rows"] == p["rows"] else p["rows"], fontsize=9)
        ax.tick_params(length=0)
        ax.set_title(p["title"], fontsize=10)
        for side in ax.spines.values():
            side.set_visible(False)
    fig.suptitle(title, fontsize=11)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=norm)
    bar = fig.colorbar(sm, ax=axes.ravel().tolist(), fraction=0.025, pad=0.02, aspect=30)
    ticks = [t for t in RATIO_TICKS if abs(math.log(t)) <= scale + 1e-9]
    bar.set_ticks([math.log(t) for t in ticks])
    bar.set_ticklabels([f"{t:.2f}" for t in ticks], fontsize=7)
    bar.set_label(label, fontsize=8)
    fig.savefig(path)
    plt.close(fig)
