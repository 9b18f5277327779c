# SPDX-License-Identifier: Apache-2.0
"""The contract between the C side and the Python side, each part written
once (docs/architecture.md, "The contract between C and Python"): the size
grammar's cases (tests/data/sizes.tsv, which the lab's C test reads too)."""

from __future__ import annotations

from conftest import REPO

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
