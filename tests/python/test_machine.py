# SPDX-License-Identifier: Apache-2.0
"""The machine seam (memkit.lab.machine): nothing in memkit's Python reads
the machine around it, and every machine memkit has seen
(tests/data/machines/) runs through the commands whose answer depends on
the machine: the row the library picks, system-check, env, try's advice
about glibc, tune's paths and glibc view, the run estimate.  Whatever CPU
the tests run on, each recorded machine gives the same answers."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from conftest import REPO, cli_env, make_fake_build, real_bench_dir, run_cli, running_glibc
from memkit.errors import MemkitError
from memkit.lab import estimate, glibc, machine
from memkit.lab.experiments import Experiment

MACHINES_DIR = REPO / "tests" / "data" / "machines"
MACHINES = sorted(p.name for p in MACHINES_DIR.iterdir() if (p / machine.FINGERPRINT_FILE).exists())

# What each recorded machine must give.  glibc: system-check's verdict on
# each of glibc's thresholds (None: glibc's view was not recorded there).
# copy: the path the library takes there for copies of 4 KiB, 64 KiB and
# 64 MiB, by its row (what tune's plan starts from).
EXPECTED = {
    "amd-zen3-25-1": {"row": "amd-zen3", "glibc": {"non-temporal": "COSTLY", "rep movsb": "COSTLY"},
                      "copy": ["loop", "loop", "nt"]},
    "amd-zen4-25-17": {"row": "amd-zen4", "glibc": {"non-temporal": "COSTLY", "rep movsb": "COSTLY"},
                       "copy": ["loop", "loop", "nt"]},
    "amd-zen5-26-2": {"row": "amd-zen5", "glibc": None, "copy": ["loop", "rep_movsb", "rep_movsb"]},
    "intel-xeon-6-167": {"row": "intel-xeon-amx", "glibc": {"non-temporal": "ok", "rep movsb": "ok"},
                         "copy": ["loop", "rep_movsb", "nt"]},
    "intel-xeon-6-207": {"row": "intel-emr", "glibc": {"non-temporal": "ok", "rep movsb": "ok"},
                         "copy": ["loop", "rep_movsb", "nt"]},
}
COPY_SIZES = [4096, 65536, 64 << 20]


def on(name: str, **extra) -> dict:
    """The CLI's environment with the recorded machine `name` in force."""
    return cli_env(**{machine.ENV: str(MACHINES_DIR / name)}, **extra)


def recorded(name: str) -> dict:
    return json.loads((MACHINES_DIR / name / machine.FINGERPRINT_FILE).read_text())


def test_every_recorded_machine_has_its_expectations_and_five_cpus_are_there():
    assert sorted(EXPECTED) == MACHINES
    assert len({(recorded(n)["vendor"], recorded(n)["family"], recorded(n)["model"]) for n in MACHINES}) >= 5


# ---- nothing reads the machine around the seam ----

SEAM = REPO / "python" / "memkit" / "lab" / "machine.py"
# A program's own /proc entry (the recorded program's page faults) is the
# program, not the machine.
ALLOWED = {("programs/count_files.py", "/proc/")}
FORBIDDEN_CALLS = {("os", "cpu_count"), ("os", "sched_getaffinity"), ("os", "getloadavg"), ("os", "sysconf"),
                   ("os", "uname"), ("os", "confstr")}
FORBIDDEN_ARGS = {"--list-diagnostics", "--fingerprint", "--cpu"}


def machine_reads(source: str, rel: str) -> list[str]:
    """Where a module reads the machine itself: a /proc or /sys path, a
    call that asks the OS about the CPUs or the load, the platform module,
    or running a program to ask it (ld.so --list-diagnostics, an
    experiment's --fingerprint, memkit-tunables --cpu)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = str(node.values[0].value)
        if text is not None:
            for prefix in ("/proc/", "/sys/"):
                if text.startswith(prefix) and (rel, prefix) not in ALLOWED:
                    out.append(f"{rel}:{node.lineno}: reads {text!r}")
            if text in FORBIDDEN_ARGS:
                out.append(f"{rel}:{node.lineno}: runs a program with {text}")
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in FORBIDDEN_CALLS):
            out.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr}")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if "platform" in names:
                out.append(f"{rel}:{node.lineno}: imports platform")
    return sorted(set(out))   # an f-string's first part is a constant too


def test_every_read_of_the_machine_goes_through_the_seam():
    root = REPO / "python" / "memkit"
    found = []
    for path in sorted(root.rglob("*.py")):
        if path != SEAM:
            found += machine_reads(path.read_text(), str(path.relative_to(root)))
    assert found == [], "read the machine through memkit.lab.machine:\n" + "\n".join(found)


def test_the_seam_check_finds_each_kind_of_read():
    code = '''
import os, platform
open("/proc/stat")
open(f"/sys/devices/system/cpu/cpu{n}/online")
os.cpu_count(); os.sysconf("SC_CLK_TCK")
run([loader, "--list-diagnostics"])
'''
    found = machine_reads(code, "x.py")
    assert len(found) == 6, found
    assert machine_reads('text = "numbers (/sys/devices/...)"; os.times()', "x.py") == []


# ---- each recorded machine through the commands ----

@pytest.fixture(scope="module")
def bench():
    return real_bench_dir()


@pytest.mark.parametrize("name", MACHINES)
def test_the_row_the_library_picks_is_the_row_that_machine_ran(name, bench):
    """The C side: libmemkit's table gives each recorded CPU its row."""
    fp = recorded(name)
    row = machine.RecordedMachine(MACHINES_DIR / name).row(bench / "memkit-tunables")
    assert row["strategy"] == fp["strategy"] == EXPECTED[name]["row"]
    # and the variant of each function that machine ran, where the row names one
    for function, variant in (row.get("variants") or {}).items():
        if variant:
            assert fp["variants"][function] == variant, function


@pytest.mark.parametrize("name", MACHINES)
def test_system_check_and_env_read_the_recorded_machine(name, tmp_path):
    build = make_fake_build(tmp_path, ["ok"])   # its own fingerprint is never read
    fp = recorded(name)
    p = run_cli("system-check", "--build", build, "--json", env=on(name))
    assert p.returncode == 0, p.stderr
    found = {f["what"]: f for f in json.loads(p.stdout)}
    want = EXPECTED[name]["glibc"]
    if want is None:
        assert found["glibc thresholds"]["verdict"] == "unknown"
        assert "has no glibc-diagnostics.txt" in found["glibc thresholds"]["state"]
    else:
        assert {k[len("glibc "):]: f["verdict"].upper() if f["verdict"] != "ok" else "ok"
                for k, f in found.items() if k.startswith("glibc ")} == want
    vm = found["virtual machine"]
    assert vm["verdict"] == ("noisy" if fp.get("hypervisor", "unknown") not in ("none", "unknown") else
                             "unknown" if fp.get("hypervisor", "unknown") == "unknown" else "ok")
    assert found["machine load"]["verdict"] == "ok"   # a recorded machine without load.json is quiet

    e = run_cli("env", "--build", build, "--json", env=on(name))
    assert e.returncode == 0, e.stderr
    got = json.loads(e.stdout)
    assert {k: got[k] for k in fp} == fp
    diag = MACHINES_DIR / name / machine.GLIBC_FILE
    assert got[glibc.KEY] == (glibc.parse(diag.read_text()) if diag.exists() else got[glibc.KEY])
    text = run_cli("env", "--build", build, env=on(name)).stdout
    assert f"read from {MACHINES_DIR / name} (MEMKIT_MACHINE), not this machine" in text
    info = MACHINES_DIR / name / machine.CPUINFO_FILE
    if info.exists():   # the recording's /proc/cpuinfo names the fingerprint's CPU
        fields = dict(re.split(r"\s*:\s*", line, maxsplit=1) for line in info.read_text().splitlines() if ":" in line)
        assert int(fields["cpu family"]) == fp["family"] and int(fields["model"]) == fp["model"]


@pytest.mark.parametrize("name", MACHINES)
def test_try_suggests_glibc_tunables_where_glibc_disagrees(name, bench, tmp_path):
    root = bench.parent.resolve()
    if not (root / "libmemkit_preload.so").exists():
        pytest.skip("the preload library is not built here (sanitizer build?)")
    p = run_cli("try", "--build", root, "--db", tmp_path / "m.db", "--runs", "1", "-q", "--", "true",
                cwd=tmp_path, env=on(name))
    assert p.returncode == 0, p.stderr
    bottom = p.stdout.splitlines()[-1]
    assert bottom.startswith("true: ")
    disagree = [w for w, v in (EXPECTED[name]["glibc"] or {}).items() if v == "COSTLY"]
    if disagree:
        m = re.search(r"; glibc's (.*) thresholds? disagrees? with this machine: try --glibc-tunables (\S+) "
                      r"to time glibc tuned beside memkit$", bottom)
        assert m, bottom
        assert m[1] == " and ".join(disagree)
        # the setting it names is the one system-check prints for that machine
        check = run_cli("system-check", "--build", root, env=on(name)).stdout
        assert f"export GLIBC_TUNABLES={m[2]} " in check
    else:
        assert "--glibc-tunables" not in bottom


@pytest.mark.parametrize("name", MACHINES)
def test_tune_reads_the_recorded_rows_paths_and_glibc(name, bench, monkeypatch):
    """tune's plan rests on the paths the library takes at each size (its
    row's thresholds) and, with --glibc, on glibc's view under each
    setting: both the recorded machine's."""
    monkeypatch.setenv(machine.ENV, str(MACHINES_DIR / name))
    m = machine.current()
    prog = bench / "memkit-tunables"
    assert m.paths(prog, "", "copy", COPY_SIZES) == EXPECTED[name]["copy"]
    # a setting given on top of the row still counts
    assert m.paths(prog, "nt_copy_threshold=8K:rep_movsb_threshold=never", "copy", COPY_SIZES) == ["loop", "nt", "nt"]
    assert m.library_tables(prog)["strategy"] == EXPECTED[name]["row"]
    view = m.glibc_view(env={})
    if EXPECTED[name]["glibc"] is None:
        assert isinstance(view, str) and view.startswith("not available")
        return
    from memkit.tuning import glibc_tune as gt
    read = gt.reader(None, {})
    tuned = read({gt.NT: 1 << 24, gt.MOVSB: 1 << 20})
    assert tuned["non_temporal_threshold"] == 1 << 24 and tuned["rep_movsb_threshold"] == 1 << 20
    assert tuned["data_cache_size"] == view["data_cache_size"]
    # glibc ignores a value below its bound: so does the recorded glibc, and tune says so
    with pytest.raises(MemkitError, match=f"ignores {gt.MOVSB}=100"):
        read({gt.MOVSB: 100})


@pytest.mark.parametrize("name", MACHINES)
def test_the_run_estimate_learns_only_from_runs_on_the_same_caches(name):
    fp = machine.RecordedMachine(MACHINES_DIR / name).fingerprint()
    e = Experiment("memset-sizes", "", "", Path("/none"))
    here = [{"name": "memset-sizes", "seconds": 42.0, "args": [], "quick": False, "l3": fp["cache"]["l3"]}]
    other = [dict(here[0], l3=fp["cache"]["l3"] * 2)]
    assert estimate.estimate([e], False, {}, fp, here).seconds == 42.0
    assert estimate.estimate([e], False, {}, fp, other).guesses["memset-sizes"].source == "reference"


# ---- recording a machine, and reading it back ----

def test_a_machine_recorded_is_read_back_as_it_was(tmp_path):
    build = make_fake_build(tmp_path / "build", ["ok"])
    rec = tmp_path / "rec"
    p = run_cli("env", "--build", build, "--record", rec)
    assert p.returncode == 0, p.stderr
    assert (rec / machine.FINGERPRINT_FILE).exists() and f"MEMKIT_MACHINE={rec}" in p.stdout
    live = json.loads(run_cli("env", "--build", build, "--json").stdout)
    back = json.loads(run_cli("env", "--build", build, "--json", env=cli_env(MEMKIT_MACHINE=str(rec))).stdout)
    live.pop("load"), back.pop("load")
    assert back == live
    # a folder that is not new is refused
    again = run_cli("env", "--build", build, "--record", rec)
    assert again.returncode == 1 and "not a new or empty directory" in again.stderr


def test_a_recorded_load_is_judged_like_a_live_one(tmp_path):
    rec = tmp_path / "busy"
    rec.mkdir()
    for f in MACHINES_DIR.joinpath("amd-zen4-25-17").iterdir():
        (rec / f.name).write_bytes(f.read_bytes())
    (rec / machine.LOAD_FILE).write_text('{"load_avg": 2.7, "steal_pct": 3.5}')
    p = run_cli("system-check", "--build", make_fake_build(tmp_path / "b", ["ok"]), "--json",
                env=cli_env(MEMKIT_MACHINE=str(rec)))
    found = {f["what"]: f for f in json.loads(p.stdout)}
    assert found["machine load"]["verdict"] == "noisy"
    assert "3.5% of CPU time stolen" in found["machine load"]["state"]


@pytest.mark.parametrize("folder, why", [("/nonexistent/machine", "no recorded machine there"),
                                         ("{empty}", "no recorded machine there"),
                                         ("{bad}", "is not JSON")])
def test_a_bad_recorded_machine_is_one_line(folder, why, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / machine.FINGERPRINT_FILE).write_text("{")
    folder = folder.format(empty=tmp_path / "empty", bad=tmp_path / "bad")
    p = run_cli("system-check", "--build", make_fake_build(tmp_path / "b", ["ok"]),
                env=cli_env(MEMKIT_MACHINE=folder))
    assert p.returncode == 1 and why in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.parametrize("tunables", ["", "glibc.cpu.x86_non_temporal_threshold=16777216",
                                      "glibc.cpu.x86_rep_movsb_threshold=1048576:glibc.cpu.x86_rep_stosb_threshold=4096",
                                      "glibc.cpu.x86_rep_movsb_threshold=100",      # below its bound: ignored
                                      "glibc.cpu.x86_non_temporal_threshold=1000",  # below its bound: ignored
                                      "glibc.cpu.x86_data_cache_size=65536",
                                      # at and past each bound: glibc takes a value above the lower one only
                                      "glibc.cpu.x86_non_temporal_threshold=0x4040",
                                      "glibc.cpu.x86_non_temporal_threshold=0x4041",
                                      "glibc.cpu.x86_non_temporal_threshold=0x1000000000000000",
                                      "glibc.cpu.x86_rep_movsb_threshold=512",
                                      "glibc.cpu.x86_rep_stosb_threshold=0"])
def test_a_recorded_glibc_takes_a_setting_as_this_glibc_does(tunables, bench, tmp_path):
    """The recorded machine's glibc (glibc.diagnostics_under) against the
    real one of this system, recorded here: the same view under each
    setting.  Any CPU; a glibc that prints its thresholds (2.33 on)."""
    if (running_glibc() or (0, 0)) < (2, 33):
        pytest.skip("this C library prints no thresholds to compare with (glibc before 2.33, or not glibc)")
    live = machine.LiveMachine()
    rec = tmp_path / "here"
    machine.record(rec, live.fingerprint(bench / "memkit-exp-fill-regions"), live)
    env = {"GLIBC_TUNABLES": tunables} if tunables else {}
    assert machine.RecordedMachine(rec).glibc_view(env=env) == live.glibc_view(env=env)
