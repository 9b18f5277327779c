# SPDX-License-Identifier: Apache-2.0
"""The profile `memkit tune` writes: where the library looks for it, how
memkit knows one it wrote, and the file itself (the settings that moved, the
others as comments, the CPU it was measured on).

A profile is MEMKIT_TUNABLES settings, one `name=value` a line, `#`
comments, and a `cpu=` line naming the CPU it was measured on (libmemkit
ignores it on another model).  The library looks for it at $MEMKIT_PROFILE,
else $XDG_CONFIG_HOME/memkit/profile, else ~/.config/memkit/profile;
MEMKIT_TUNABLES overrides it.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from memkit.store.outdir import starts_with, write_file
from memkit.tuning.tune import Choice


def default_profile_path(env=os.environ) -> Path:
    if env.get("MEMKIT_PROFILE") not in (None, "", "none"):
        return Path(env["MEMKIT_PROFILE"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "."), ".config")
    return Path(base) / "memkit" / "profile"


# ---- the profile ----

# How memkit recognises a profile it wrote (and may replace): its first line.
PROFILE_MARKER = b"# memkit profile"
profile_is_ours = starts_with(PROFILE_MARKER)


def cpu_line(fp: dict) -> str:
    """The profile's "cpu=" line, which libmemkit compares with the CPU it runs on."""
    return (f"cpu={fp.get('vendor', '?')} family={fp.get('family', '?')} model={fp.get('model', '?')} "
            f"microcode={fp.get('microcode', '?')}")


def write_profile(path: Path, choices: list[Choice], fingerprint: dict, method: str) -> None:
    """Writes the settings that moved off the defaults; the others as
    comments, so a new memkit's table still applies to them."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    lines = [
        "# memkit profile, written by `memkit tune`; read by libmemkit at load time.",
        f"# machine: {fingerprint.get('cpu_model', '?')} (microcode {fingerprint.get('microcode', '?')}), "
        f"kernel {fingerprint.get('kernel', '?')}, glibc {fingerprint.get('glibc', '?')}",
        f"# measured: {now}.  MEMKIT_TUNABLES overrides any line; delete this file to go back",
        f"# to the built-in defaults (strategy row {fingerprint.get('strategy', '?')}).  "
        "`memkit tune --check` measures what this profile changes.",
        f"# method: {method}",
        "",
        "# the CPU measured on: libmemkit ignores this profile on another vendor, family or model",
        cpu_line(fingerprint),
    ]
    for c in choices:
        if c.moved:
            lines += ["", f"# {c.why}", c.setting()]
    kept = [c for c in choices if not c.moved]
    if kept:
        lines += ["", "# kept at the built-in default (not written, so a newer memkit's table applies):"]
        lines += [f"#   {c.name}={c.show(c.default)}: {c.why}" for c in kept]
    write_file(path, "\n".join(lines) + "\n", "the profile", profile_is_ours)
