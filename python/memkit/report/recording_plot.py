# SPDX-License-Identifier: Apache-2.0
"""The report's picture of a recorded program (`memkit record`): its calls
and bytes by size, per function, beside memkit's speed-up over glibc when
size-distributions replayed the recording (the measurements' "data"
parameter names the recording's directory), its working sets and the
prediction (recording.predict) from that replay."""

from __future__ import annotations

from pathlib import Path

from memkit.programs import recording, ws_estimate


def _bins(sizes: dict):
    """Power-of-two bins: [(label, lo, hi)] covering the sizes present."""
    top = max(sizes) if sizes else 0
    bins = [("0", 0, 1)]
    lo = 1
    while lo <= top:
        hi = lo * 2
        label = str(lo) if lo < 1024 else f"{lo >> 10}K" if lo < (1 << 20) else f"{lo >> 20}M"
        bins.append((label if hi - lo == 1 else label + "+", lo, hi))
        lo = hi
    return bins


def speedups(ms) -> dict:
    """(data dir, distribution) -> {working set: memkit's speed-up over glibc}
    (ratio of the medians of ns per call) for size-distributions measurements
    of a recording; the working set None in records from before there were
    several."""
    out: dict = {}
    for data in {(m.get("params") or {}).get("data") for m in ms} - {None}:
        for (dist, ws), t in recording.replay_times(ms, data).items():
            out.setdefault((data, dist), {})[ws] = t["glibc"] / t["memkit"]
    return out


def speedup_text(ups: dict) -> str:
    """'memkit 1.20x glibc's speed on them', per working set where there are several."""
    if list(ups) == [None]:
        return f"memkit {ups[None]:.2f}x glibc's speed on them"
    return "memkit vs glibc on them: " + ", ".join(f"{u:.2f}x ({ws})" for ws, u in ups.items())


def plot(rec_dir: Path, ups: dict, path: Path, prediction: recording.Prediction) -> str:
    """Writes the PNG for one recording; returns its caption."""
    from memkit.report.plots import pyplot
    plt = pyplot()
    summary = recording.load_summary(rec_dir)
    ops = [(op, f) for op, f in recording.FILES.items() if (rec_dir / f).is_file()]
    fig, axes = plt.subplots(len(ops), 1, figsize=(9, 2.6 * len(ops)), squeeze=False)
    for ax, (op, fname) in zip(axes[:, 0], ops):
        probs = recording.read_distribution(rec_dir / fname)
        bins = _bins(probs)
        calls = [sum(p for s, p in probs.items() if lo <= s < hi) for _, lo, hi in bins]
        weight = [sum(p * s for s, p in probs.items() if lo <= s < hi) for _, lo, hi in bins]
        total = sum(weight) or 1
        x = range(len(bins))
        ax.bar([i - 0.2 for i in x], [100 * c for c in calls], width=0.4, label="% of calls", color="#999999")
        ax.bar([i + 0.2 for i in x], [100 * w / total for w in weight], width=0.4, label="% of bytes", color="#444444")
        ax.set_xticks(list(x))
        ax.set_xticklabels([b[0] for b in bins], rotation=60, fontsize=7)
        ax.set_ylabel("%")
        up = ups.get(fname[:-4])
        ws = (summary.get("working_set") or {}).get(op, {}).get("ws")
        title = (f"{op}: {summary['calls'].get(op, 0):,} calls, {summary['bytes'].get(op, 0):,} bytes"
                 + (f", working set {ws}" if ws else "") + (f"; {speedup_text(up)}" if up else ""))
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel("call size, bytes (power-of-two bins)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    cmd = " ".join(summary.get("command", []))
    working_sets = "; ".join(f"{op} {ws_estimate.ws_text((summary.get('working_set') or {}).get(op))}"
                             for op, _ in ops)
    return (f"recorded by memkit record from `{cmd}` ({summary.get('processes', '?')} processes): "
            "calls and bytes by size, with memkit's speed-up when size-distributions replayed them. "
            f"Working sets: {working_sets}. {prediction.headline()}: " +
            "; ".join(l.strip() for l in prediction.lines()[1:]))


def figures(ms, out: Path, slug) -> list:
    """[(png, caption)] for every recording the measurements replayed."""
    ups = speedups(ms)
    result = []
    for d in sorted({data for data, _ in ups}):
        rec_dir = Path(d)
        if not recording.is_recording(rec_dir):
            continue
        name = f"recording-{slug(rec_dir.name)}.png"
        prediction = recording.predict(recording.load_summary(rec_dir), recording.replay_times(ms, rec_dir))
        caption = plot(rec_dir, {dist: u for (data, dist), u in ups.items() if data == d}, out / name,
                       prediction)
        result.append((name, caption))
    return result
