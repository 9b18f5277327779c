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

from conftest import FINGERPRINT, REPO, cli_env, make_fake_build, real_bench_dir, run_cli
from memkit.comparison import fleet
from memkit.lab import glibc, system_check
from memkit.lab.fingerprint import changed_keys, describe_lines, differences
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
    # Zen 5's rep movsb pays 1.3-1.7x misaligned, as glibc's loop: no cliff.
    assert verdicts(dict(ZEN3, family=26)) == {"non-temporal": True, "rep movsb": False}
    # The same glibc on an Intel CPU: its rep movsb window costs nothing known.
    assert verdicts(dict(ZEN3, vendor="GenuineIntel", family=6))["rep movsb"] is False
    # No L3 measured: memkit cannot tell.
    assert verdicts(dict(ZEN3, cache={"l1d": 32768}))["non-temporal"] is None
    # Without memkit's own copy threshold, the fix is the generic row's L3/2.
    (nt, _) = glibc.checks(dict(ZEN3, tunables=""))
    assert nt.value == 16 * MiB


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
        "  disagrees  rep movsb for copies of 2.1 KiB to 512 KiB: this CPU's rep movsb runs 5-40x slower when "
        "dst - src is not a multiple of 64 (copy-sweep, Zen 3 and Zen 4), where memkit's vector loop does not "
        "fall; corrected by GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=524288",
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
    assert glibc.find_loader(tmp_path / "a")[0] == glibc.Path("/opt/glibc/lib/ld-linux-x86-64.so.2")
    loader, why = glibc.find_loader(elf_naming(tmp_path / "m", b"/lib/ld-musl-x86_64.so.1"))
    assert loader is None and why == "the C library is not glibc (the program loader is /lib/ld-musl-x86_64.so.1)"
    (tmp_path / "script").write_text("#!/bin/sh\n")
    assert glibc.interpreter(tmp_path / "script") is None and glibc.interpreter(tmp_path / "none") is None
    # A loader that is no glibc 2.33+ one says so, and why.
    assert glibc.read(glibc.Path("/bin/true")) == \
        "not available: /bin/true --list-diagnostics printed no x86 cache sizes; glibc prints them from 2.33 on"
    assert glibc.read(glibc.Path("/bin/false")).startswith("not available: /bin/false --list-diagnostics failed "
                                                           "(exit status 1)")
    assert glibc.read(tmp_path / "none").startswith(f"not available: {tmp_path / 'none'} --list-diagnostics: ")


def running_glibc():
    """This process's glibc version as (major, minor), None if not glibc."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (AttributeError, ValueError, OSError):
        return None
    return tuple(int(x) for x in version.split(".")[:2]) if name == "glibc" else None


def test_live_this_machines_glibc_view(tmp_path):
    version = running_glibc()
    if version is None:
        pytest.skip("not a glibc system: no glibc ld.so to ask")
    loader, why = glibc.find_loader()
    assert loader is not None and loader.name.startswith("ld-linux"), why
    view = glibc.read()
    if version < (2, 33):
        assert isinstance(view, str) and "2.33" in view
        return
    assert isinstance(view, dict), view
    # 2.33 prints no stop threshold; every other field is there and sane.
    assert set(glibc.FIELDS) - {"rep_movsb_stop_threshold"} <= set(view)
    assert 4096 <= view["data_cache_size"] <= view["shared_cache_size"]
    assert 0 < view["rep_movsb_threshold"] and 0 < view["rep_stosb_threshold"]
    # It is the glibc in force: a GLIBC_TUNABLES the process starts with shows.
    code = "import json; from memkit.lab import glibc; print(json.dumps(glibc.read()))"
    env = cli_env(GLIBC_TUNABLES="glibc.cpu.x86_non_temporal_threshold=8388608")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(p.stdout)["non_temporal_threshold"] == 8388608, p.stderr
    # And the fingerprint every run records holds it.
    bench = real_bench_dir()
    fp = json.loads(run_cli("env", "--build", bench.parent, "--json").stdout)
    assert fp[glibc.KEY] == view
