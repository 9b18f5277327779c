# SPDX-License-Identifier: Apache-2.0
"""A short-lived helper program run for its standard output (an
experiment's --describe, memkit-tunables, glibc's loader), and the words
for how a process ended."""

from __future__ import annotations

import signal
import subprocess

from memkit.errors import MemkitError


def run_quiet(argv: list[str], what: str, timeout: float = 30, pass_stderr: bool = False) -> str:
    """A helper program's standard output; its standard error is kept for
    the error message, or (pass_stderr) goes to ours as it comes."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=None if pass_stderr else subprocess.PIPE,
                           text=True, timeout=timeout)
    except OSError as e:
        raise MemkitError(f"cannot run {what}: {e.strerror or e}")
    except subprocess.TimeoutExpired:
        raise MemkitError(f"{what} did not answer within {timeout:.0f} s")
    if p.returncode != 0:
        why = "" if pass_stderr else f": {last_line(p.stderr)}"
        raise MemkitError(f"{what} failed ({describe_exit(p.returncode)}){why}")
    return p.stdout


def describe_exit(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def last_line(text: str) -> str:
    lines = [l for l in text.strip().splitlines() if l.strip() and not l.startswith("progress:")]
    return lines[-1].strip() if lines else "no message"
