# SPDX-License-Identifier: Apache-2.0
"""A run is never measured twice for want of a database: RunStore stores a
run experiment by experiment as they finish, and when the database stops
taking them (locked beyond the busy timeout, a PostgreSQL server gone) the
whole run goes to a spill file instead, which `memkit import FILE` stores
later.

A spill file is JSON beginning with {"memkit_spill": 1 (how memkit knows it
wrote it); it holds the run (when, where, the command), the machine's
fingerprint, every experiment's result, and the id of the incomplete run
the database may hold part of it under (import replaces that run)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError
from memkit.results.result import Result
from memkit.store import db as database
from memkit.store.backends import url_scheme
from memkit.store.outdir import starts_with, write_file

FORMAT = 1
MARKER = b'{"memkit_spill": '
SUFFIX = ".memkit-run.json"


class RunStore:
    """The run under way: add() each finished experiment, then finish()."""

    def __init__(self, db, *, started_at: str, quick: bool, fingerprint: Optional[dict], hostname: str,
                 command: str):
        self.db = db
        self.run = dict(started_at=started_at, quick=quick, hostname=hostname, command=command)
        self.fingerprint = fingerprint
        self.results: list = []
        self.run_id: Optional[int] = None
        self.failure: Optional[str] = None   # why the database stopped taking the run
        self.spilled: Optional[Path] = None

    def add(self, r):
        self.results.append(r)
        if self.failure is None:
            try:
                self.run_id = self.db.add_result(self.run_id, r, fingerprint=self.fingerprint, **self.run)
            except MemkitError as e:
                self.failure = str(e)

    def finish(self, *, finished_at: str, fingerprint: Optional[dict], load: dict,
               incomplete: Optional[str] = None) -> Optional[int]:
        """The run's id in the database, or None when it was spilled (see
        .spilled) or nothing finished."""
        self.fingerprint = fingerprint or self.fingerprint
        if not self.results:
            return None
        if self.failure is None:
            try:
                self.db.finish_run(self.run_id, finished_at=finished_at, fingerprint=self.fingerprint,
                                   load=load, incomplete=incomplete)
                return self.run_id
            except MemkitError as e:
                self.failure = str(e)
        self.spilled = write_spill(self.db.path, dict(self.run, finished_at=finished_at, load=load,
                                                      incomplete=incomplete),
                                   self.fingerprint, self.results, self.run_id)
        return None

    def spill_message(self) -> str:
        return kept_message(self.failure, self.spilled, len(self.results), self.db.path)


def kept_message(failure: str, spilled: Path, experiments: int, db_name: str) -> str:
    """Why the database did not take a run, and where it is kept instead."""
    return (f"{failure}; the run's {experiments} experiment(s) are kept in {spilled}: "
            f"`memkit import {spilled}` stores them (in the same database: --db {db_name})")


def _places(db_name: str) -> list[Path]:
    """Where a spill file may go, in order: beside an SQLite database, the
    results directory, the current directory."""
    places = [] if url_scheme(db_name) else [Path(db_name).absolute().parent]
    return places + [database.results_dir(), Path.cwd()]


def write_spill(db_name: str, run: dict, fingerprint, results: list, partial_run: Optional[int]) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    body = json.dumps({"database": db_name, "partial_run": partial_run, "run": run, "fingerprint": fingerprint,
                       "results": [dataclasses.asdict(r) for r in results]}, indent=1)
    text = f'{MARKER.decode()}{FORMAT},\n' + body[2:] + "\n"   # the marker first, on the first line
    errors = []
    for place in _places(db_name):
        path = place / f"run-{stamp}-{os.getpid()}{SUFFIX}"
        try:
            return write_file(path, text, "the run", None)   # a new file only
        except MemkitError as e:
            errors.append(str(e))
    raise MemkitError("the run could not be stored nor spilled to a file: " + "; ".join(errors))


is_spill = starts_with(MARKER)


def read_spill(path: Path) -> dict:
    if not Path(path).is_file():   # nor a FIFO, whose read would hang
        raise MemkitError(f"cannot import {path}: {'not a regular file' if os.path.lexists(path) else 'no such file'}")
    if not is_spill(path):
        raise MemkitError(f"cannot import {path}: not a run memkit spilled to a file "
                          f"(it begins with {MARKER.decode()}...)")
    try:
        data = json.loads(Path(path).read_text())
        if data["memkit_spill"] != FORMAT:
            raise MemkitError(f"cannot import {path}: spill format {data['memkit_spill']} is not one "
                              f"this memkit reads")
        data["results"] = [Result(**r) for r in data["results"]]
        for key in ("started_at", "finished_at", "quick", "hostname", "command"):
            data["run"][key]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MemkitError(f"cannot import {path}: it is damaged ({type(e).__name__}: {e})") from None
    if not data["results"]:   # memkit spills a run with at least one; a run of nothing would be stored as one
        raise MemkitError(f"cannot import {path}: it holds no experiment's results, nothing to store")
    return data
