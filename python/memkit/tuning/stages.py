# SPDX-License-Identifier: Apache-2.0
"""The timing stages of `memkit tune`: a family's strategies at the sizes of
its grid (memkit-tune-experiment, one interleave), and the variants and
level thresholds over the levels (memkit-exp-size-distributions with each
candidate forced, scored by level_choice), with the method line that says
how.  The command (memkit.commands.tune) runs them in order and writes
what they chose."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError
from memkit.judging import between_batches, stats
from memkit.lab import experiments as lab
from memkit.lab.fingerprint import runnable_variants
from memkit.lab.sizes import fmt_size
from memkit.programs import recording
from memkit.tuning import catalogue, level_choice, reproduce, tune, tune_experiment


def method_text(s: dict, grid: list[int], program: bool = False) -> str:
    need = stats.sign_test_wins_needed(s["rounds"], tune.ALPHA)
    confirmed = ("" if program else
                 f"; every move proposed so (or at p<={reproduce.PROPOSE_ALPHA}) is written only if "
                 f"{between_batches.BATCHES} independent batches against the defaults all find it faster "
                 f"beyond their spread (one-sided t test p<={between_batches.BATCH_ALPHA})")
    rule = (f"a threshold moves off the built-in default only where another strategy was faster in "
            f"at least {need}/{s['rounds']} paired rounds (one-sided sign test p<={tune.ALPHA}) and by "
            f"at least {tune.MARGIN:.0%} at the median{confirmed}" if need is not None else
            f"{s['rounds']} rounds are too few for the sign test to reach p<={tune.ALPHA}: "
            "no threshold can move")
    what = "mk_memset and mk_memcpy" if program else "mk_memset, mk_memcpy and mk_parallel_*"
    return (f"memkit's own {what}, each strategy's MEMKIT_TUNABLES settings put in force in "
            f"turn in one process; {s['rounds']} interleaved rounds over {s['processes']} "
            f"process(es) per size band; "
            + (f"{len(grid)} sizes {fmt_size(grid[0])}..{fmt_size(grid[-1])}; {rule}" if grid else
               "no size within reach of a threshold"))


def plan(configs: dict, cells: list, s: dict) -> tune_experiment.Plan:
    return tune_experiment.Plan(configs, cells, rounds=s["per_process"], processes=s["processes"],
                                batch_ns=s["batch_ns"])


def measure_family(timer, family, grid, s, cpus, progress, step, paths, defaults=None) -> dict:
    ops = paths.ops(family)
    strats = catalogue.strategies(family, cpus, defaults)
    if len(strats) < 2 or not grid:
        print(f"== {step} {family}: nothing to compare on this machine", flush=True)
        return {}
    p = plan({catalogue.candidate_name(st): st.tunables() for st in strats},
             [(op, size) for op in ops for size in grid], s)
    print(f"== {step} {family}: {', '.join(st.says for st in strats)}; "
          f"{len(p.cells)} cells x {len(strats)} strategies x {p.total_rounds} rounds", flush=True)
    times = tune_experiment.measure(timer, p, on_progress=lambda pr: progress.update(pr, f"{family} "))
    progress.clear()
    return times


SIZES_EXPERIMENT = lab.PREFIX + "size-distributions"
# (rounds per process, processes) of the level stages: the experiment's own
# defaults; a variant's code and data placement moves small calls between
# processes, so --quick (one process) does not choose there.
VARIANT_RUNS = (11, 3)
# each independent batch confirming the small-size design (commands.tune): one process
CONFIRM_RUNS = (11, 1)


def measure_levels(timer: Path, quick: bool, progress, step: str, what: str, candidates: dict,
                   functions=level_choice.VARIANT_FUNCTIONS, data: Optional[str] = None,
                   over: Optional[dict] = None, runs: tuple = VARIANT_RUNS) -> list[level_choice.LevelScore]:
    """Each candidate (name or size -> its MEMKIT_TUNABLES) in force in turn,
    by memkit-exp-size-distributions beside the timing program, scored for
    `functions`: on the production distributions at every level of
    level_choice.VARIANT_LEVELS, or, for a recording (data: its directory; over:
    function -> the working sets its replay runs at), on the program's own
    sizes at its own working sets."""
    program = timer.parent / SIZES_EXPERIMENT
    if quick:
        print(f"== {step} {what}: not measured with --quick (one process cannot tell a design "
              "from where its code landed)", flush=True)
        return []
    if not os.access(program, os.X_OK):
        print(f"== {step} {what}: not measured ({program} is not there)", flush=True)
        return []
    rounds, processes = runs
    over = {fn: lvs for fn, lvs in over.items() if fn in functions} if over else None
    if over:
        levels = sorted({lv for lvs in over.values() for lv in lvs})
        on = (f"the program's own sizes at its working sets ("
              + ", ".join(f"{fn} {'/'.join(lvs)}" for fn, lvs in over.items()) + ")")
    else:
        levels = list(level_choice.VARIANT_LEVELS)
        on = f"the production size distributions at {', '.join(level_choice.VARIANT_LEVELS)}"
    print(f"== {step} {what}: {', '.join(map(tune.fmt_candidate, candidates))} on {on} "
          f"({rounds} rounds x {processes} process(es) each)", flush=True)
    exp = lab.describe(program)
    args = ["ws=" + ",".join(levels), f"rounds={rounds}", f"processes={processes}"]
    if data:   # replayed as `memkit record` replays it (each function's batch bounded)
        args = recording.replay_arguments(args + [f"data={data}"], None)
    if len(functions) == 1:   # the distribution files are named by their function
        args.append("only=" + recording.FILES[functions[0]].removesuffix(".csv"))
    scores = []
    for cand, forced in candidates.items():
        label = tune.fmt_candidate(cand)
        res = lab.run_experiment(exp, False, args, env=tune_experiment.clean_env(MEMKIT_TUNABLES=forced),
                                 on_progress=lambda pr, label=label: progress.update(pr, f"{what} {label} "))
        progress.clear()
        if res.status != "ok":
            raise MemkitError(f"{SIZES_EXPERIMENT} with {forced} {res.status}: {res.error}")
        scores += level_choice.candidate_scores(cand, res.measurements, over, functions)
    return scores


def forced_variants(variants: dict) -> str:
    return ":".join(f"{fn}={v}" for fn, v in variants.items())


def measure_variants(timer, fp, quick, progress, step, data=None, over=None) -> list[level_choice.LevelScore]:
    """Each variant this CPU runs, forced for memset, memcpy and memmove."""
    cands = {v: forced_variants({fn: v for fn in level_choice.VARIANT_FUNCTIONS})
             for v in runnable_variants(fp.get("isa") or {})}
    return measure_levels(timer, quick, progress, step, "variant", cands, data=data, over=over)


def measure_thresholds(timer, quick, progress, step, variants: dict, incumbents: dict,
                       data=None, over=None) -> dict:
    """tunable -> the scores of its level_choice.LEVEL_TUNABLES candidates, with the
    chosen variants forced."""
    out = {}
    for name, (fn, _) in level_choice.LEVEL_TUNABLES.items():
        if over is not None and fn not in over:
            continue
        cands = {c: forced_variants(variants) + f":{name}={catalogue.NEVER if c is None else c}"
                 for c in level_choice.level_candidates(name, incumbents.get(name))}
        out[name] = measure_levels(timer, quick, progress, step, f"{name} over the levels", cands,
                                   (fn,), data, over)
    return out


