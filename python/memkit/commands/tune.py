"""memkit tune: measure this machine's crossover points with the lab's
experiments, write the profile the library reads, say what was chosen and why."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memkit import lab, tune
from memkit.commands._common import add_build_option
from memkit.errors import MemkitError
from memkit.terminal import ProgressLine

NAME = "tune"
HELP = "measure this machine's thresholds and write the profile libmemkit reads"

# Each probe: an experiment, the arguments that give the grid tuning needs
# (the quick grid under --quick), and the function that turns its
# measurements into choices.  Adding a tunable family is adding a row.
PROBES = [
    ("fill-regions", ["min=4K", "max=1G", "per_octave=2", "budget=0.15"], tune.choose_memset),
    ("copy-sweep", [], tune.choose_copy),
    ("parallel-sweep", [], tune.choose_parallel),
]


def add_arguments(p):
    p.add_argument("--quick", action="store_true", help="the experiments' reduced grids (a rough profile)")
    p.add_argument("--out", metavar="PATH",
                   help=f"where to write the profile (default: $MEMKIT_PROFILE, else "
                        f"$XDG_CONFIG_HOME/memkit/profile, else ~/.config/memkit/profile)")
    p.add_argument("--dry-run", action="store_true", help="measure and explain, write nothing")
    add_build_option(p)


def _current(fp: dict) -> dict:
    """The tunables in force by default, from the fingerprint's string."""
    out = {}
    for item in (fp.get("tunables") or "").split(":"):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k] = v
    return out


def _check_profile_loads(exp: lab.Experiment, path: Path) -> dict:
    env = dict(os.environ, MEMKIT_PROFILE=str(path))
    env.pop("MEMKIT_TUNABLES", None)
    p = subprocess.run([str(exp.path), "--fingerprint"], capture_output=True, text=True, env=env)
    if p.returncode != 0 or p.stderr.strip():
        raise MemkitError(f"the library rejected the profile it was given: {p.stderr.strip() or p.returncode}")
    fp = json.loads(p.stdout)
    if fp.get("profile") != str(path):
        raise MemkitError(f"the library did not load {path} (it reports profile '{fp.get('profile')}')")
    return fp


def check_writable(path: Path) -> None:
    """Fails now, not after minutes of measuring, when the profile cannot be
    written: the profile goes to a temporary file beside PATH, then replaces
    it, so PATH's folder (or the nearest one that exists) must be writable."""
    if path.is_dir():
        raise MemkitError(f"--out {path} is a directory; give the profile's file name")
    if path.exists() and not os.access(path, os.W_OK):
        raise MemkitError(f"cannot write the profile to {path}: permission denied")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise MemkitError(f"cannot write the profile to {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise MemkitError(f"cannot write the profile to {path}: {folder} is not writable")


def main(args) -> int:
    out = Path(args.out) if args.out else tune.default_profile_path(dict(os.environ))
    if not args.dry_run:
        check_writable(out)
    exps = {e.name: e for e in lab.discover(lab.find_bench_dir(args.build))}
    probes = [(exps[name], extra, choose) for name, extra, choose in PROBES if name in exps]
    if not probes:
        raise MemkitError("none of the experiments tuning needs is built ("
                          + ", ".join(n for n, _, _ in PROBES) + "); run `make` first")
    # Measure the built-in defaults, not a profile from an earlier tune.
    os.environ["MEMKIT_PROFILE"] = "none"
    os.environ.pop("MEMKIT_TUNABLES", None)
    fp = lab.fingerprint([probes[0][0]])
    defaults = _current(fp)

    progress = ProgressLine()
    choices: list[tune.Choice] = []
    for i, (exp, extra, choose) in enumerate(probes, 1):
        argv = [] if args.quick else extra
        print(f"== tune {i}/{len(probes)}: {exp.name} {' '.join(argv)}".rstrip(), flush=True)
        res = lab.run_experiment(exp, args.quick, argv, on_progress=progress.update)
        progress.clear()
        if res.status != "ok":
            raise MemkitError(f"tuning stopped: {res.error}")
        got = choose(res.measurements)
        if not got:
            print(f"   ({exp.name} gave nothing to decide from)")
        choices += got
    missing = [n for n, _, _ in PROBES if n not in exps]

    print()
    print(f"{'tunable':<22} {'default':>10} {'tuned':>10}  why")
    for c in choices:
        d = defaults.get(c.name, "?")
        d_fmt = tune.fmt_size(int(d)) if d.isdigit() and c.name != "threads" else d
        v_fmt = (tune.fmt_size(c.value) if c.name != "threads" else str(c.value))
        print(f"{c.name:<22} {d_fmt:>10} {v_fmt:>10}  {c.why}")
    for n in missing:
        print(f"(not tuned: the {n} experiment is not built)")

    if args.dry_run:
        print("\n--dry-run: no profile written")
        return 0
    if not choices:
        raise MemkitError("nothing was measured that a profile could hold")
    tune.write_profile(out, choices, fp)
    _check_profile_loads(probes[0][0], out)
    print(f"\nwrote {out}; libmemkit loads it at start-up (MEMKIT_TUNABLES still overrides it).")
    print("`memkit run` now records it in the fingerprint; `memkit compare` shows the difference.")
    return 0
