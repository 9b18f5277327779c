# SPDX-License-Identifier: Apache-2.0
"""memkit import: store a run that `memkit run` could not store and spilled
to a file (see memkit.store.spill)."""

from __future__ import annotations

from pathlib import Path

from memkit.commands._common import add_db_option, db_path
from memkit.errors import MemkitError
from memkit.store import spill
from memkit.store.db import AlreadyStored, Database

NAME = "import"
HELP = "store a run that could not be stored and was spilled to a file (memkit run names the file)"


def add_arguments(p):
    p.add_argument("file", metavar="FILE", help=f"the spilled run (*{spill.SUFFIX})")
    add_db_option(p)


def main(args) -> int:
    data = spill.read_spill(Path(args.file))
    run = data["run"]
    with Database(db_path(args), create=True) as db:
        try:
            run_id = db.store_run(started_at=run["started_at"], finished_at=run["finished_at"], quick=run["quick"],
                                  fingerprint=data["fingerprint"], results=data["results"], hostname=run["hostname"],
                                  command=run["command"], load=run.get("load"), incomplete=run.get("incomplete"),
                                  replaces=data.get("partial_run") if data.get("database") == db.path else None,
                                  once=True)
        except AlreadyStored as e:   # an import run twice: the run is stored once
            raise MemkitError(f"{args.file} is stored already: run {e.run_id} in {db.path} has its start, end, "
                              f"host and command; nothing was imported (the file may be deleted)") from None
        where = db.path
    print(f"stored {args.file} as run {run_id} in {where} ({len(data['results'])} experiment(s)); "
          f"the file may be deleted")
    return 0
