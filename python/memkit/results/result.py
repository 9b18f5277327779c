# SPDX-License-Identifier: Apache-2.0
"""What one experiment produced (Result), and where it stands while it runs
(Progress, from its "progress:" lines): the lab makes them, the store keeps
a Result, the terminal shows a Progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class Progress:
    """One "progress: NAME i/N SECS what" line of an experiment, read."""
    experiment: str
    done: int
    total: int
    seconds: float
    what: str


@dataclass
class Result:
    """What one experiment produced; status "ok", "failed" or "crashed"."""
    name: str
    seed: str
    description: str
    status: str
    seconds: float
    args: list[str] = field(default_factory=list)
    fingerprint: Optional[dict] = None
    measurements: list[dict] = field(default_factory=list)
    verdicts: list[dict] = field(default_factory=list)   # {"text", "kind"} (memkit.results.records)
    output: str = ""
    error: str = ""
