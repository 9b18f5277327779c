# SPDX-License-Identifier: Apache-2.0
"""The preload library as the commands that run programs under it need it
(`memkit record`, `memkit try`): where it is, and whether a program can take
it at all."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from memkit.errors import MemkitError
from memkit.lab import experiments
from memkit.lab.experiments import PRELOAD_NAME


def is_shared_library(path: Path) -> bool:
    """An x86-64 ELF shared object, the only kind the loader preloads (it
    skips any other file with a message on the program's standard error and
    runs the program without it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[4:6] != b"\x02\x01":   # 64-bit, little-endian
        return False
    e_type, e_machine = struct.unpack_from("<HH", head, 16)
    return e_type == ET_DYN and e_machine == EM_X86_64


ET_DYN, EM_X86_64 = 3, 62


def find_preload(option, build_option) -> Path:
    given = option or os.environ.get("MEMKIT_PRELOAD")
    if given:
        where = "--preload" if option else "MEMKIT_PRELOAD"
        if not Path(given).is_file():
            raise MemkitError(f"no preload library at {given} ({where})")
        if not is_shared_library(Path(given)):
            raise MemkitError(f"{given} ({where}): not an x86-64 shared library; the loader would skip it and "
                              f"run the program without memkit")
        return Path(given).resolve()
    try:
        bench = experiments.find_bench_dir(build_option)
    except MemkitError:
        bench = None
    found = experiments.native_file(bench, PRELOAD_NAME) if bench else None
    if found:
        return found
    raise MemkitError(f"no {PRELOAD_NAME} found (build with `make`, or pass --preload SO)")


def elf_is_static(path: str) -> bool:
    """An ELF executable without a program interpreter (PT_INTERP): no
    dynamic loader, so no LD_PRELOAD."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:   # 64-bit ELF only
                return False
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    return not any(struct.unpack_from("<I", table, i * phentsize)[0] == 3 for i in range(phnum))
