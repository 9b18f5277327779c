# SPDX-License-Identifier: Apache-2.0
"""What makes timings noisy on this machine (`memkit system-check`, after
pyperf's `system show`): each source as the fingerprint records it (the
lab's C core reads the machine once, for every run: bench/lab/machine.c)
and the load measured now, judged ok, noisy or unknown, with what to do.
Then glibc's own thresholds beside the caches memkit measured
(memkit.lab.glibc), judged ok or costly: a costly one slows every program
on glibc, the lab's glibc baseline included, until GLIBC_TUNABLES corrects it."""

from __future__ import annotations

from dataclasses import dataclass

from memkit.lab import glibc
from memkit.lab.load import Load

OK, NOISY, UNKNOWN, COSTLY = "ok", "NOISY", "unknown", "COSTLY"


@dataclass
class Finding:
    what: str
    verdict: str    # OK, NOISY, UNKNOWN, COSTLY
    state: str      # as the machine says it
    advice: str = ""

    def as_json(self) -> dict:
        return {"what": self.what, "verdict": self.verdict.lower(), "state": self.state, "advice": self.advice}


def _thp_mode(text: str) -> str:
    """"always [madvise] never" -> "madvise"."""
    if "[" in text and "]" in text:
        return text[text.index("[") + 1:text.index("]")]
    return text


def findings(fp: dict, now: Load) -> list[Finding]:
    out = []
    gov = str(fp.get("governor", "unknown"))
    if gov == "performance":
        out.append(Finding("frequency governor", OK, gov))
    elif gov == "unknown":
        out.append(Finding("frequency governor", UNKNOWN, "not exposed",
                           "no cpufreq driver (usual in a VM: the host sets the clock)"))
    else:
        out.append(Finding("frequency governor", NOISY, gov,
                           "the clock follows the load: `sudo cpupower frequency-set -g performance`"))
    boost = str(fp.get("boost", "unknown"))
    if boost == "off":
        out.append(Finding("turbo/boost", OK, "off"))
    elif boost == "on":
        out.append(Finding("turbo/boost", NOISY, "on",
                           "the clock varies with temperature and the other cores' load: off for stable "
                           "numbers (/sys/devices/system/cpu/cpufreq/boost, intel_pstate/no_turbo)"))
    else:
        out.append(Finding("turbo/boost", UNKNOWN, "not exposed", "no boost control here (a VM?)"))
    smt = str(fp.get("smt", "unknown"))
    if smt.startswith("on") and "no sibling" not in smt:
        out.append(Finding("SMT", NOISY, smt, "a sibling hardware thread shares the timing CPU's core: "
                                              "keep it idle, or `echo off > /sys/devices/system/cpu/smt/control`"))
    elif smt == "unknown":
        out.append(Finding("SMT", UNKNOWN, smt))
    else:
        out.append(Finding("SMT", OK, smt))
    thp = _thp_mode(str(fp.get("thp", "unknown")))
    if thp == "unknown":
        out.append(Finding("transparent huge pages", UNKNOWN, thp))
    else:
        out.append(Finding("transparent huge pages", NOISY if thp == "always" else OK, thp,
                           "large buffers get huge pages when the kernel finds them: page-fault and fill "
                           "times vary between runs (madvise: only where asked)" if thp == "always" else ""))
    hv = str(fp.get("hypervisor", "unknown"))
    if hv == "none":
        out.append(Finding("virtual machine", OK, "no"))
    elif hv == "unknown":
        out.append(Finding("virtual machine", UNKNOWN, hv))
    else:
        steal = "" if now.steal_pct is None else f"; {now.steal_pct:.1f}% stolen now"
        out.append(Finding("virtual machine", NOISY, f"yes ({hv}{steal})",
                           "the host may run other guests on these CPUs: compare runs made alike"))
    out.append(Finding("machine load", NOISY if now.busy else OK, now.describe(),
                       "other work competes for the CPUs and memory: run when it is done" if now.busy else ""))
    cpu = fp.get("timing_cpu")
    if isinstance(cpu, int) and cpu >= 0:
        out.append(Finding("timing CPU", OK, f"CPU {cpu}",
                           "single-threaded experiments pin each process to it"))
    else:
        out.append(Finding("timing CPU", UNKNOWN, "none", "the CPUs this process may use are unknown: "
                                                          "experiments run unpinned"))
    return out + glibc_findings(fp)


def glibc_findings(fp: dict) -> list[Finding]:
    """glibc's thresholds as memkit.lab.glibc judges them; unknown when the
    fingerprint has no view of glibc (not glibc, or before 2.33)."""
    view = fp.get(glibc.KEY)
    if not isinstance(view, dict):
        return [Finding("glibc thresholds", UNKNOWN, str(view or "not recorded"))]
    verdicts = {True: COSTLY, False: OK, None: UNKNOWN}
    return [Finding(f"glibc {c.what}", verdicts[c.disagrees], c.state,
                    f"{c.cost}; corrected by GLIBC_TUNABLES={c.setting}" if c.disagrees else "")
            for c in glibc.checks(fp)]


def text(items: list[Finding], fp: dict) -> list[str]:
    width = max(len(f.what) for f in items)
    lines = []
    for f in items:
        lines.append(f"{f.verdict:<7} {f.what:<{width}}  {f.state}")
        if f.advice and f.verdict != OK:
            lines.append(f"{'':<7} {'':<{width}}  {f.advice}")
    costly = [c for c in glibc.checks(fp) if c.disagrees]
    if costly:
        lines.append(f"glibc's {' and '.join(c.what for c in costly)} threshold{'s' if len(costly) > 1 else ''} "
                     f"cost here: export {glibc.tunables_setting(costly)} (for every program started with it)")
    noisy = [f.what for f in items if f.verdict == NOISY]
    lines.append(f"{len(noisy)} source(s) of noise: {', '.join(noisy)}" if noisy else
                 "nothing found that makes timings noisy")
    return lines
