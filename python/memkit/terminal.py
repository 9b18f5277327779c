# SPDX-License-Identifier: Apache-2.0
"""Writing to the user's terminal: a live progress line (occasional plain
lines elsewhere), and text from outside (a host name, an experiment's
stderr, an argument) with its control characters made visible."""

from __future__ import annotations

import re
import shutil
import sys
import time

from memkit.results.result import Progress

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def printable(text: str) -> str:
    """text with control characters (a newline, an escape sequence that
    would clear the screen) as \\xNN: echoed, it stays one line of text."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


class ProgressLine:
    """Shows "progress:" lines of an experiment as one line rewritten in
    place (a terminal), or at most one line every `every` seconds (a log)."""

    def __init__(self, stream=None, every: float = 10.0):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every = every
        self.last = 0.0
        self.shown = False
        self.current = None

    def update(self, p: Progress, prefix: str = ""):
        pct = 100.0 * p.done / p.total if p.total else 0.0
        text = f"{prefix}{p.experiment}: {p.done}/{p.total} ({pct:3.0f}%) {p.seconds:6.1f}s  {p.what}"
        now = time.monotonic()
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r\x1b[K" + text[:width])
            self.stream.flush()
            self.shown = True
        elif now - self.last >= self.every or p.experiment != self.current or p.done == p.total:
            self.stream.write(text + "\n")
            self.stream.flush()
            self.last = now
        self.current = p.experiment

    def clear(self):
        if self.tty and self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        self.shown = False
