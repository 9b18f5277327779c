# SPDX-License-Identifier: Apache-2.0
"""memkit fleet: one line per host (its latest run, what changed on it since
its previous run, what moved beyond the noise), grouped by CPU model."""

from __future__ import annotations

import json

from memkit.commands._common import add_db_option, db_path
from memkit.errors import MemkitError
from memkit.comparison import fleet
from memkit.store.db import Database

NAME = "fleet"
HELP = "every host's latest run: fingerprint changes and measurements moved beyond the noise, by CPU model"


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    add_db_option(p)


def main(args) -> int:
    with Database(db_path(args)) as db:
        statuses = fleet.host_statuses(db)
        where = db.path
    if not statuses:
        raise MemkitError(f"no runs in {where}; `memkit run` first")
    if args.json:
        print(json.dumps(fleet.to_json(statuses), indent=2))
        return 0
    print(f"{len(statuses)} host{'s' if len(statuses) > 1 else ''} in {where}")
    for line in fleet.text_lines(statuses):
        print(line)
    return 0
