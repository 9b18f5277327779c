# SPDX-License-Identifier: Apache-2.0
"""The earlier runs of the same grid on the same host: what identical runs
did there is the noise compare judges a pair's changes against (docs/judging.md,
"The noise between two runs")."""

from __future__ import annotations

from memkit.judging.judge import NOISE_HISTORY_RUNS

# What may differ between two runs that count as the same machine: memkit's
# own version (a CI gate compares commits), never the machine or its settings.
CODE_KEYS = ("memkit_commit", "memkit_version")


def same_machine(fa: dict, fb: dict) -> bool:
    def machine(fp: dict) -> dict:
        return {k: v for k, v in (fp or {}).items() if k not in CODE_KEYS}
    return bool(fa) and machine(fa) == machine(fb)


def earlier_runs(db, runs: list[dict], a: dict, b: dict) -> list[list[dict]]:
    """The measurements of the latest NOISE_HISTORY_RUNS runs up to run A (A
    included, B not) of A's host, machine and grid (quick or not), oldest first."""
    same = [r for r in runs if r["id"] <= a["id"] and r["id"] != b["id"] and r["hostname"] == a["hostname"]
            and bool(r["quick"]) == bool(a["quick"])
            and same_machine(r["fingerprint"], a["fingerprint"])]
    return [db.measurements(r["id"]) for r in same[-NOISE_HISTORY_RUNS:]]
