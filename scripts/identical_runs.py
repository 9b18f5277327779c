#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes python/memkit/judging/identical-runs.json: how far each whole series
moved between the identical pairs of runs recorded in tests/data/runs/ (every
CPU memkit has seen), the reference a fresh database's series are judged
against (memkit.comparison.identical_runs).  Run it after adding a recording;
tests/python/test_identical_runs.py fails while the file and the recordings
disagree.

    scripts/identical_runs.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from memkit.comparison import identical_runs  # noqa: E402


def text() -> str:
    return json.dumps(identical_runs.derive(REPO / "tests" / "data" / "runs"), indent=1, sort_keys=True) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the file differs from the recordings, write nothing")
    args = ap.parse_args()
    want = text()
    if args.check:
        same = identical_runs.REFERENCE.is_file() and identical_runs.REFERENCE.read_text() == want
        print(f"{identical_runs.REFERENCE}: {'agrees with' if same else 'differs from'} the recordings")
        return 0 if same else 1
    identical_runs.REFERENCE.write_text(want)
    print(f"wrote {identical_runs.REFERENCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
