# SPDX-License-Identifier: Apache-2.0
"""memkit system-check: what makes timings noisy, in one screen, from the
fingerprint the lab records (and the load now)."""

import json

from conftest import FINGERPRINT, make_fake_build, real_bench_dir, run_cli

NOISY_MACHINE = dict(FINGERPRINT, governor="powersave", boost="on", smt="on", hypervisor="KVMKVMKVM",
                     thp="[always] madvise never", timing_cpu=3)
QUIET_MACHINE = dict(FINGERPRINT, governor="performance", boost="off", smt="off", hypervisor="none",
                     thp="always [madvise] never", timing_cpu=1)


def check(tmp_path, fp):
    build = make_fake_build(tmp_path / "b", ["ok"], fingerprint=fp)
    p = run_cli("system-check", "--build", build)
    assert p.returncode == 0, p.stderr
    j = run_cli("system-check", "--build", build, "--json")
    return p.stdout.splitlines(), {f["what"]: f for f in json.loads(j.stdout)}


def test_each_source_of_noise_is_named_with_what_to_do(tmp_path):
    lines, found = check(tmp_path, NOISY_MACHINE)
    assert len(lines) <= 24   # one screen
    for what in ("frequency governor", "turbo/boost", "SMT", "transparent huge pages", "virtual machine"):
        assert found[what]["verdict"] == "noisy" and found[what]["advice"], what
    assert found["frequency governor"]["state"] == "powersave" and "cpupower" in found["frequency governor"]["advice"]
    assert found["virtual machine"]["state"].startswith("yes (KVMKVMKVM")
    assert found["timing CPU"] == {"what": "timing CPU", "verdict": "ok", "state": "CPU 3",
                                   "advice": "single-threaded experiments pin each process to it"}
    assert "machine load" in found
    # the last line sums up (the load now may add itself: it is measured, not faked)
    assert lines[-1].startswith("frequency governor, turbo/boost, SMT, transparent huge pages, virtual machine",
                                lines[-1].index(": ") + 2)


def test_a_quiet_machine_and_what_cannot_be_known(tmp_path):
    _, found = check(tmp_path / "q", QUIET_MACHINE)
    for what in ("frequency governor", "turbo/boost", "SMT", "transparent huge pages", "virtual machine"):
        assert found[what]["verdict"] == "ok", what
    _, found = check(tmp_path / "u", FINGERPRINT)   # an older fingerprint: no boost, smt, ...
    assert found["turbo/boost"]["verdict"] == "unknown" and found["timing CPU"]["verdict"] == "unknown"


def test_the_real_fingerprint_says_each(tmp_path):
    bench = real_bench_dir()
    p = run_cli("system-check", "--build", bench.parent, "--json")
    assert p.returncode == 0, p.stderr
    found = {f["what"]: f for f in json.loads(p.stdout)}
    noise = {"frequency governor", "turbo/boost", "SMT", "transparent huge pages", "virtual machine",
             "machine load", "timing CPU"}
    assert noise <= set(found)
    # glibc's thresholds (test_glibc.py), or why they cannot be read here
    assert set(found) - noise in ({"glibc non-temporal", "glibc rep movsb"}, {"glibc thresholds"})
    assert found["timing CPU"]["verdict"] == "ok"   # this process may run on a known set of CPUs
    p = run_cli("env", "--build", bench.parent, "--json")
    fp = json.loads(p.stdout)
    assert {"boost", "smt", "hypervisor", "timing_cpu"} <= set(fp)
