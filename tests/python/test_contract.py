# SPDX-License-Identifier: Apache-2.0
"""The contract between the C side and the Python side, each part written
once (docs/architecture.md, "The contract between C and Python"): the size
grammar's cases (tests/data/sizes.tsv, which the lab's C test reads too),
the records' schema (bench/lab/records.def) that a real run's records and
the Python readers hold to, and memkit tune's workloads, paths and tunables
as the library's tools print them (memkit-tunables)."""

from __future__ import annotations

import ast
import json
import subprocess

import pytest
from conftest import REPO, real_bench_dir

from memkit.results import records
from memkit.lab.sizes import fmt_size, parse_size

SIZES = REPO / "tests" / "data" / "sizes.tsv"


def size_cases() -> list[tuple[str, str, str]]:
    """(kind, a, b) of every case of the table, a quoted field unquoted."""
    out = []
    for line in SIZES.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        kind, a, b = line.split("\t")
        out.append((kind, a[1:-1] if len(a) >= 2 and a[0] == a[-1] == '"' else a, b))
    return out


def test_sizes_read_as_the_library_reads_them():
    cases = [(a, b) for kind, a, b in size_cases() if kind == "parse"]
    assert len(cases) >= 20
    for text, want in cases:
        # never is the library's no-threshold: no size where one is asked for
        expected = None if want in ("invalid", "never") else int(want)
        assert parse_size(text) == expected, f"{text!r} read as {parse_size(text)}, the library: {want}"


def test_sizes_shown_as_the_lab_shows_them():
    cases = [(a, b) for kind, a, b in size_cases() if kind == "show"]
    assert cases
    for n, want in cases:
        assert fmt_size(int(n)) == want


def test_every_case_is_of_a_known_kind():
    assert {kind for kind, _, _ in size_cases()} == {"parse", "show"}


# ---- the records' schema ----

@pytest.fixture(scope="module")
def schema():
    return records.schema(real_bench_dir() / "memkit-exp-memset-sizes")


@pytest.fixture(scope="module")
def real_records(tmp_path_factory):
    """A real run's records, small: two processes (process_samples), a
    baseline (ratios) and a ranking (the fastest verdict's data)."""
    out = tmp_path_factory.mktemp("records") / "run.jsonl"
    subprocess.run([str(real_bench_dir() / "memkit-exp-memset-sizes"), "max=8", "reps=2", "processes=2",
                    "--jsonl", str(out)], check=True, capture_output=True, timeout=300)
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_every_record_of_a_real_run_holds_to_the_schema(schema, real_records):
    assert schema["format"] == records.FORMAT
    for rec in real_records:
        assert records.problems(rec, schema) == [], rec
    kinds = [r["type"] for r in real_records]
    assert kinds[0] == "fingerprint" and kinds[-1] == "end" and "measurement" in kinds
    # the parts that only some records have were checked too
    assert any("process_samples" in r and "ratios" in r for r in real_records)
    assert any(isinstance(r.get("data"), dict) and r["data"]["points"] for r in real_records)


def test_the_check_refuses_what_the_schema_does_not_declare(schema, real_records):
    m = next(r for r in real_records if r["type"] == "measurement" and r.get("baseline"))
    assert any("speed" in p for p in records.problems(dict(m, speed=1.0), schema))
    assert records.problems({k: v for k, v in m.items() if k != "series"}, schema)
    assert records.problems(dict(m, samples=["fast"]), schema)
    assert records.problems(dict(m, baseline={"series": "glibc"}), schema)
    assert records.problems(dict(m, type="sample"), schema)
    v = next(r for r in real_records if isinstance(r.get("data"), dict))
    bad = dict(v, data=dict(v["data"], points=[dict(v["data"]["points"][0], winner="x")]))
    assert any("winner" in p for p in records.problems(bad, schema))


# The Python readers of the records: in each file, the names that hold a
# record (or a part of one) and the objects of records.def they may be.
READERS = {
    "python/memkit/results/records.py": {"rec": ("measurement", "verdict"), "baseline": ("baseline",)},
    "python/memkit/lab/experiments.py": {"rec": ("fingerprint", "measurement", "verdict", "end")},
    "python/memkit/lab/ranking.py": {"rk": ("ranking",), "p": ("ranking_point",), "v": ("verdict",)},
}


def keys_read(source: str, names: dict) -> set[tuple[str, str]]:
    """(name, key) of every NAME.get("key") and NAME["key"] in source."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and isinstance(node.func.value, ast.Name) and node.args and isinstance(node.args[0], ast.Constant)):
            name, key = node.func.value.id, node.args[0].value
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
              and isinstance(node.slice, ast.Constant)):
            name, key = node.value.id, node.slice.value
        else:
            continue
        if name in names and isinstance(key, str):
            found.add((name, key))
    return found


def undeclared_reads(source: str, names: dict, schema: dict) -> list[str]:
    objects = schema["objects"]
    return sorted(f"{name}[{key!r}]" for name, key in keys_read(source, names)
                  if key not in records.FORMAT1_FIELDS
                  and not any(key in objects[o]["fields"] for o in names[name]))


def test_python_reads_only_fields_the_schema_declares(schema):
    for path, names in READERS.items():
        source = (REPO / path).read_text()
        assert keys_read(source, names), f"{path}: no read of a record found: the names moved?"
        assert undeclared_reads(source, names, schema) == [], path


def test_the_reads_check_finds_an_undeclared_field(schema):
    src = "def f(rec, rk):\n    return rec.get('series'), rec['speed'], rk['points'], rk.get('winner')\n"
    names = {"rec": ("measurement",), "rk": ("ranking",)}
    assert undeclared_reads(src, names, schema) == ["rec['speed']", "rk['winner']"]


# ---- memkit tune's workloads, paths and tunables: the library's tables ----

@pytest.fixture(scope="module")
def library_tables():
    from memkit.lab import experiments
    return experiments.tunables(real_bench_dir())


def test_tune_times_the_workloads_the_tools_declare(library_tables):
    """src/diagnostics/workloads.def is the source (memkit-tune-experiment and
    memkit-tunables --paths are built from it); tune reads it from the
    library, in its order, and times each family's ops."""
    from memkit.tuning import catalogue
    declared = {w["op"]: (w["family"], w["words"]) for w in library_tables["workloads"]}
    paths = catalogue.Paths(real_bench_dir())
    assert list(paths.workloads.items()) == list(declared.items())
    assert paths.ops("memset") == ["set0", "set"] and paths.ops("memcpy") == ["copy", "copy3"]
    assert not hasattr(catalogue, "WORKLOADS")   # no second copy in Python


def test_tune_strategies_are_named_as_the_library_names_its_paths(library_tables):
    """A strategy is compared with the path the library takes by name
    (memkit-tunables --paths), so each plain strategy is one of its paths."""
    from memkit.tuning import catalogue
    for s in catalogue.STRATEGIES:
        assert s.name in library_tables["paths"][s.family], s


def test_tune_names_only_tunables_the_library_has(library_tables):
    from memkit.tuning import catalogue, for_program, level_choice
    names = {t["name"] for t in library_tables["tunables"]}
    used = {k for s in catalogue.STRATEGIES for k, _ in s.settings}
    used |= {k for ks in for_program.FAMILY_THRESHOLDS.values() for k in ks} | set(level_choice.LEVEL_TUNABLES)
    used |= set(level_choice.VARIANT_FUNCTIONS)   # memset, memcpy, memmove: each a variant tunable
    assert used and used <= names, used - names
