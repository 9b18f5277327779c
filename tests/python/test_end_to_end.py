"""The real fill-regions experiment through the real command line."""

from conftest import real_bench_dir, run_cli
from memkit.db import Database

METHODS = {"vector-loop", "rep-stosb", "nt-stores", "glibc", "memkit"}


def test_run_quick_fill_regions_then_report(tmp_path):
    build = real_bench_dir()
    db = tmp_path / "m.db"
    p = run_cli("list", "--build", build)
    assert p.returncode == 0 and "fill-regions" in p.stdout
    p = run_cli("run", "--quick", "--build", build, "--db", db, "fill-regions", timeout=120)
    assert p.returncode == 0, p.stderr
    assert "fill-regions: ok" in p.stdout and "verdict:" in p.stdout
    with Database(db) as d:
        (run,) = d.runs()
        assert run["fingerprint"]["cache"]["l1d"] > 0 and run["fingerprint"]["microcode"]
        ms = d.measurements(run["id"], "fill-regions")
        assert {m["series"] for m in ms} == METHODS
        assert {m["params"]["value"] for m in ms} == {0, 90}
        sizes = sorted({m["params"]["size"] for m in ms})
        assert sizes[0] == 1024 and sizes[-1] >= 64 << 20 and len(sizes) >= 10
        for m in ms:
            assert m["unit"] == "GB/s" and m["value"] > 0 and m["min"] <= m["value"] <= m["max"]
            assert (m["ratio"] is not None) == (m["params"]["value"] == 0)
        verdicts = d.verdicts(run["id"])
        for method in METHODS:
            assert any(v.startswith(method + ":") for v in verdicts), method
        assert "zero fills" in verdicts[-1]
    p = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert p.returncode == 0, p.stderr
    assert len(list((tmp_path / "rep").glob("fill-regions-*.png"))) == 2
    p = run_cli("env", "--build", build)
    assert p.returncode == 0 and "microcode" in p.stdout
