# SPDX-License-Identifier: Apache-2.0
"""glibc's own view beside memkit's (memkit.lab.glibc): the parser held to
`ld.so --list-diagnostics` as recorded on real CPUs (tests/data/glibc/),
what `memkit env` and `memkit system-check` make of each, the fingerprint
that compare and fleet see change, and the live glibc of this machine."""

import json
import os
import struct
import subprocess
import sys

import pytest

from conftest import FINGERPRINT, REPO, cli_env, make_fake_build, real_bench_dir, run_cli, running_glibc
from memkit.comparison import fleet
from memkit.lab import glibc, machine, system_check
from memkit.lab.fingerprint import changed_keys, describe_lines, differences
from memkit.programs import whole_program as wp
from memkit.report.fleet_report import write_fleet_report
from memkit.store.db import Database
from test_fleet import fill_result

DATA = REPO / "tests" / "data" / "glibc"
MiB = 1 << 20


def recorded(name: str) -> dict:
    return glibc.parse((DATA / f"{name}.txt").read_text())


# Each CPU as its fingerprint records it (`memkit env` on it; the Zen 3's is
# shared/evidence/amd-zen3-25-1/env.txt), with glibc's view as recorded.
ZEN3 = dict(FINGERPRINT, cpu_model="AMD EPYC", vendor="AuthenticAMD", family=25, model=1, glibc="2.36",
            cache={"l1d": 32 << 10, "l2": 512 << 10, "l3": 32 * MiB, "line": 64},
            tunables="rep_stosb_threshold=never:nt_threshold=16777216:nt_threshold_zero=11184810:"
                     "rep_movsb_threshold=never:rep_movsb_stop=never:rep_movsb_align=64:nt_copy_threshold=8388608:"
                     "parallel_threshold=4194304:threads=0:memset=auto:memcpy=auto:memmove=auto",
            **{glibc.KEY: recorded("amd-zen3-25-1")})
XEON_207 = dict(FINGERPRINT, vendor="GenuineIntel", family=6, model=207, glibc="2.36",
                cache={"l1d": 48 << 10, "l2": 2 * MiB, "l3": 260 * MiB, "line": 64},
                **{glibc.KEY: recorded("intel-xeon-6-207")})
XEON_167 = dict(FINGERPRINT, vendor="GenuineIntel", family=6, model=167, glibc="2.36",
                cache={"l1d": 48 << 10, "l2": 2 * MiB, "l3": 105 * MiB, "line": 64},
                tunables="nt_copy_threshold=27525120", **{glibc.KEY: recorded("intel-xeon-6-167")})
ZEN3_FIX = "glibc.cpu.x86_non_temporal_threshold=8388608:glibc.cpu.x86_rep_movsb_threshold=524288"


def test_the_parser_reads_each_recording():
    assert recorded("amd-zen3-25-1") == {
        "data_cache_size": 32 << 10, "shared_cache_size": 256 * MiB, "non_temporal_threshold": 192 * MiB,
        "rep_movsb_threshold": 2112, "rep_movsb_stop_threshold": 512 << 10, "rep_stosb_threshold": 2048}
    assert recorded("intel-xeon-6-207") == {
        "data_cache_size": 48 << 10, "shared_cache_size": 0x10600000, "non_temporal_threshold": 0x6300000,
        "rep_movsb_threshold": 2112, "rep_movsb_stop_threshold": 0x6300000, "rep_stosb_threshold": 2048}
    assert recorded("intel-xeon-6-167") == {
        "data_cache_size": 48 << 10, "shared_cache_size": 0x6b00000, "non_temporal_threshold": 0x28e0000,
        "rep_movsb_threshold": 2112, "rep_movsb_stop_threshold": 0x28e0000, "rep_stosb_threshold": 2048}
    # glibc 2.33 prints no stop threshold; a line that is not a number is skipped.
    assert glibc.parse("x86.cpu_features.rep_movsb_threshold=0x800\nx86.cpu_features.data_cache_size=\"?\"\n"
                       "x86.cpu_features.level4_cache_size=0xffffffffffffffff\n") == {"rep_movsb_threshold": 2048}


def verdicts(fp) -> dict:
    return {c.what: c.disagrees for c in glibc.checks(fp)}


def test_zen3_disagrees_twice_and_says_what_corrects_each():
    nt, movsb = glibc.checks(ZEN3)
    assert (nt.what, nt.disagrees, nt.setting) == ("non-temporal", True, "glibc.cpu.x86_non_temporal_threshold=8388608")
    assert nt.state == "copies from 192 MiB, 6x the 32 MiB L3 memkit measured (glibc's shared cache: 256 MiB)"
    assert (movsb.what, movsb.disagrees, movsb.setting) == ("rep movsb", True, "glibc.cpu.x86_rep_movsb_threshold=524288")
    assert movsb.state == "for copies of 2.1 KiB to 512 KiB"
    assert glibc.tunables_setting([nt, movsb]) == "GLIBC_TUNABLES=" + ZEN3_FIX


def test_the_settings_printed_correct_what_they_say():
    # glibc's view with the printed GLIBC_TUNABLES in force (as ld.so then
    # prints it: the stop threshold stays the L2 on AMD): nothing disagrees.
    fixed = dict(ZEN3, **{glibc.KEY: dict(ZEN3[glibc.KEY], non_temporal_threshold=8 * MiB,
                                          rep_movsb_threshold=512 << 10)})
    assert verdicts(fixed) == {"non-temporal": False, "rep movsb": False}
    # One byte past the L3 disagrees; at the L3 it does not.
    at_l3 = dict(ZEN3, **{glibc.KEY: dict(fixed[glibc.KEY], non_temporal_threshold=32 * MiB)})
    assert verdicts(at_l3)["non-temporal"] is False
    past = dict(ZEN3, **{glibc.KEY: dict(fixed[glibc.KEY], non_temporal_threshold=32 * MiB + 1)})
    assert verdicts(past)["non-temporal"] is True


def test_where_memkit_knows_no_cliff_or_no_l3_it_does_not_disagree():
    assert verdicts(XEON_207) == {"non-temporal": False, "rep movsb": False}
    assert verdicts(XEON_167) == {"non-temporal": False, "rep movsb": False}
    # A row that lets rep movsb run misaligned (rep_movsb_align=1: Zen 5's,
    # Intel's) knows no cliff; a fingerprint without memkit's tunables, none.
    no_cliff = dict(ZEN3, tunables=ZEN3["tunables"].replace("rep_movsb_align=64", "rep_movsb_align=1"))
    assert verdicts(no_cliff) == {"non-temporal": True, "rep movsb": False}
    assert verdicts(dict(ZEN3, tunables="threads=0"))["rep movsb"] is False
    # No L3 measured: memkit cannot tell.
    assert verdicts(dict(ZEN3, cache={"l1d": 32768}))["non-temporal"] is None
    # Without memkit's own copy threshold, the fix is the generic row's L3/2.
    (nt, _) = glibc.checks(dict(ZEN3, tunables=""))
    assert nt.value == 16 * MiB


# Each recorded CPU as memkit-tunables --cpu places it (VENDOR FAMILY MODEL L2 L3 FEATURES):
# the row whose rep_movsb_align says whether its rep movsb falls misaligned.
ROWS = {"amd-zen3-25-1": ("AuthenticAMD", 25, 1, 512 << 10, 32 * MiB, "erms,fsrm,avx2"),
        "amd-zen4-25-17": ("AuthenticAMD", 25, 17, 1 * MiB, 32 * MiB, "erms,fsrm,avx2,avx512"),
        "amd-zen5-26-2": ("AuthenticAMD", 26, 2, 1 * MiB, 32 * MiB, "erms,fsrm,avx2,avx512"),
        "intel-xeon-6-207": ("GenuineIntel", 6, 207, 2 * MiB, 260 * MiB, "erms,fsrm,avx2,avx512"),
        "intel-xeon-6-167": ("GenuineIntel", 6, 167, 2 * MiB, 105 * MiB, "erms,fsrm,avx2,avx512")}


@pytest.mark.parametrize("cpu, cliff", [("amd-zen3-25-1", True), ("amd-zen4-25-17", True),
                                        ("amd-zen5-26-2", False), ("intel-xeon-6-207", False),
                                        ("intel-xeon-6-167", False)])
def test_the_misalignment_cliff_is_the_strategy_rows_one_fact(cpu, cliff):
    """Whether glibc's rep movsb window costs here comes from memkit's own
    table (its row's rep_movsb_align, as the library puts it in the
    fingerprint's tunables), written once in src/strategy.c."""
    out = subprocess.run([str(real_bench_dir() / "memkit-tunables"), "--cpu", *map(str, ROWS[cpu])],
                         capture_output=True, text=True, timeout=60, check=True)
    align = json.loads(out.stdout)["defaults"]["rep_movsb_align"]
    fp = dict(ZEN3, tunables=f"rep_movsb_align={align}", **{glibc.KEY: recorded("amd-zen3-25-1")})
    assert glibc.rep_movsb_falls_misaligned(fp) is cliff
    assert verdicts(fp)["rep movsb"] is cliff


def test_the_end_of_glibcs_rep_movsb_window_is_read_once():
    assert glibc.rep_movsb_stop(recorded("amd-zen4-25-17")) == 1 * MiB            # the L2 on AMD
    assert glibc.rep_movsb_stop(recorded("intel-xeon-6-167")) == 0x28e0000          # the non-temporal threshold
    assert glibc.rep_movsb_stop({"non_temporal_threshold": 4 * MiB}) == 4 * MiB     # 2.33 prints no stop


def env_lines(tmp_path, fp) -> list[str]:
    p = run_cli("env", "--build", make_fake_build(tmp_path, ["ok"], fingerprint=fp))
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_env_on_the_zen3_recording(tmp_path):
    lines = env_lines(tmp_path, ZEN3)
    at = next(i for i, line in enumerate(lines) if line.startswith("caches "))
    assert lines[at + 1:at + 6] == [
        "glibc sees   data cache 32 KiB, shared cache 256 MiB (glibc 2.36, ld.so --list-diagnostics)",
        "glibc uses   non-temporal copies from 192 MiB, rep movsb 2.1 KiB..512 KiB, rep stosb from 2 KiB",
        "  disagrees  non-temporal copies from 192 MiB, 6x the 32 MiB L3 memkit measured (glibc's shared cache: "
        "256 MiB): copies of up to 192 MiB store through the cache and evict what it held; memkit copies "
        "non-temporally from 8 MiB here; corrected by GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=8388608",
        "  disagrees  rep movsb for copies of 2.1 KiB to 512 KiB: this CPU's rep movsb runs many times slower when "
        "dst - src is not a multiple of 64 (memkit's strategy row: rep_movsb_align=64), where memkit's "
        "vector loop does not fall; corrected by GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=524288",
        "  together   GLIBC_TUNABLES=" + ZEN3_FIX]


def test_the_docs_examples_are_what_the_recordings_print(tmp_path):
    doc = (REPO / "docs" / "lab.md").read_text().splitlines()
    lines = env_lines(tmp_path / "zen3", ZEN3)
    at = next(i for i, line in enumerate(lines) if line.startswith("caches "))
    for line in lines[at:at + 6]:
        assert "  " + line in doc, line
    p = run_cli("system-check", "--build", make_fake_build(tmp_path / "xeon", ["ok"], fingerprint=XEON_167))
    shown = [line for line in p.stdout.splitlines() if " glibc " in line]
    assert len(shown) == 2 and all("  " + line in doc for line in shown), shown


def test_env_where_glibc_agrees_or_is_not_there(tmp_path):
    lines = env_lines(tmp_path / "xeon", XEON_207)
    assert "glibc uses   non-temporal copies from 99 MiB, rep movsb 2.1 KiB..99 MiB, rep stosb from 2 KiB" in lines
    assert not [line for line in lines if "disagrees" in line or "GLIBC_TUNABLES" in line]
    musl = "not available: the C library is not glibc (the program loader is /lib/ld-musl-x86_64.so.1)"
    lines = env_lines(tmp_path / "musl", dict(FINGERPRINT, **{glibc.KEY: musl}))
    assert f"glibc sees   {musl}" in lines and not [line for line in lines if line.startswith("glibc uses")]
    # A fingerprint from before memkit read glibc: no such rows, nothing fails.
    assert not [k for k, _ in describe_lines(FINGERPRINT) if k.startswith(("glibc sees", "  disagrees"))]
    assert system_check.glibc_findings(FINGERPRINT)[0].verdict == system_check.UNKNOWN


def test_system_check_on_the_zen3_recording(tmp_path):
    build = make_fake_build(tmp_path, ["ok"], fingerprint=ZEN3)
    found = {f["what"]: f for f in json.loads(run_cli("system-check", "--build", build, "--json").stdout)}
    assert found["glibc non-temporal"]["verdict"] == found["glibc rep movsb"]["verdict"] == "costly"
    assert found["glibc rep movsb"]["advice"].endswith("GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=524288")
    p = run_cli("system-check", "--build", build)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "COSTLY  glibc non-temporal      copies from 192 MiB, 6x the 32 MiB L3 memkit measured (glibc's " \
           "shared cache: 256 MiB)" in lines
    assert f"glibc's non-temporal and rep movsb thresholds cost here: export GLIBC_TUNABLES={ZEN3_FIX} " \
           "(for every program started with it)" == lines[-2]
    found = {f.what: f.verdict for f in system_check.glibc_findings(XEON_207)}
    assert found == {"glibc non-temporal": "ok", "glibc rep movsb": "ok"}


def test_compare_and_fleet_see_a_glibc_change_but_not_an_older_run(tmp_path):
    fixed = dict(ZEN3, **{glibc.KEY: dict(ZEN3[glibc.KEY], non_temporal_threshold=8 * MiB)})
    older = {k: v for k, v in ZEN3.items() if k != glibc.KEY}
    assert changed_keys(older, ZEN3) == [] and differences(ZEN3, older) == ([], [])
    loud, _ = differences(ZEN3, fixed)
    assert loud == ["glibc_x86: non_temporal_threshold=201326592 -> 8388608"]
    path = tmp_path / "m.db"
    with Database(path, create=True) as d:
        for fp in (older, ZEN3, fixed):
            d.store_run(started_at="t", finished_at="t", quick=False, fingerprint=fp, results=[fill_result()],
                        hostname="zen3")
    p = run_cli("compare", "--db", path, "1", "2")
    assert p.returncode == 0, p.stderr
    assert "MACHINE CHANGED" not in p.stdout and "glibc_x86" not in p.stdout
    p = run_cli("compare", "--db", path, "2", "3")
    assert "THE MACHINE CHANGED BETWEEN THESE RUNS: glibc_x86: non_temporal_threshold=201326592 -> 8388608" in p.stdout
    with Database(path) as d:
        (st,) = fleet.host_statuses(d)
    assert list(st.changes) == [glibc.KEY]
    assert "CHANGED glibc_x86: non_temporal_threshold=201326592 -> 8388608" in fleet.host_line(st)
    with Database(path) as d:
        page = write_fleet_report(d, tmp_path / "fleet").read_text()
    assert "<b>data cache 32 KiB, shared cache 256 MiB; non-temporal copies from 8 MiB," in page
    assert "was data cache 32 KiB, shared cache 256 MiB; non-temporal copies from 192 MiB," in page


def elf_naming(path, interp: bytes):
    """A minimal x86-64 ELF executable's headers, naming interp as its loader."""
    phoff, interp_at = 64, 64 + 56
    head = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, phoff, 0, 0,
                                                               64, 56, 1, 0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 3, 4, interp_at, interp_at, interp_at, len(interp) + 1, len(interp) + 1, 1)
    path.write_bytes(head + phdr + interp + b"\0")
    return path


def test_the_loader_is_the_one_the_program_names(tmp_path):
    assert glibc.interpreter(elf_naming(tmp_path / "a", b"/opt/glibc/lib/ld-linux-x86-64.so.2")) == \
        "/opt/glibc/lib/ld-linux-x86-64.so.2"
    assert machine.find_loader(tmp_path / "a")[0] == glibc.Path("/opt/glibc/lib/ld-linux-x86-64.so.2")
    loader, why = machine.find_loader(elf_naming(tmp_path / "m", b"/lib/ld-musl-x86_64.so.1"))
    assert loader is None and why == "the C library is not glibc (the program loader is /lib/ld-musl-x86_64.so.1)"
    (tmp_path / "script").write_text("#!/bin/sh\n")
    assert glibc.interpreter(tmp_path / "script") is None and glibc.interpreter(tmp_path / "none") is None
    # A loader that is no glibc 2.33+ one says so, and why.
    live = machine.LiveMachine()
    assert live.glibc_view(loader=glibc.Path("/bin/true")) == \
        "not available: /bin/true --list-diagnostics printed no x86 cache sizes; glibc prints them from 2.33 on"
    assert live.glibc_view(loader=glibc.Path("/bin/false")).startswith("not available: /bin/false --list-diagnostics failed "
                                                           "(exit status 1)")
    assert live.glibc_view(loader=tmp_path / "none").startswith(f"not available: {tmp_path / 'none'} --list-diagnostics: ")


def test_live_this_machines_glibc_view(tmp_path):
    version = running_glibc()
    if version is None:
        pytest.skip("not a glibc system: no glibc ld.so to ask")
    loader, why = machine.find_loader()
    assert loader is not None and loader.name.startswith("ld-linux"), why
    view = machine.LiveMachine().glibc_view()
    if version < (2, 33):
        assert isinstance(view, str) and "2.33" in view
        return
    assert isinstance(view, dict), view
    # 2.33 prints no stop threshold; every other field is there and sane.
    assert set(glibc.FIELDS) - {"rep_movsb_stop_threshold"} <= set(view)
    assert 4096 <= view["data_cache_size"] <= view["shared_cache_size"]
    assert 0 < view["rep_movsb_threshold"] and 0 < view["rep_stosb_threshold"]
    # It is the glibc in force: a GLIBC_TUNABLES the process starts with shows.
    code = "import json; from memkit.lab import machine; print(json.dumps(machine.LiveMachine().glibc_view()))"
    env = cli_env(GLIBC_TUNABLES="glibc.cpu.x86_non_temporal_threshold=8388608")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(p.stdout)["non_temporal_threshold"] == 8388608, p.stderr
    # ... and so does one given for another process's environment (try --glibc-tunables).
    tuned = machine.LiveMachine().glibc_view(env=dict(os.environ, GLIBC_TUNABLES="glibc.cpu.x86_non_temporal_threshold=8388608"))
    assert tuned["non_temporal_threshold"] == 8388608 and tuned["data_cache_size"] == view["data_cache_size"]
    # And the fingerprint every run records holds it.
    bench = real_bench_dir()
    fp = json.loads(run_cli("env", "--build", bench.parent, "--json").stdout)
    assert fp[glibc.KEY] == view


# ---- a GLIBC_TUNABLES setting given to memkit (try and run --glibc-tunables) ----

def test_what_system_check_prints_is_a_setting_the_commands_take():
    setting = glibc.tunables_setting(glibc.checks(ZEN3))
    assert glibc.tunables_argument(setting) == ZEN3_FIX
    assert glibc.tunables_argument("glibc.cpu.hwcaps=-AVX512F_Usable,-AVX2_Usable") == \
        "glibc.cpu.hwcaps=-AVX512F_Usable,-AVX2_Usable"


def test_try_suggests_the_setting_where_glibc_disagrees():
    assert wp.glibc_suggestion(ZEN3) == ("glibc's non-temporal and rep movsb thresholds disagree with this machine: "
                                         f"try --glibc-tunables {ZEN3_FIX} to time glibc tuned beside memkit")
    no_cliff = dict(ZEN3, tunables=ZEN3["tunables"].replace("rep_movsb_align=64", "rep_movsb_align=1"))
    assert wp.glibc_suggestion(no_cliff) == (
        "glibc's non-temporal threshold disagrees with this machine: try --glibc-tunables "
        "glibc.cpu.x86_non_temporal_threshold=8388608 to time glibc tuned beside memkit")
    # where glibc agrees, or memkit has no view of it: nothing
    assert wp.glibc_suggestion(XEON_167) == wp.glibc_suggestion(FINGERPRINT) == wp.glibc_suggestion(None) == ""


# ---- glibc tuned as a baseline ----

@pytest.mark.parametrize("spec, why", [
    ("", "no glibc tunable given"),
    ("glibc.cpu.x86_rep_movsb_threshold", "is not NAME=VALUE"),
    ("glibc.cpu.x86_rep_movsb_threshold=", "is not NAME=VALUE"),
    ("glibc.cpu.x86_rep_movsb_threshold=4096::glibc.malloc.perturb=1", "an empty item"),
    ("MALLOC_ARENA_MAX=2", "only glibc's own tunables"),
    ("x86_rep_movsb_threshold=4096", "only glibc's own tunables"),
    ("glibc.x86_rep_movsb_threshold=4096", "only glibc's own tunables"),
    ("glibc..x86=1", "only glibc's own tunables"),
    ("glibc.cpu.x86_rep_movsb_threshold=4096 glibc.malloc.perturb=1", "a space or a control character"),
])
def test_a_bad_glibc_tunables_spec_is_refused_saying_why(spec, why, tmp_path):
    with pytest.raises(glibc.MemkitError, match=why):
        glibc.tunables_argument(spec)
    # the lab holds its glibc_tunables= to the same rule
    probe = real_bench_dir().parent / "tests" / "lab_glibc_probe"
    p = subprocess.run([str(probe), "--check-args", f"glibc_tunables={spec}"], capture_output=True, text=True)
    assert p.returncode == 2 and "glibc_tunables" in p.stderr, p.stderr


def test_the_tunables_are_read_as_given_or_from_a_file(tmp_path):
    spec = "glibc.cpu.x86_non_temporal_threshold=0x2000000:glibc.cpu.x86_rep_movsb_threshold=4096"
    assert glibc.tunables_argument(spec) == spec
    assert glibc.tunables_argument("GLIBC_TUNABLES=" + spec) == spec
    for text in (f"GLIBC_TUNABLES={spec}\n", f"# memkit tune --glibc\n\nexport GLIBC_TUNABLES='{spec}'\n",
                 f"{spec}\n", f'GLIBC_TUNABLES="{spec}"'):
        (tmp_path / "line").write_text(text)
        assert glibc.tunables_argument(f"@{tmp_path / 'line'}") == spec, text
    (tmp_path / "two").write_text(f"{spec}\n{spec}\n")
    with pytest.raises(glibc.MemkitError, match="expected one line.*found 2 lines"):
        glibc.tunables_argument(f"@{tmp_path / 'two'}")
    (tmp_path / "bad").write_text("GLIBC_TUNABLES=cpu.hwcaps=-AVX2\n")
    with pytest.raises(glibc.MemkitError, match=r"bad: .*only glibc's own tunables"):
        glibc.tunables_argument(f"@{tmp_path / 'bad'}")
    with pytest.raises(glibc.MemkitError, match="cannot read the glibc tunables file"):
        glibc.tunables_argument(f"@{tmp_path / 'missing'}")
    with pytest.raises(glibc.MemkitError, match="no glibc tunable given"):
        glibc.tunables_argument("GLIBC_TUNABLES=")


def test_run_refuses_glibc_tunables_where_nothing_races_glibc(tmp_path):
    build = make_fake_build(tmp_path / "build", ["ok"])
    p = run_cli("run", "ok", "--glibc-tunables", "glibc.malloc.perturb=1", "--db", tmp_path / "r.db",
                env=cli_env(MEMKIT_BUILD=str(build)))
    assert p.returncode != 0 and "none of the experiments to run races glibc" in p.stderr, p.stderr
    p = run_cli("run", "ok", "--glibc-tunables", "perturb=1", "--db", tmp_path / "r.db",
                env=cli_env(MEMKIT_BUILD=str(build)))
    assert p.returncode != 0 and "only glibc's own tunables" in p.stderr, p.stderr


PERTURB = 0x5a   # glibc fills a chunk it hands out with 0xff ^ this (lab_glibc_probe.c)


def probe_records(tmp_path, *args, env=None):
    probe = real_bench_dir().parent / "tests" / "lab_glibc_probe"
    out = tmp_path / "probe.jsonl"
    e = dict(os.environ if env is None else env)
    e.pop("GLIBC_TUNABLES", None)
    p = subprocess.run([str(probe), "--jsonl", str(out), *args], capture_output=True, text=True, env=e)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    return recs[0], {r["series"]: r for r in recs if r["type"] == "measurement"}, \
        [r for r in recs if r["type"] == "verdict"]


def test_glibc_tuned_runs_in_processes_under_the_tunables_paired_with_memkit_there(tmp_path):
    fp, ms, verdicts = probe_records(tmp_path, f"glibc_tunables=glibc.malloc.perturb={PERTURB}")
    assert fp["glibc_tunables"] == f"glibc.malloc.perturb={PERTURB}"
    tuned = 1 + (0xff ^ PERTURB)
    # the tunable reached glibc in the tuned processes, and only there
    assert set(ms["glibc"]["samples"]) == {1} and set(ms["glibc-tuned"]["samples"]) == {tuned}
    assert ms["glibc-tuned"]["baseline"] is None   # no pairing with glibc: another process
    # memkit: paired with glibc as shipped in its processes and with glibc
    # tuned in the tuned ones, as many rounds and processes each
    mk = ms["memkit"]
    assert mk["baseline"]["series"] == "glibc" and set(mk["ratios"]) == {1}
    assert mk["tuned"]["baseline"] == "glibc-tuned" and set(mk["tuned"]["ratios"]) == {tuned}
    assert len(mk["tuned"]["ratios"]) == len(mk["ratios"]) == len(ms["glibc-tuned"]["samples"]) == 2 * 5
    assert mk["tuned"]["process_ratios"] == [tuned, tuned]
    # the ranking weighs glibc tuned beside the others; the note says how it was compared
    (rk,) = [v["data"] for v in verdicts if v.get("kind") == "fastest"]
    assert rk["points"][0]["fastest"] in ("glibc", "memkit") and rk["points"][0]["rival"] == "glibc"
    assert any("across processes, not paired" in v["text"] for v in verdicts)
    # without the argument, nothing of it
    fp, ms, _ = probe_records(tmp_path)
    assert "glibc_tunables" not in fp and set(ms) == {"glibc", "memkit"} and "tuned" not in ms["memkit"]


def test_glibc_tuned_is_refused_where_glibc_tunables_is_set_already(tmp_path):
    probe = real_bench_dir().parent / "tests" / "lab_glibc_probe"
    p = subprocess.run([str(probe), "glibc_tunables=glibc.malloc.perturb=1"], capture_output=True, text=True,
                       env=dict(os.environ, GLIBC_TUNABLES="glibc.malloc.perturb=2"))
    assert p.returncode == 2 and "glibc would not run as shipped" in p.stderr, p.stderr


def synthetic_run(tmp_path):
    """A stored run whose memkit raced glibc at three sizes, as shipped and
    tuned: speed-ups 1.2, 1.5, 0.9 over glibc and 1.0, 1.1, 0.8 over glibc tuned."""
    spec = "glibc.cpu.x86_rep_movsb_threshold=8192"
    fp = dict(FINGERPRINT, glibc_tunables=spec)
    ms, points = [], []
    for size, up, up_tuned in ((1024, 1.2, 1.0), (4096, 1.5, 1.1), (65536, 0.9, 0.8)):
        base = {"experiment": "copy-sweep", "params": {"size": size}, "metric": "gb_per_s", "unit": "GB/s",
                "better": "higher", "stat": "median", "samples": [1.0] * 5, "axis": {"name": "size", "unit": "B"}}
        ms += [dict(base, type="measurement", series="libc", value=1.0, min=1, median=1, max=1, baseline=None),
               dict(base, type="measurement", series="glibc-tuned", value=up / up_tuned, min=1, median=1, max=1,
                    baseline=None),
               dict(base, type="measurement", series="memkit", value=up, min=up, median=up, max=up,
                    baseline={"series": "libc", "params": {"size": size}}, ratios=[up] * 5, ratio=up,
                    ratio_min=up, ratio_max=up,
                    tuned={"baseline": "glibc-tuned", "ratios": [up_tuned] * 5, "ratio": up_tuned,
                           "ratio_lo": up_tuned, "ratio_hi": up_tuned})]
        points.append({"at": f"{size} B", "fastest": "memkit", "tied": [], "rival": "glibc-tuned",
                       "verdict": 1, "slower": 1 / up_tuned})
    verdict = {"type": "verdict", "experiment": "copy-sweep", "kind": "fastest", "text": "memkit fastest",
               "data": {"what": "copy", "ordered": True, "memkit": "memkit", "loss_min": 1.02, "points": points}}
    return fp, ms, [verdict], spec


def test_the_headline_gives_memkit_over_glibc_shipped_and_tuned(tmp_path):
    fp, ms, verdicts, spec = synthetic_run(tmp_path)
    from memkit.lab import ranking
    from memkit.results import records
    v = glibc.versus_glibc([records.normalized(m) for m in ms], ranking.memkit_series(verdicts))
    gm = lambda *xs: (xs[0] * xs[1] * xs[2]) ** (1 / 3)
    assert v["points"] == 3 and v["baseline"] == "glibc-tuned"
    assert v["shipped"] == pytest.approx((gm(1.2, 1.5, 0.9), 0.9, 1.5))
    assert v["tuned"] == pytest.approx((gm(1.0, 1.1, 0.8), 0.8, 1.1))
    line = glibc.headline([records.normalized(m) for m in ms], {"memkit"}, spec)
    assert f"over glibc as shipped {gm(1.2, 1.5, 0.9):.3f}x (0.90..1.50)" in line
    assert f"over glibc tuned {gm(1.0, 1.1, 0.8):.3f}x (0.80..1.10)" in line
    assert spec in line and "only across processes" in line
    # stored and read back, the report's headline says the same
    from memkit.results.result import Result
    from memkit.report.run_report import write_report
    with Database(tmp_path / "r.db", create=True) as db:
        r = Result("copy-sweep", "", "", "ok", 1.0, [], fingerprint=fp,
                   measurements=[records.normalized(m) for m in ms],
                   verdicts=[records.verdict(x) for x in verdicts])
        run_id = db.store_run(started_at="2026-11-28T00:00:00+00:00", finished_at="2026-11-28T00:01:00+00:00",
                              quick=True, fingerprint=fp, results=[r], hostname="h")
        assert db.run(run_id)["fingerprint"]["glibc_tunables"] == spec
        # compare and the report say which tunables a run raced
        assert f"glibc_tunables: (none) -> {spec}" in differences(FINGERPRINT, fp)[1]
        (stored,) = [m for m in db.measurements(run_id) if m["series"] == "memkit" and m["params"]["size"] == 4096]
        assert stored["tuned"]["ratio"] == 1.1
        page = write_report(db, run_id, tmp_path / "report").read_text()
    assert "memkit against glibc as shipped and tuned" in page and line.replace("'", "&#x27;") in page
