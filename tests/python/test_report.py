"""report: HTML and PNGs for a synthetic run."""

import re

from conftest import FINGERPRINT, run_cli
from memkit.db import Database
from memkit.lab import Result
from memkit.report import write_report


def fill_like():
    ms = []
    for method in ("vector-loop", "nt-stores"):
        for i in range(12):
            size = 1024 << (2 * i)
            for value in (0, 90):
                v = 100.0 / (i + 1) * (3 if method == "nt-stores" and value == 0 and i > 8 else 1)
                d = {"series": method, "params": {"size": size, "value": value}, "metric": "fill_throughput",
                     "unit": "GB/s", "stat": "median", "value": v, "min": v * .9, "median": v, "max": v * 1.1,
                     "samples": 5}
                if value == 0:
                    d.update(ratio_to=f"{method} value=90", ratio=v / (100.0 / (i + 1)), ratio_min=1, ratio_max=3)
                ms.append(d)
    return ms


def table_like():
    return [{"series": s, "params": {"distribution": dist}, "metric": "ns_per_call", "unit": "ns",
             "stat": "median", "value": 12.5, "min": 12, "median": 12.5, "max": 13, "samples": 9}
            for s in ("glibc", "memkit") for dist in ("db", "rpc")]


def make_db(path):
    with Database(path, create=True) as d:
        return d.store_run(started_at="t0", finished_at="t1", quick=False, fingerprint=FINGERPRINT, results=[
            Result("fill-regions", "downs", "fill by region", "ok", 3.0, [], FINGERPRINT, fill_like(),
                   ["nt-stores: zeros 3.00x faster in RAM"], "the C table", ""),
            Result("size-distributions", "beyond", "sizes", "ok", 2.0, [], FINGERPRINT, table_like(),
                   ["memkit 5% faster"], "", ""),
            Result("crashy", "x", "crashes", "crashed", 0.5, [], None, [], [], "", "crashy crashed (killed by SIGSEGV)"),
        ])


def test_report_html_and_pngs(tmp_path):
    db_path = tmp_path / "m.db"
    run_id = make_db(db_path)
    out = tmp_path / "rep"
    with Database(db_path) as d:
        index = write_report(d, run_id, out)
    text = index.read_text()
    imgs = re.findall(r"<img src='([^']+)'", text)
    # fill-regions: throughput and ratio plots; size-distributions: a table.
    assert len(imgs) == 2
    for name in imgs:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / name).stat().st_size > 10000
    assert sorted(p.name for p in out.glob("*.png")) == sorted(imgs)
    for needle in ("id='fill-regions'", "id='size-distributions'", "id='crashy'",
                   "nt-stores: zeros 3.00x faster in RAM", "memkit 5% faster", "distribution=rpc",
                   "killed by SIGSEGV", "Test CPU", "0xa0", "L2 up to 1 MiB", "the C table"):
        assert needle in text, needle


def test_report_command(tmp_path):
    db_path = tmp_path / "m.db"
    make_db(db_path)
    p = run_cli("report", "--db", db_path, "--out", tmp_path / "r")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "r" / "index.html").exists()
    p = run_cli("report", "--db", db_path, "--run", 99, "--out", tmp_path / "r")
    assert p.returncode == 1 and p.stderr.strip() == f"memkit: error: no run 99 in {db_path}"
