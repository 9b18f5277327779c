# SPDX-License-Identifier: Apache-2.0
"""report: the headline, one plot (at least) per experiment, folded tables,
no stale files; on a synthetic suite in the self-describing record format
and on old-format records."""

import json
import random
import re

import pytest

from conftest import FINGERPRINT, run_cli
from memkit.results.result import Result
from memkit.report import run_report
from memkit.report.run_report import write_report
from memkit.store.db import Database

PNG = b"\x89PNG\r\n\x1a\n"


def rec(exp, series, params, value, *, metric="ns_per_call", unit="ns", better="lower", axis="size",
        baseline=None, speedup=None, rng=None, n=5):
    rng = rng or random.Random(repr((exp, series, params, metric)))   # not hash(): it differs per process
    samples = [value * (1 + rng.uniform(-0.02, 0.02)) for _ in range(n)]
    m = {"type": "measurement", "experiment": exp, "series": series, "params": params,
         "axis": {"name": axis, "unit": "B" if axis in ("size", "bytes") else ""} if axis else None,
         "metric": metric, "unit": unit, "better": better, "stat": "median", "value": value,
         "min": min(samples), "median": value, "max": max(samples), "samples": samples, "baseline": None}
    if baseline is not None:
        m["baseline"] = {"series": baseline, "params": params}
        m["ratios"] = [speedup * (1 + rng.uniform(-0.03, 0.03)) for _ in range(n)]
        m.update(ratio=speedup, ratio_min=min(m["ratios"]), ratio_max=max(m["ratios"]))
    return m


def suite(slow_memkit=1.0):
    out = {}
    ms = []
    for size in [0, 1, 8, 64, 256, 1024, 4096, 65536, 1 << 20, 64 << 20]:
        base = 2 + size / 40.0
        for s, f in (("glibc", 1.0), ("mk_memset", 0.8 * slow_memkit), ("sse2", 1.6), ("avx512", 0.8)):
            ns = base * f
            kw = {} if s == "glibc" else dict(baseline="glibc", speedup=1.0 / f)
            ms.append(rec("memset-sizes", s, {"size": size, "value": 0}, ns, **kw))
            ms.append(rec("memset-sizes", s, {"size": size, "value": 0}, max(size, 1) / ns, metric="gb_per_s",
                          unit="GB/s", better="higher"))
    out["memset-sizes"] = ms
    out["memset-random"] = [
        rec("memset-random", s, {"granularity": g, "min_size": 0, "max_size": mx, "clear_l1": c}, 10 * f, axis=None,
            **({} if s == "glibc" else dict(baseline="glibc", speedup=1 / f)))
        for g in (1, 16) for mx in (128, 1024, 4096) for c in (False, True)
        for s, f in (("glibc", 1.0), ("mk_memset", 0.7), ("sse2", 0.9))]
    out["copy-sweep"] = [
        rec("copy-sweep", s, {"size": size, "dst_offset": off}, f * min(100, size / 64) * (0.7 if off else 1),
            metric="gb_per_s", unit="GB/s", better="higher")
        for size in (64, 1024, 16384, 1 << 20, 16 << 20) for off in (0, 1, 7, 33)
        for s, f in (("libc", 1.0), ("memkit", 1.1), ("rep_movsb", 0.6))]
    out["zeroing"] = [
        r for t in (1, 2, 4, 8) for lock in ("spin", "mutex") for grain in (4096, 1 << 20)
        for r in (rec("zeroing", lock, {"threads": t, "grain": grain, "workload": "backlog"}, 50.0 * t,
                      metric="wall_ms", unit="ms", axis="threads"),
                  rec("zeroing", lock, {"threads": t, "grain": grain, "workload": "backlog"},
                      4.0 / (t if lock == "spin" and grain == 4096 else 1), metric="gb_per_cpu_s",
                      unit="GB/CPU-s", better="higher", axis="threads"))]
    out["faults"] = [rec("faults", s, {"bytes": b}, v * (b >> 20), metric="us_per_mb", unit="µs/MB", axis=None)
                     for b in (1 << 20, 64 << 20) for s, v in (("first-touch", 90.0), ("warm", 10.0),
                                                              ("munmap", 20.0))]
    out["size-distributions"] = [
        rec("size-distributions", f"{s} {op}", {"distribution": d, "op": op}, 8 * f, axis=None,
            **({} if s == "glibc" else dict(baseline=f"glibc {op}", speedup=1 / f)))
        for d in ("Memcpy_Fleet", "rpc", "db") for op in ("memcpy", "memset")
        for s, f in (("glibc", 1.0), ("memkit", 0.6))]
    return out


def point(at, fastest, tied=(), rival="avx512", verdict=0, slower=1.0):
    return {"at": at, "fastest": fastest, "tied": list(tied), "rival": rival, "verdict": verdict, "slower": slower}


# memset-sizes' ranking as the lab writes it: avx512 leads 0 B..1 KiB, mk_memset
# within its noise below 1 KiB and 1.30x slower beyond it at 1 KiB, fastest at 64 KiB.
MEMSET_RANKING = {"what": "memset, fixed sizes", "ordered": True, "memkit": "mk_memset", "loss_min": 1.02,
                  "points": [point("0 B", "avx512", ["mk_memset", "glibc"]),
                             point("64 B", "avx512", ["mk_memset"]),
                             point("256 B", "avx512", ["mk_memset"]),
                             point("1 KiB", "avx512", verdict=-1, slower=1.30),
                             point("64 KiB", "mk_memset", verdict=1, slower=0.8)],
                  "ranges": [[0, 3], [4, 4]]}


def store_suite(path, fp=FINGERPRINT, slow_memkit=1.0, extra=()):
    verdicts = {"memset-sizes": [{"kind": "loss", "text": "memset, fixed sizes: mk_memset is 1.30x slower than "
                                                          "avx512 at 1 KiB (beyond the noise)"},
                                 {"kind": "fastest", "text": "memset, fixed sizes, fastest by the statistic: "
                                                             "avx512 at 0 B..1 KiB; mk_memset at 64 KiB",
                                  "data": MEMSET_RANKING},
                                 {"text": "a plain verdict"}]}
    results = [Result(name, "seed", f"about {name}", "ok", 1.0, [], fp, ms, verdicts.get(name, []), "own table", "")
               for name, ms in suite(slow_memkit).items()]
    with Database(path, create=True) as d:
        return d.store_run(started_at="t0", finished_at="t1", quick=False, fingerprint=fp,
                           results=results + list(extra))


def test_report_has_a_headline_and_a_plot_per_experiment(tmp_path):
    db_path = tmp_path / "m.db"
    run_id = store_suite(db_path)
    crashed = Result("crashy", "x", "crashes", "crashed", 0.5, [], None, [], [], "", "crashy crashed (killed by SIGSEGV)")
    run2 = store_suite(db_path, fp=dict(FINGERPRINT, tunables="threads=0:memset=sse2"), slow_memkit=2.0,
                       extra=[crashed])
    out = tmp_path / "rep"
    with Database(db_path) as d:
        write_report(d, run_id, out)
    # A plot an earlier report wrote (its manifest says so) and the new one
    # does not; and a file of the user's among the plots.
    manifest = json.loads((out / ".memkit-files").read_text())
    manifest["files"].append("plots/memset-sizes-gone.png")
    (out / ".memkit-files").write_text(json.dumps(manifest))
    (out / "plots" / "memset-sizes-gone.png").write_bytes(PNG)
    (out / "plots" / "mine.png").write_bytes(PNG)
    with Database(db_path) as d:
        index = write_report(d, run2, out)
    text = index.read_text()
    imgs = re.findall(r"<img src='([^']+)'", text)
    # Every image is in the plots folder, written now; of the earlier
    # report's files none stays, the user's file does.
    assert all(i.startswith("plots/") for i in imgs)
    assert sorted(p.name for p in (out / "plots").iterdir()) == \
        sorted([i[len("plots/"):] for i in imgs] + ["mine.png"])
    assert json.loads((out / ".memkit-files").read_text())["files"] == sorted(["index.html"] + imgs)
    assert not list(out.glob("*.png"))
    for i in imgs:
        assert (out / i).read_bytes()[:8] == PNG and (out / i).stat().st_size > 5000
    names = [i[len("plots/"):] for i in imgs]
    for exp in suite():
        assert any(n.startswith(exp + "-") for n in names), exp
    # memset-sizes' main metric is plotted in spite of its size=0 row; one ratio plot, labelled as speed-ups.
    assert "memset-sizes-ns-per-call.png" in names and "memset-sizes-ratio.png" in names
    assert "speed-up over the baseline" in text
    assert "copy-sweep-worst-dst-offset.png" in names
    assert any(n.startswith("zeroing-cpu-seconds-per-gb") for n in names)
    assert "memset-random-speedup.png" in names and "size-distributions-speedup.png" in names
    # The headline comes first: fastest per operation and size range, losses, changes.
    head = text[text.index("<h2>Headline"):text.index("<h2>Experiments")]
    assert "<td>memset-sizes: memset, fixed sizes</td><td>0 B..1 KiB</td><td>avx512</td><td class='loss'>" \
           "mk_memset: slower beyond the noise at 1 of 4 points, up to 1.30x</td>" in head
    assert "<td>64 KiB</td><td>mk_memset</td><td>mk_memset: fastest</td>" in head
    assert "mk_memset is 1.30x slower than avx512 at 1 KiB" in head
    assert "Compared with run 1" in head and "tunables: memset=sse2 added" in head
    assert re.search(r"\d+ changed beyond the noise \(([1-9]\d*) worse", head)
    assert head.count("<td class='loss'>") == 1     # the one ranked range with the loss verdict's point
    # Long tables are folded; failures show.
    assert "<details><summary>the numbers (" in text and "killed by SIGSEGV" in text


def test_old_format_run_still_reports(tmp_path):
    ms = []
    for size in (0, 64, 4096, 1 << 20):
        for s in ("glibc", "mk_memset"):
            m = {"series": s, "params": {"size": size, "value": 0}, "metric": "ns_per_call", "unit": "ns",
                 "stat": "median", "value": 1.0 + size / 100, "min": 1, "median": 1, "max": 2, "samples": 3}
            if s != "glibc":
                m.update(ratio_to="glibc", ratio=0.9, ratio_min=0.8, ratio_max=1.0)
            ms.append(m)
    with Database(tmp_path / "m.db", create=True) as d:
        run = d.store_run(started_at="t0", finished_at="t1", quick=True, fingerprint=FINGERPRINT,
                          results=[Result("memset-sizes", "s", "d", "ok", 1.0, [], FINGERPRINT, ms, ["v"], "", "")])
        text = write_report(d, run, tmp_path / "r").read_text()
    assert "plots/memset-sizes-ns-per-call.png" in text
    # An old record's ratio is not called a speed-up.
    assert "value ÷ baseline" in text and "speed-up over" not in text


def test_report_command(tmp_path):
    db_path = tmp_path / "m.db"
    store_suite(db_path)
    p = run_cli("report", "--db", db_path, "--out", tmp_path / "r")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "r" / "index.html").exists()
    p = run_cli("report", "--db", db_path, "--run", 99, "--out", tmp_path / "r")
    assert p.returncode == 1 and p.stderr.strip() == f"memkit: error: no run 99 in {db_path}"


def test_bars_split_by_parameters_and_lines_by_declared_keys(tmp_path):
    # faults: single-threaded modes (no threads) and a thread sweep are two
    # figures, not one with a "threads=None" group; the modes are bars of
    # their own.  zeroing: a figure per workload, and the lock a series
    # already names is not repeated in its legend.
    from memkit.report.run_figures import experiment_figures
    faults = [rec("faults", s, {"bytes": 1 << 26}, v, metric="us_per_mb", unit="µs/MB", axis=None)
              for s, v in (("first touch", 380.0), ("warm touch", 5.0), ("munmap", 60.0))]
    faults += [rec("faults", s, {"bytes": 1 << 26, "threads": t}, 100.0 / t, metric="ms", unit="ms", axis=None)
               for t in (1, 2, 4) for s in ("page touch, fresh", "memcpy, warm destination")]
    items, _ = experiment_figures("faults", faults, [], tmp_path)
    names = sorted(p.rsplit("/", 1)[1] for p, _ in items)
    assert names == ["faults-ms-threads.png", "faults-us-per-mb.png"], names
    zeroing = [rec("zeroing", lock, {"threads": t, "grain": g, "lock": lock, "workload": w}, 0.05 * t,
                   metric="cpu_s_per_gb", unit="CPU-s/GB", axis="threads")
               for t in (1, 2, 4, 8) for lock in ("spin", "mutex") for g in (4096, 1 << 20)
               for w in ("backlog", "paced")]
    items, _ = experiment_figures("zeroing", zeroing, [], tmp_path)
    names = {p.rsplit("/", 1)[1] for p, _ in items}
    assert {"zeroing-cpu-s-per-gb-workload-backlog.png", "zeroing-cpu-s-per-gb-workload-paced.png"} <= names, names
    import memkit.report.plots as plots
    seen = []
    real = plots.lines
    plots.lines = lambda curves, **kw: seen.extend(c["label"] for c in curves)
    try:
        experiment_figures("zeroing", zeroing, [], tmp_path)
    finally:
        plots.lines = real
    assert "spin grain=4 KiB" in seen and not any("lock=" in label for label in seen), seen


def working_set_suite():
    """size-distributions at three working sets with a peer: memkit twice
    glibc's speed in cache, slower than both at dram, worst on Memcpy_1."""
    from memkit.results.records import measurement
    ms = []
    for ws, ws_bytes, memkit_ns in (("hot", 4096, 5.0), ("l3", 4 << 20, 8.0), ("dram", 64 << 20, 20.0)):
        for dist, worse in (("Memcpy_0", 1.0), ("Memcpy_1", 1.5)):
            params = {"distribution": dist, "op": "memcpy", "calls": 50000, "ws": ws, "ws_bytes": ws_bytes,
                      "pages": "4k"}
            for s, ns in (("glibc memcpy", 10.0), ("memkit memcpy", memkit_ns * worse), ("aocl-libmem memcpy", 9.0)):
                kw = {} if s == "glibc memcpy" else dict(baseline="glibc memcpy", speedup=10.0 / ns)
                ms.append(measurement(rec("size-distributions", s, params, ns, axis=None, **kw), 2))
    return ms


def drawn_matrices(monkeypatch) -> list:
    """Every plots.heatmap call's panels, the PNG still written."""
    from memkit.report import plots
    seen, real = [], plots.heatmap

    def spy(panels, **kw):
        seen.append(panels)
        real(panels, **kw)
    monkeypatch.setattr(plots, "heatmap", spy)
    return seen


def test_working_sets_are_one_matrix_a_table_row_each_and_a_headline(tmp_path, monkeypatch):
    from memkit.report.run_figures import experiment_figures
    ms = working_set_suite()
    drawn = drawn_matrices(monkeypatch)
    items, _ = experiment_figures("size-distributions", ms, [], tmp_path)
    # One figure across the levels: a panel per method, memkit's first, a
    # distribution per row, the levels hot first then by size.
    assert [p.rsplit("/", 1)[1] for p, _ in items] == ["size-distributions-matrix.png"]
    (panels,) = drawn
    assert [p["title"] for p in panels] == ["memkit memcpy vs glibc memcpy", "aocl-libmem memcpy vs glibc memcpy"]
    mine = panels[0]
    assert mine["rows"] == ["Memcpy_0", "Memcpy_1"] and mine["cols"] == ["hot", "L3", "DRAM"]
    assert mine["values"] == [[2.0, 1.25, 0.5], [10 / 7.5, 10 / 12, 10 / 30]]
    rows = run_report.working_set_rows("size-distributions", ms, {"memkit memcpy"})
    assert [r["ws"] for r in rows] == ["hot", "l3", "dram"]
    hot, _, dram = rows
    assert hot["memkit"] == "memkit memcpy" and abs(hot["geomean"] - 10 / (5 * 1.5 ** 0.5)) < 1e-9
    assert dram["worst_at"] == "distribution=Memcpy_1" and abs(dram["worst"] - 10 / 30) < 1e-9
    assert abs(dram["others"]["aocl-libmem memcpy"] - 10 / 9) < 1e-9
    html = "".join(run_report.working_set_html("size-distributions", ms, {"memkit memcpy"}))
    # It describes (no judgement of its own: the losses are the lab's verdicts).
    assert "dram (64 MiB per side)" in html and "<td>0.33x (distribution=Memcpy_1)</td>" in html
    assert "class='loss'" not in html
    # Without working sets, or without a ranking naming memkit's series, nothing of this.
    before = [dict(m, params={k: v for k, v in m["params"].items() if k != "ws"})
              for m in ms if m["params"]["ws"] == "hot"]
    assert run_report.working_set_rows("size-distributions", before, {"memkit memcpy"}) == []
    assert run_report.working_set_rows("size-distributions", ms, set()) == []


def test_the_trade_is_one_matrix_per_method_over_glibc_as_shipped(tmp_path, monkeypatch):
    # memkit, glibc tuned (glibc's time over its own: it never shares a
    # process with glibc as shipped) and the peer, each per operation and
    # level, as `memkit tune` and the summary weigh the levels.
    from memkit.report.run_figures import trade_figure
    from memkit.results.records import measurement
    from memkit.tuning import level_choice
    ms = working_set_suite()
    ms += [measurement(rec("size-distributions", "glibc-tuned memcpy", m["params"], 8.0, axis=None), 2)
           for m in ms if m["series"] == "glibc memcpy"]
    drawn = drawn_matrices(monkeypatch)
    src, caption = trade_figure(ms, tmp_path)
    assert src == "plots/headline-trade.png" and (tmp_path / "headline-trade.png").read_bytes()[:8] == PNG
    assert "across processes" in caption
    (panels,) = drawn
    assert [p["title"] for p in panels] == ["memkit", "glibc tuned", "aocl-libmem"]
    assert all(p["rows"] == ["memcpy"] and p["cols"] == ["hot", "L3", "DRAM"] for p in panels)
    scores = level_choice.level_scores(ms)["memcpy"]
    assert panels[0]["values"] == [[scores["hot"], scores["l3"], scores["dram"]]]
    assert panels[1]["values"] == [[pytest.approx(10 / 8)] * 3] and panels[2]["values"] == [[pytest.approx(10 / 9)] * 3]
    # Without memkit's records, or without working sets, no picture.
    assert trade_figure([m for m in ms if not m["series"].startswith("memkit")], tmp_path) is None
    assert trade_figure([dict(m, params={k: v for k, v in m["params"].items() if k != "ws"}) for m in ms],
                        tmp_path) is None


def test_memset_random_is_the_seeds_matrix(tmp_path, monkeypatch):
    # Size range down, offset range across, a panel per working set, memkit's
    # routine alone (as the ranking names it).
    from memkit.report.run_figures import experiment_figures
    from memkit.results.records import measurement
    ms = []
    for ws, ws_bytes in (("hot", 4096), ("dram", 64 << 20)):
        for g, lo, hi in ((1, 1, 16), (16, 256, 512), (1, 1, 1024)):
            for off, clear in ((0, False), (4095, False), (0, True)):
                params = {"clear_l1": clear, "granularity": g, "max_offset": off, "max_size": hi, "min_offset": 0,
                          "min_size": lo, "pages": "4k", "sizes": 50000, "ws": ws, "ws_bytes": ws_bytes}
                for s, up in (("glibc", None), ("mk_memset", 1 + hi / 1e4 + off / 1e5), ("avx2", 0.5)):
                    kw = dict(baseline="glibc", speedup=up) if up else {}
                    ms.append(measurement(rec("memset-random", s, params, 10.0, axis=None, **kw), 2))
    drawn = drawn_matrices(monkeypatch)
    items, _ = experiment_figures("memset-random", ms, [], tmp_path, frozenset({"mk_memset"}))
    assert [p.rsplit("/", 1)[1] for p, _ in items] == ["memset-random-matrix.png"]
    (panels,) = drawn
    assert [p["title"] for p in panels] == ["mk_memset vs glibc\nws=hot (in cache)",
                                            "mk_memset vs glibc\nws=dram (64 MiB per side)"]
    hot = panels[0]
    assert hot["rows"] == ["1..16 B, step 1", "1..1024 B, step 1", "256..512 B, step 16"]
    assert hot["cols"] == ["offsets 0..0", "offsets 0..4095", "offsets 0..0\nL1 cleared"]
    assert hot["values"][1] == [1 + 1024 / 1e4, 1 + 1024 / 1e4 + 4095 / 1e5, 1 + 1024 / 1e4]


def test_a_replayed_recording_names_its_speed_up_per_working_set():
    from memkit.report.recording_plot import speedup_text, speedups
    ms = [dict(m, params=dict(m["params"], data="/rec")) for m in working_set_suite()]
    ups = speedups(ms)
    assert set(ups) == {("/rec", "Memcpy_0"), ("/rec", "Memcpy_1")}
    assert ups[("/rec", "Memcpy_0")] == {"hot": 2.0, "l3": 1.25, "dram": 0.5}
    assert speedup_text(ups[("/rec", "Memcpy_0")]) == "memkit vs glibc on them: 2.00x (hot), 1.25x (l3), 0.50x (dram)"
    assert speedup_text({None: 1.5}) == "memkit 1.50x glibc's speed on them"


def drawn_colours(monkeypatch, db_path, run_id, out):
    """Every labelled line and bar the report draws: [(label, colour)]."""
    import matplotlib.axes
    from matplotlib.colors import to_hex
    drawn = []
    for name in ("plot", "bar", "barh"):
        original = getattr(matplotlib.axes.Axes, name)

        def spy(self, *args, _original=original, **kw):
            artists = _original(self, *args, **kw)
            label = kw.get("label")
            if label and not label.startswith("_"):
                colour = kw.get("color")
                if colour is None:   # a format string's or the cycle's colour
                    colour = artists[0].get_color() if name == "plot" else artists.patches[0].get_facecolor()
                drawn.append((label, to_hex(colour)))
            return artists
        monkeypatch.setattr(matplotlib.axes.Axes, name, spy)
    with Database(db_path) as d:
        write_report(d, run_id, out)
    return drawn


def test_each_method_has_one_colour_in_every_plot(tmp_path, monkeypatch):
    from memkit.report import plots
    db_path = tmp_path / "m.db"
    run_id = store_suite(db_path)
    drawn = drawn_colours(monkeypatch, db_path, run_id, tmp_path / "rep")
    colours = {}
    for label, colour in drawn:
        colours.setdefault(plots.method_key(label), set()).add(colour)
    # mk_memset's ns/call line and its "mk_memset vs glibc" speed-up, avx512 likewise ...
    assert {"glibc", "mk_memset", "avx512", "sse2", "memkit", "libc"} <= set(colours)
    assert [label for label, _ in drawn if label.startswith("mk_memset vs")], "no speed-up curve drawn"
    assert {m: c for m, c in colours.items() if len(c) > 1} == {}
    # ... and two methods never share one.
    by_colour = {}
    for method, (colour,) in colours.items():
        by_colour.setdefault(colour, set()).add(method)
    shared = [ms for ms in by_colour.values() if len(ms) > 1]
    assert all(ms <= {"glibc", "libc"} or ms <= {"memkit", "mk_memset"} for ms in shared), shared
