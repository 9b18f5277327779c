# SPDX-License-Identifier: Apache-2.0
"""memkit tune: time memkit's own paths under each strategy (its
MEMKIT_TUNABLES settings put in force in turn, the lab's interleave), move a threshold off the
built-in table only with a stated confidence, write the profile the library
reads.  --check: the profile against the defaults, on sizes between the
tuning grid's, and where it helped or hurt.  --glibc: the C library's own
thresholds instead (tuning/glibc_tune.py)."""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from pathlib import Path
from typing import Optional

from memkit.commands._common import add_build_option, at_least, given
from memkit.errors import MemkitError, UsageError
from memkit.judging import between_batches, stats
from memkit.lab import experiments as lab
from memkit.lab import glibc, load, machine
from memkit.lab.sizes import fmt_size, size_arg
from memkit.programs import recording
from memkit.store.outdir import check_target, check_writable
from memkit.terminal import ProgressLine
from memkit.tuning import (catalogue, evidence, for_program, glibc_tune, level_choice, profile_file, reproduce, stages,
                           tune, tune_experiment)
from memkit.tuning.outcome import TuneOutcome

NAME = "tune"
HELP = ("measure memkit's own thresholds on this machine and write the profile libmemkit reads "
        "(--glibc: glibc's own, as a GLIBC_TUNABLES line)")

# (per-octave sizes, rounds in all, processes they are spread over, batch length in ns)
FULL = dict(per_octave=2, rounds=12, processes=3, batch_ns=7e5)
QUICK = dict(per_octave=1, rounds=7, processes=1, batch_ns=1e5)


def add_arguments(p):
    p.add_argument("--quick", action="store_true",
                   help="a coarse grid, 7 rounds in one process (seconds; a rough profile)")
    p.add_argument("--check", action="store_true",
                   help="measure the profile against the built-in defaults and say where it helped "
                        "or hurt (writes nothing)")
    p.add_argument("--out", metavar="PATH", type=given("a file path"),
                   help="the profile to write (or --check): a new path or a profile memkit wrote, never "
                        "another file, a link or a device (default: $MEMKIT_PROFILE, else "
                        "$XDG_CONFIG_HOME/memkit/profile, else ~/.config/memkit/profile); with --glibc, "
                        "the directory of the line and its evidence (default: that profile's directory)")
    p.add_argument("--dry-run", action="store_true", help="measure and explain, write no profile")
    p.add_argument("--evidence", metavar="FILE", type=given("a file path"),
                   help="also write what was measured (the CPU, the rule, every cell's per-round times, "
                        "every pick and decision) as one JSON file (docs/evidence.md); with --dry-run too; with "
                        "--glibc, glibc's (default: beside the line)")
    p.add_argument("--for", dest="for_recording", metavar="DIR", type=given("a directory"),
                   help="tune for one program: time only the sizes its `memkit record` directory DIR "
                        "calls, keep a threshold move only if it saves time on those calls, and write "
                        "the profile to DIR/profile (unless --out); with --glibc, glibc's line to "
                        "DIR/glibc-tunables")
    p.add_argument("--glibc", action="store_true",
                   help="tune the C library instead: glibc's own x86_non_temporal_threshold, "
                        "x86_rep_movsb_threshold and x86_rep_stosb_threshold by the same rule and "
                        "confirmation, each strategy a process under its GLIBC_TUNABLES; prints the "
                        "GLIBC_TUNABLES= line and writes it to DIR/glibc-tunables (--out DIR; default: "
                        "the profile's directory; --for DIR: the recording's), with its evidence beside it (or "
                        "at --evidence FILE); non-temporal copies timed into a cold destination, copied alone "
                        "and read right after, rep movsb on aligned and misaligned copies, and the trade said "
                        "where the answer depends on the program")
    p.add_argument("--apply", action="store_true",
                   help="with --glibc: measure nothing; print how to give the line it wrote (DIR/glibc-tunables of "
                        "--for DIR or --out DIR, else the profile's directory) to one program, a shell, a systemd "
                        "service and a container, and that it reaches every program started with it")
    p.add_argument("--rounds", type=at_least(2, "rounds"), metavar="N",
                   help="interleaved rounds (default 12, --quick 7)")
    p.add_argument("--min-size", metavar="SIZE", help="smallest size timed (default 1K, --quick 16K)")
    p.add_argument("--max-size", metavar="SIZE",
                   help="largest size timed (default 4x the L3 cache, 16M..256M; --quick 4M)")
    p.add_argument("--timer", metavar="PATH", help="the timing program (default: the build's "
                   f"bench/{tune_experiment.PROGRAM})")
    add_build_option(p)


def settings(args, fp: dict) -> dict:
    s = dict(QUICK if args.quick else FULL)
    l3 = int((fp.get("cache") or {}).get("l3") or 32 << 20)
    big = 1 << max(24, min(28, (4 * l3 - 1).bit_length()))
    s["lo"] = size_arg(args.min_size) if args.min_size else (16 << 10 if args.quick else 1 << 10)
    s["hi"] = size_arg(args.max_size) if args.max_size else (4 << 20 if args.quick else big)
    if args.rounds is not None:
        s["rounds"] = args.rounds
    if s["lo"] < 1:
        raise UsageError(f"--min-size {args.min_size}: the smallest size timed is 1 byte or more")
    if s["hi"] < s["lo"]:
        raise UsageError(f"--min-size {fmt_size(s['lo'])} is above --max-size {fmt_size(s['hi'])}")
    # the rounds spread over the processes, the same number in each
    s["processes"] = min(s["processes"], s["rounds"] // 2)
    s["per_process"] = -(-s["rounds"] // s["processes"])
    s["rounds"] = s["per_process"] * s["processes"]
    return s


def recorded_levels(summary: dict) -> dict:
    """function -> {working set its replay runs at: the share of its calls
    there} (recording.function_ws), for the functions the program calls: the
    levels that count for the program."""
    calls = summary.get("calls") or {}
    return {fn: shares for fn, shares in recording.function_ws(summary).items() if calls.get(fn)}


def describe_picks(label: str, picks: list[tune.Pick]) -> str:
    """"loop 1 KiB..24 MiB, nt 32 MiB..128 MiB" and whether it is the default's."""
    runs = []
    for p in picks:
        if runs and runs[-1][0] == p.chosen:
            runs[-1][2] = p.size
        else:
            runs.append([p.chosen, p.size, p.size])
    text = ", ".join(f"{n} {fmt_size(a)}" + (f"..{fmt_size(b)}" if b != a else "") for n, a, b in runs)
    moved = sum(p.chosen != p.default for p in picks)
    return f"  {label:<28} {text}" + (f"   ({moved} size(s) off the default)" if moved else "   (= default)")


def load_recording(d: Path) -> tuple[dict, dict]:
    """(summary.json, function -> {size: probability}) of a `memkit record` directory."""
    if not recording.is_recording(d):
        raise MemkitError(f"--for {d}: not a `memkit record` directory (no summary.json and size files)")
    summary = recording.load_summary(d)
    dists = {op: recording.read_distribution(d / f) for op, f in recording.FILES.items() if (d / f).is_file()}
    return summary, dists


def plan_for(args, defaults: dict) -> tuple[dict, for_program.ForPlan]:
    """The recording's summary and what to time for it; prints which sizes and why."""
    summary, dists = load_recording(Path(args.for_recording))
    lo = size_arg(args.min_size) if args.min_size else 1 << 10
    hi = size_arg(args.max_size) if args.max_size else None
    plan = for_program.plan_for(dists, summary.get("calls") or {}, defaults, lo, hi)
    print(f"tuning for the program recorded in {args.for_recording} "
          f"({shlex.join(summary.get('command') or ['?'])}):")
    for line in plan.notes:
        print(f"  {line}")
    return summary, plan


def tune_main(args, timer: Path, fp: dict, paths: catalogue.Paths) -> int:
    if args.evidence and args.for_recording:
        raise UsageError("--evidence goes without --for: a program's calls weigh the moves there, "
                         "which the evidence of the rule alone does not re-derive")
    defaults = with_pool(tune_experiment.loaded(timer))
    summary, plan = plan_for(args, defaults) if args.for_recording else (None, None)
    if plan and plan.nothing:
        print(plan.nothing)
        if args.quick or not recorded_levels(summary):
            return 0
        print("its small-size design (the variant of each function) is still its own to choose")
        plan.grids = {}
    out = (Path(args.out) if args.out else Path(args.for_recording) / "profile" if plan
           else profile_file.default_profile_path(dict(os.environ)))
    if not args.dry_run:
        # refused now, not after minutes of measuring
        check_writable(out, "the profile", profile_file.profile_is_ours)
    if args.evidence:   # refused now, not after minutes of measuring
        check_target(Path(args.evidence), "the evidence", evidence.is_ours)
    s = settings(args, fp)
    grid = (sorted(set().union(*plan.grids.values(), set())) if plan
            else catalogue.size_grid(s["lo"], s["hi"], s["per_octave"]))
    print(f"tuning on {fp.get('cpu_model', '?')} ({profile_file.cpu_line(fp)[4:]}); the defaults: "
          f"strategy row {fp.get('strategy', '?')} ({fp.get('strategy_matched', '?')})")
    print(f"method: {stages.method_text(s, grid, bool(plan))}", flush=True)
    progress = ProgressLine()
    watch = load.Watch()
    result = TuneOutcome()
    nstages = measure_families(result, timer, fp, s, grid, plan, defaults, paths, progress)
    choose_small_design(result, args, timer, fp, plan and recorded_levels(summary), nstages, defaults, progress)
    if plan:
        print("\n".join(result.weighed_lines()))
    else:   # --dry-run too: it says what tune would write
        result.choices = confirm_moves(timer, result.choices, defaults, grid, s, paths, progress,
                                       bool(result.level_scores))
        result.choices = confirm_small_design(timer, result, fp, defaults, progress)
    print("\n".join(result.table_lines()))
    say_load(watch.result())
    if args.evidence:
        write_evidence(Path(args.evidence), result, fp, s, grid, defaults, paths)
    if args.dry_run:
        print("\n--dry-run: no profile written")
        return 0
    write_checked_profile(timer, out, result, fp, stages.method_text(s, grid, bool(plan)), args.for_recording)
    print("\n".join(result.written_lines(out, (summary.get("command") or []) if plan else None)))
    return 0


def measure_families(result: TuneOutcome, timer: Path, fp: dict, s: dict, grid: list[int], plan,
                     defaults: dict, paths: catalogue.Paths, progress) -> int:
    """Each family's thresholds timed and decided into result, its picks
    printed as they come; the number of stages, the variant's the last."""
    cpus = int(fp.get("cpus_online") or 1)
    # For a program: only the families its calls run (the preload never uses the pool).
    families = [f for f in tune.DECIDERS if f in plan.grids] if plan else list(tune.DECIDERS)
    nstages = len(families) + 1   # and the variant's
    for i, family in enumerate(families, 1):
        fgrid = plan.grids[family] if plan else catalogue.family_grid(family, grid)
        # a program's calls do not say their alignment: --for leaves rep_movsb_align alone
        times = stages.measure_family(timer, family, fgrid, s, cpus, progress, f"{i}/{nstages}", paths,
                               None if plan else defaults)
        if not times:
            continue
        picks_of = tune.TimedPicks(times)
        got, picks = tune.DECIDERS[family](picks_of, fgrid, defaults, paths)
        result.measured[family] = evidence.family_record(fgrid, times, picks_of.made)
        result.decisions += [evidence.decision_record(family, c) for c in got]
        for key, ps in picks.items():
            print(describe_picks(PICK_LABELS.get(key, key), ps))
        if plan:
            result.weighed += for_program.weigh_choices(family, got, defaults, times, plan.calls[family], paths)
        else:
            got = proposals(family, times, fgrid, defaults, paths, got)
        result.choices += got
    return nstages


def proposals(family: str, times, grid: list[int], defaults: dict, paths: catalogue.Paths, strict: list) -> list:
    """The moves batches confirm (confirm_moves): the rule's, and those the
    same timings make at reproduce.PROPOSE_ALPHA, which the rule's p <=
    ALPHA misses in one run of two where the gain is a few percent (Zen 4:
    nt_threshold 64 -> 45.3 MiB, 1.09x in every batch, proposed in one of
    two runs); the batches, not this, decide whether they are written."""
    loose, _ = tune.DECIDERS[family](tune.TimedPicks(times, reproduce.PROPOSE_ALPHA), grid, defaults, paths)
    by = {c.name: c for c in strict}
    extra = [c for c in loose if c.moved and (c.name not in by or by[c.name].value != c.value)]
    if extra:
        print(f"  also proposed at sign test p<={reproduce.PROPOSE_ALPHA} (to be confirmed): "
              + ", ".join(f"{c.name} {c.show(c.value)}" for c in extra))
    return loose if extra else strict


def choose_small_design(result: TuneOutcome, args, timer: Path, fp: dict, over, nstages: int,
                        defaults: dict, progress) -> None:
    """The small-size design: the variant of each function, then the
    thresholds weighed over the levels, with the chosen variants forced.
    over: under --for, the recording's levels (the program's own sizes at its
    own working sets weigh them); None otherwise."""
    data = args.for_recording if over is not None else None
    if over is not None and not over:
        print(f"== {nstages}/{nstages} variant: not measured (the recording has no working-set estimate)")
    step = f"{nstages}/{nstages}"
    if over is None or over:
        result.scores = stages.measure_variants(timer, fp, args.quick, progress, step, data, over)
    got = level_choice.decide_variants(result.scores, fp.get("variants") or {})
    result.decisions += [evidence.decision_record("variant", c) for c in got]
    result.choices += got
    if result.scores:
        variants = dict(fp.get("variants") or {}, **{c.name: c.value for c in got})
        result.level_scores = stages.measure_thresholds(timer, args.quick, progress, step, variants,
                                                 level_choice.level_incumbents(result.choices, defaults),
                                                 data, over)
        decided, result.choices = level_choice.decide_levels(result.level_scores, result.choices, defaults)
        result.decisions += [evidence.decision_record("levels", c) for c in decided]


def write_evidence(path: Path, result: TuneOutcome, fp: dict, s: dict, grid: list[int], defaults: dict,
                   paths: catalogue.Paths) -> None:
    rule = {k: s[k] for k in ("rounds", "processes", "per_process", "per_octave", "lo", "hi", "batch_ns")}
    rule.update(best_of=tune_experiment.Plan.best_of, method=stages.method_text(s, grid))
    evidence.write(path, evidence.document(fp, rule, defaults, result.measured, result.decisions, paths,
                                           variants=result.scores, levels=result.level_scores))
    print(f"\nwrote the evidence to {path} (docs/evidence.md)")


def write_checked_profile(timer: Path, out: Path, result: TuneOutcome, fp: dict, method: str,
                          for_recording: Optional[str]) -> None:
    """The profile written, then loaded by the library to see it reads."""
    if for_recording:
        method += (f"; for the program recorded in {for_recording}: only the sizes holding >= "
                   f"{for_program.SIGNIFICANT:.0%} of a function's calls or bytes timed, and a move kept only "
                   "if it saves time on the recorded calls")
    profile_file.write_profile(out, result.choices, fp, method)
    tune_experiment.profile_loaded(timer, out)


def confirm_moves(timer, choices: list, defaults: dict, grid: list[int], s: dict, paths: catalogue.Paths,
                  progress, levels_decided: bool) -> list:
    """Every threshold move timed again against the defaults in
    between_batches.BATCHES independent batches (each its own processes, one
    after another, the two settings interleaved in each), on the sizes
    whose path the moves change among the tuning grid and the sizes between
    its points; a move is kept, at the value nearest the default the batches
    support, only where they agree (reproduce.confirm), else tune says it is
    not sure and keeps the default.  The variants and the thresholds the
    levels decided are confirmed on the levels (confirm_small_design)."""
    skip = set(level_choice.VARIANT_FUNCTIONS) | (set(level_choice.LEVEL_TUNABLES) if levels_decided else set())
    moved = [c for c in choices if c.moved and c.name not in skip]
    if not moved:
        return choices
    every = tune.workload_cells(paths, tune.confirmation_sizes(grid, s))
    proposed = {c.name: c.value for c in moved}
    moved = [dataclasses.replace(c, value=reproduce.reach(c, grid)) for c in moved]
    tuned = tune.tuned_tunables(defaults, moved)
    at_tuned, at_defaults = paths.of_cells(tuned, every), paths.of_cells(defaults, every)
    cells = [c for c in every if at_tuned[c] != at_defaults[c]]
    p = tune_experiment.Plan({"defaults": "", "tuned": catalogue.tunables_text(tuned)}, cells,
                             rounds=s["per_process"], processes=1, batch_ns=s["batch_ns"])
    print(f"\n== confirming {len(moved)} move(s), each timed one grid point beyond its proposal: "
          f"{', '.join(f'{c.name} {c.show(proposed[c.name])}' for c in moved)}; the tuned settings against the defaults in "
          f"{between_batches.BATCHES} independent batches ({p.rounds} interleaved rounds in one process "
          f"per size band each), on the {len(cells)} cells whose path they change", flush=True)
    batches = []
    for b in range(between_batches.BATCHES if cells else 0):
        batches.append(tune_experiment.measure(
            timer, p, on_progress=lambda pr, b=b: progress.update(pr, f"confirm {b + 1}/{between_batches.BATCHES} ")))
        progress.clear()
    confirmed = reproduce.confirm(moved, defaults, cells, batches, paths, grid, proposed)
    print("\n".join(f"  {c.says()}" for c in confirmed))
    return reproduce.settle(confirmed, choices)


def confirm_small_design(timer: Path, result: TuneOutcome, fp: dict, defaults: dict, progress) -> list:
    """The variants and the thresholds the levels chose, per function,
    against the defaults' in between_batches.BATCHES independent batches of
    the level stage's runs (one process each, the order alternating); a
    function's moves are kept only where the batches agree."""
    levels = set(level_choice.LEVEL_TUNABLES) if result.level_scores else set()
    moves = [c for c in result.choices if c.moved and (c.name in level_choice.VARIANT_FUNCTIONS or c.name in levels)]
    if not moves:
        return result.choices
    function_of = {c.name: c.name if c.name in level_choice.VARIANT_FUNCTIONS
                   else level_choice.LEVEL_TUNABLES[c.name][0] for c in moves}
    functions = tuple(fn for fn in level_choice.VARIANT_FUNCTIONS if fn in function_of.values())
    variants = dict(fp.get("variants") or {})
    chosen = dict(variants, **{c.name: c.value for c in moves if c.name in variants})
    level_values = {c.name: c.value for c in moves if c.name in levels}

    def spec(vs: dict, thresholds: dict) -> str:
        return ":".join([stages.forced_variants(vs)] + [f"{n}={catalogue.NEVER if v is None else v}"
                                                         for n, v in thresholds.items()])

    configs = {"defaults": spec(variants, {n: defaults.get(n) for n in level_values}),
               "tuned": spec(chosen, level_values)}
    print(f"\n== confirming the small-size design ({', '.join(f'{c.name}={c.show(c.value)}' for c in moves)}) "
          f"against the defaults' in {between_batches.BATCHES} independent batches", flush=True)
    batch_scores = []
    for b in range(between_batches.BATCHES):
        order = list(configs) if b % 2 == 0 else list(reversed(configs))
        scores = stages.measure_levels(timer, False, progress, f"confirm {b + 1}/{between_batches.BATCHES}",
                                       "the small-size design", {k: configs[k] for k in order}, functions,
                                       runs=stages.CONFIRM_RUNS)
        batch_scores.append({k: {sc.function: sc for sc in scores if sc.candidate == k} for k in configs})
    confirmed = [reproduce.design_confirmed(fn, [c for c in moves if function_of[c.name] == fn], batch_scores)
                 for fn in functions]
    print("\n".join(f"  {d.says()}" for d in confirmed))
    return reproduce.settle_design(confirmed, result.choices)


def say_load(seen: load.Load, check: str = "`memkit tune --check` the profile") -> None:
    """Whether the machine was busy while tune measured (system-check's figures)."""
    if seen.busy:
        print(f"\nnote: the machine was busy while tune measured ({seen.busy}): its figures carry that "
              f"noise; run it again on a quiet machine, or {check}")
    else:
        print(f"\nthe machine while tune measured: {seen.describe()}")


PICK_LABELS = {"set0": "memset 0, picked:", "set": "memset non-zero, picked:",
               "rep": "rep stosb vs loop (both):", "copy": "memcpy (both alignments):",
               "parallel": "parallel (memset, memcpy):", "align": "rep movsb misaligned (copy3):"}


def with_pool(got: tune_experiment.Loaded) -> dict:
    """Its tunables (catalogue.parse_tunables) and the default pool's size."""
    return dict(catalogue.parse_tunables(got.tunables), pool_threads=got.pool_threads)


def check_main(args, timer: Path, fp: dict, paths: catalogue.Paths) -> int:
    path = (Path(args.out) if args.out else Path(args.for_recording) / "profile" if args.for_recording
            else profile_file.default_profile_path(dict(os.environ)))
    if not path.is_file():
        raise MemkitError(f"no profile at {path} to check (run `memkit tune` first)")
    s = settings(args, fp)
    profile = tune_experiment.profile_loaded(timer, path)
    tuned, defaults = with_pool(profile), with_pool(tune_experiment.loaded(timer))
    # Sizes between the tuning grid's: the check is not the data the profile came from.
    grid = catalogue.size_grid(s["lo"], s["hi"], s["per_octave"], offset=0.5)
    # the profile as the library read it, put in force over the defaults; a
    # variant is chosen at load time, not between batches: its thresholds
    # are checked with the defaults' variants
    forced = [x for x in profile.tunables.split(":")
              if x.partition("=")[0] in level_choice.VARIANT_FUNCTIONS and not x.endswith("=auto")]
    if forced:
        print(f"note: the profile forces {', '.join(forced)}, which tune chose on the production size "
              "distributions; --check times its thresholds with the variants the defaults run", flush=True)
    p = stages.plan({"defaults": "", "profile": catalogue.tunables_text(catalogue.parse_tunables(profile.tunables))},
             tune.workload_cells(paths, grid), s)
    tuned_paths, default_paths = paths.of_cells(tuned, p.cells), paths.of_cells(defaults, p.cells)
    changed = {c for c in p.cells if tuned_paths[c] != default_paths[c]}
    print(f"checking {path} on {fp.get('cpu_model', '?')}: the profile and the built-in defaults, "
          f"in turn in one process, {p.total_rounds} interleaved rounds; {len(p.cells)} cells "
          f"({', '.join(paths.workloads)} at sizes {fmt_size(grid[0])}..{fmt_size(grid[-1])}, "
          f"between the tuning grid's), {len(changed)} of them on a path the profile changes", flush=True)
    progress = ProgressLine()
    watch = load.Watch()
    times = tune_experiment.measure(timer, p, on_progress=lambda pr: progress.update(pr, "check "))
    progress.clear()
    rc = report_check(p, times, changed, tuned, defaults, paths)
    say_load(watch.result(), "time a program with the line (`memkit try --glibc-tunables`)")
    return rc


def report_check(plan, times, changed, tuned, defaults, paths) -> int:
    """Where the profile helped and hurt; the cells it does not change are
    the same code under both, so their spread is the noise."""
    rows, noise, verdicts = tune.judge_cells(times, "profile", "defaults", plan.cells,
                                             {c for c in plan.cells if c not in changed})
    same_rows = [rows[c] for c in plan.cells if c not in changed]
    helped = [c for c in plan.cells if c in changed and verdicts[c] > 0]
    hurt = [c for c in plan.cells if c in changed and verdicts[c] < 0]
    print(f"\n{'workload':<30} {'size':>10}  {'defaults':>10} -> {'profile':<10} {'speed-up':>8}  rounds faster")
    for c in sorted(changed, key=lambda c: (list(paths.workloads).index(c[0]), c[1])):
        ev = rows[c]
        verdict = "helped" if c in helped else "HURT" if c in hurt else "within noise"
        print(f"{paths.workloads[c[0]][1]:<30} {fmt_size(c[1]):>10}  {paths.at(defaults, *c):>10} -> "
              f"{paths.at(tuned, *c):<10} {ev.median:>7.2f}x  {ev.wins}/{ev.rounds}  {verdict}")
    same = [ev.median for ev in same_rows]
    print()
    if same:
        print(f"noise: {len(same)} cells run the same code under both: speed-ups "
              f"{min(same):.2f}..{max(same):.2f}x, {tune.identical_flags(same_rows)} of them 'significant' "
              f"by the same rule (each against the others; the rule allows ~{tune.ALPHA:.0%})")
        if noise is None:
            print(f"  (fewer than {tune.NULL_MIN}: the changed cells are judged by the sign test alone)")
    print(f"helped at {len(helped)} of the {len(changed)} changed cells" +
          (f" (up to {max(rows[c].median for c in helped):.2f}x)" if helped else ""))
    if hurt:
        print(f"HURT at {len(hurt)} cell(s) beyond noise: the profile is worse than the defaults there; "
              "run `memkit tune` again")
        return 1
    need = stats.sign_test_wins_needed(plan.total_rounds, tune.ALPHA)
    print(f"hurt nowhere beyond noise (hurt: slower in at least {need}/"
          f"{plan.total_rounds} rounds, by {tune.MARGIN:.0%} at the median" +
          (", and beyond what identical code shows)" if noise else ")"))
    return 0


def glibc_main(args, timer: Path) -> int:
    if args.check:
        raise UsageError("--glibc goes without --check: it tunes glibc, whose line `memkit try --glibc-tunables "
                         "@FILE` checks")
    for_rec = glibc_for(args) if args.for_recording else None
    out = None if args.dry_run else (Path(args.out) if args.out else for_rec.directory if for_rec
                                     else profile_file.default_profile_path(dict(os.environ)).parent)
    if out is not None and os.path.lexists(out) and not out.is_dir():
        raise MemkitError(f"--out {out}: with --glibc, a directory (the line and its evidence go there)"
                          + ("; it is a symbolic link to nothing" if not out.exists() else ""))
    glibc_tune.check_outputs(out, Path(args.evidence) if args.evidence else None)
    fp = tune_experiment.fingerprint(timer)
    watch = load.Watch()
    rc = glibc_tune.run(timer, fp, out, Path(args.evidence) if args.evidence else None, settings(args, fp),
                        ProgressLine(), dict(os.environ), for_rec=for_rec)
    say_load(watch.result(), "time a program with the line (`memkit try --glibc-tunables`)")
    return rc


def glibc_for(args) -> glibc_tune.ForProgram:
    """--glibc --for DIR: the recording, and the sizes to look at."""
    directory = Path(args.for_recording)
    summary, dists = load_recording(directory)
    return glibc_tune.ForProgram(directory, summary.get("command") or [], dists, summary.get("calls") or {},
                                 size_arg(args.min_size) if args.min_size else 1 << 10,
                                 size_arg(args.max_size) if args.max_size else None)


def glibc_apply(args) -> int:
    """--glibc --apply: how to give the line tune --glibc wrote (--for DIR:
    DIR's; --out DIR; else the profile's directory) to its programs."""
    directory = (Path(args.for_recording) if args.for_recording else Path(args.out) if args.out
                 else profile_file.default_profile_path(dict(os.environ)).parent)
    path = directory / glibc_tune.LINE_FILE
    if not path.is_file():
        raise MemkitError(f"no line at {path}: `memkit tune --glibc"
                          f"{' --for ' + str(directory) if args.for_recording else ''}` writes it")
    spec = glibc.tunables_argument(f"@{path}")
    command = load_recording(directory)[0].get("command") if args.for_recording else None
    print("\n".join(glibc_tune.apply_lines("GLIBC_TUNABLES=" + spec, path, command)))
    return 0


def main(args) -> int:
    if args.apply and not args.glibc:
        raise UsageError("--apply goes with --glibc: it prints how to give the GLIBC_TUNABLES line to programs")
    if args.glibc and args.apply and not args.check:
        return glibc_apply(args)   # reads the line; measures nothing, needs no build
    bench_dir = lab.find_bench_dir(args.build)
    if note := machine.current().note():
        print(f"memkit tune: note: {note}", file=sys.stderr, flush=True)
    timer = Path(args.timer) if args.timer else tune_experiment.find_program(bench_dir)
    if args.glibc:
        return glibc_main(args, timer)
    fp = tune_experiment.fingerprint(timer)
    paths = catalogue.Paths(bench_dir)   # what the library runs where: asked of it
    return check_main(args, timer, fp, paths) if args.check else tune_main(args, timer, fp, paths)
