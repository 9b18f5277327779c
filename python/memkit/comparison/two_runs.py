# SPDX-License-Identifier: Apache-2.0
"""Two runs compared, as `memkit compare` shows it: the pair of runs and
comparison/compare.py's judgement of their shared measurements, rendered as
the report's lines or its JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass

from memkit.comparison import compare as cmp
from memkit.lab.fingerprint import changed_keys, differences
from memkit.terminal import printable


def fingerprint_banner(fa: dict, fb: dict) -> list[str]:
    loud, quiet = differences(fa or {}, fb or {})
    lines = []
    if loud:
        lines.append("!" * 78)
        lines.append("!!! THE MACHINE CHANGED BETWEEN THESE RUNS: " + "; ".join(loud))
        lines.append("!!! differences below may come from the machine, not from memkit")
        lines.append("!" * 78)
    if quiet:
        lines.append("note: also differs: " + "; ".join(quiet))
    return lines


MARKS = {"better": "better", "worse": "WORSE", "changed": "changed", "same": "within noise"}


def change_row(c: cmp.Change) -> str:
    mark = MARKS[c.direction]
    if not c.judged:
        mark = "not judged (short call, < 3 processes)"
    interval = "" if math.isnan(c.low) else f" [{c.low:.3f} .. {c.high:.3f}]"
    if c.evidence == "paired":
        against = f" relative to {c.baseline}"
        samples = "paired speed-ups"
    else:
        # judged against the shift: its interval is the one that decides
        against = (f" (x{c.ratio / c.shift:.3f} [{c.low / c.shift:.3f} .. {c.high / c.shift:.3f}] vs the shift)"
                   if abs(c.shift - 1) > 0.005 else "")
        samples = f"{c.basis}s"
    return (f"  {c.series:<16} {cmp.params_text(c.params):<26} {c.metric:<18} "
            f"{c.a:10.4g} -> {c.b:10.4g} {c.unit:<6} x{c.ratio:.3f}{interval}{against} q={c.q:.2g} "
            f"({samples}{f', min {100 * c.min_effect:.0f}%' if c.judged else ''})  {mark}")


UNJUDGED_STATUS = 3
NOISE_FROM = {"history": "the earlier runs of this grid on this host",
              "this pair": "the other series around the same sizes in these two runs",
              "both": "the earlier runs of this grid where there were enough, else these two runs"}


def gate_verdict(worse: int, unjudged: int, compared: int, bands: tuple = ()) -> str:
    """The regression gate's verdict in one line; bands: the findings of
    the bands flagged worse, named."""
    if not compared:   # a gate that compared nothing has not passed
        return "nothing compared: no measurement is in both runs (exit 1)"
    if worse:
        return f"regression: {worse} flagged worse" + "".join(f"; {b}" for b in bands)
    if unjudged:
        return (f"no regression among the judged, but {unjudged} of {compared} measurements could not be "
                f"judged (exit {UNJUDGED_STATUS}): run more processes (`processes=3`) or the default grid")
    return f"no regression: all {compared} measurements judged, alone or in their series"


def _floor_note(floor) -> str:
    """Where a floor from identical runs set the minimum, that it did."""
    return f": {floor.text}" if floor is not None and floor.largest else ""


def series_row(s: cmp.SeriesChange) -> str:
    mark = MARKS[s.direction]
    return (f"  {s.series:<16} {cmp.params_text(s.params):<16} as a whole, {s.span}: x{s.ratio:.3f} "
            f"[{s.low:.3f} .. {s.high:.3f}] relative to {s.baseline}, {s.moved} of {len(s.members)} sizes "
            f"that way, q={s.q:.2g} (Hodges-Lehmann estimate of the paired changes net of the baseline's move, "
            f"signed-rank interval, min {100 * s.min_effect:.0f}%{_floor_note(s.floor)})  {mark}")


def band_row(b: cmp.Band) -> str:
    mark = MARKS[b.direction]
    return (f"  {b.series:<16} {cmp.params_text(b.params):<16} band {b.span}: {b.finding}, median "
            f"x{b.ratio:.3f}, q={b.q:.2g} (adjacent sizes leaning together beyond their between-run noise, "
            f"min {100 * b.min_effect:.0f}%{_floor_note(b.floor)})  {mark}")


def busy_notes(a: dict, b: dict) -> list[str]:
    return ([f"note: run {r['id']} ran on a busy machine ({r['busy']})" for r in (a, b) if r.get("busy")] +
            [f"note: run {r['id']}: {r['damaged']}" for r in (a, b) if r.get("damaged")])


@dataclass
class RunPairComparison:
    a: dict            # the runs' rows, the older first
    b: dict
    notes: list        # how the runs were picked
    kinds: tuple       # whole_program.run_kind of each
    why_not: str       # why no measurement is in both, if none is
    result: cmp.Comparison

    @property
    def busy(self) -> bool:
        return bool(self.a.get("busy") or self.b.get("busy"))

    def gate(self) -> str:
        return gate_verdict(self.result.worse, len(self.result.unjudged), len(self.result.changes),
                            tuple(b.finding for b in self.result.flagged_bands if b.direction == "worse"))

    def as_json(self, gate: bool) -> dict:
        a, b, result = self.a, self.b, self.result
        return {
            "run_a": a["id"], "run_b": b["id"], "host_a": a["hostname"], "host_b": b["hostname"],
            "notes": [n.removeprefix("note: ") for n in self.notes] +
                     ([f"no measurement is in both runs: {self.why_not}"] if not result.changes else []),
            "machine_changed": changed_keys(a["fingerprint"] or {}, b["fingerprint"] or {}),
            "machine_changes": [line for part in differences(a["fingerprint"] or {}, b["fingerprint"] or {})
                                for line in part],
            "compared": len(result.changes), "not_judged": len(result.unjudged),
            "series_judged": len(result.series),
            "only_a": result.only_a, "only_b": result.only_b,
            "experiment_shifts": dict(result.shifts),
            "experiment_scatter": dict(result.scatter),
            "paired_scatter": dict(result.paired_scatter),
            "paired": result.paired,
            "busy": {str(r["id"]): r["busy"] for r in (a, b) if r.get("busy")},
            "noise_from": result.noise_source,
            "changes": [c.as_json() for c in result.flagged] + [s.as_json() for s in result.flagged_series] +
                       [b.as_json() for b in result.flagged_bands],
            "gate": self.gate() if gate else None,
        }

    def lines(self, show_all: bool, gate: bool) -> list[str]:
        """The report; show_all: every measurement, not the flagged alone;
        gate: the regression gate's verdict last."""
        lines = self._header_lines()
        if not self.result.changes:
            lines.append(f"no measurement is in both runs: {self.why_not}")
            return lines + (["gate: " + self.gate()] if gate else [])
        for s in cmp.summarize(self.result.changes):
            lines += self._experiment_lines(s, show_all)
        lines += self._closing_lines()
        if gate:
            lines.append("gate: " + self.gate())
        return lines

    def _header_lines(self) -> list[str]:
        a, b = self.a, self.b
        lines = [f"run {a['id']} of {printable(a['hostname'] or '?')} ({a['started_at']}{', quick' if a['quick'] else ''}) -> "
                 f"run {b['id']} of {printable(b['hostname'] or '?')} ({b['started_at']}{', quick' if b['quick'] else ''})"]
        lines += self.notes + fingerprint_banner(a["fingerprint"], b["fingerprint"]) + busy_notes(a, b)
        if a["quick"] != b["quick"] and self.kinds[0][0] == self.kinds[1][0] == "lab":   # a try has no grid
            lines.append("note: one run used the quick grid and the other the default one: few measurements match")
        return lines

    def _experiment_lines(self, s, show_all: bool) -> list[str]:
        result = self.result
        gm = "-" if math.isnan(s.geomean_ratio) else f"{s.geomean_ratio:.3f}"
        lines = [f"\n{s.experiment}: {s.compared} measurements in both; flagged: {s.better} better, "
                 f"{s.worse} worse, {s.changed} changed; geometric mean speed-up B/A {gm}"]
        shift = result.shifts.get(s.experiment)
        if shift and abs(math.log(shift)) > math.log1p(cmp.MIN_EFFECT):
            lines.append(f"  the experiment as a whole moved x{shift:.3f} (B/A, median over its measurements): "
                         f"the machine, most likely; absolute times are judged against the shift of the "
                         f"measurements timed with them")
        lines += [series_row(sc) for sc in result.series
                  if sc.experiment == s.experiment and (show_all or sc.flagged)]
        lines += [band_row(b) for b in result.bands if b.experiment == s.experiment and (show_all or b.flagged)]
        shown = [c for c in result.changes if c.experiment == s.experiment and (show_all or c.flagged)]
        shown.sort(key=lambda c: -abs(math.log(c.ratio)))
        return lines + [change_row(c) for c in shown]

    def _closing_lines(self) -> list[str]:
        result, busy = self.result, self.busy
        lines = []
        if busy:
            lines.append(f"\na run was made on a busy machine: every minimum effect is {cmp.BUSY_FACTOR:g}x larger")
        alone = [c for c in result.changes if not c.judged]
        if alone:
            in_series = result.in_series
            lines.append(
                f"\n{len(alone)} measurements of calls under {cmp.SHORT_CALL_NS:.0f} ns were not judged alone: measured in "
                f"fewer than {cmp.PROCESSES_MIN} processes, their placement noise between processes is larger than "
                f"a change; {sum(c.key in in_series for c in alone)} of them count in the {len(result.series)} series judged as a "
                f"whole (a series is flagged when it moved by more than {100 * cmp.SERIES_EFFECT:.0f}%, or than identical "
                "runs moved it by where they moved it further, and its interval leaves out 1)")
        lines.append(
            f"\n{len(result.changes)} measurements compared (one headline metric each; {result.paired} on their paired "
            f"speed-ups over a baseline timed in the same rounds, the rest on their absolute samples), "
            f"{len(result.flagged)} flagged, {len(result.flagged_bands)} bands of adjacent sizes and {len(result.flagged_series)} series as a whole ({result.worse} worse); the pairs' between-run noise read from {NOISE_FROM[result.noise_source]}; a change is flagged when its "
            f"interval leaves out 1 (or the shift it is judged against), its bootstrap p-value, corrected for {len(result.changes)} comparisons (Benjamini-Hochberg, FDR "
            f"{cmp.FDR:g}), says so and it exceeds {100 * cmp.MIN_EFFECT:.0f}% (per-process samples), "
            f"{100 * cmp.PLACEMENT_EFFECT:.0f}% (per-round samples only){f' (x{cmp.BUSY_FACTOR:g}: busy)' if busy else ''}")
        if result.only_a or result.only_b:
            lines.append(f"{result.only_a} measurements only in run {self.a['id']}, {result.only_b} only in run {self.b['id']}")
        return lines
