# SPDX-License-Identifier: Apache-2.0
"""What one `memkit tune` decided, and its lines: the table of tunables,
the moves a recording's calls weighed, the closing notes once the profile
is written.  The command measures; this object says what came of it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class TuneOutcome:
    choices: list = field(default_factory=list)      # tune.Choice, every tunable decided
    measured: dict = field(default_factory=dict)     # family -> its evidence record
    decisions: list = field(default_factory=list)    # evidence.decision_record rows
    weighed: list = field(default_factory=list)      # for a program: each move against its calls
    scores: list = field(default_factory=list)       # level_choice.LevelScore of the variants
    level_scores: dict = field(default_factory=dict)  # the thresholds weighed over the levels

    @property
    def moved(self) -> int:
        return sum(c.moved for c in self.choices)

    def weighed_lines(self) -> list[str]:
        return (["", "weighed by the recording's calls (a threshold moves only if it saves time on them):"]
                + [f"  {line}" for line in self.weighed or ["no threshold moved on the measured sizes"]])

    def table_lines(self) -> list[str]:
        lines = ["", f"{'tunable':<22} {'default':>10} {'tuned':>10}  why"]
        for c in self.choices:
            tuned = c.show(c.value) if c.moved else "(default)"
            lines.append(f"{c.name:<22} {c.show(c.default):>10} {tuned:>10}  {c.why}")
        return lines

    def written_lines(self, out: Path, program: list[str] | None) -> list[str]:
        """After the profile is written; program: the recorded command, under --for."""
        lines = ["", f"wrote {out} ({self.moved} setting(s) off the defaults); libmemkit loads it at start-up "
                 "(MEMKIT_TUNABLES still overrides it)."]
        if program is not None and not self.moved:
            lines.append("it changes nothing for this program: memkit runs its calls as the defaults do.")
        elif program is not None:
            lines += ["check it on the program:",
                      f"  memkit try --profile {shlex.quote(str(out))} -- {shlex.join(program or ['PROGRAM'])}"]
        else:
            lines.append("`memkit tune --check` measures it against the defaults.")
        return lines
