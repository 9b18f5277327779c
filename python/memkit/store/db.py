# SPDX-License-Identifier: Apache-2.0
"""The results database: every run, its machine fingerprint, its
measurements and verdicts.

Location: --db PATH or URL, else $MEMKIT_DB, else results/memkit.db under
the current directory.  A path is an SQLite file (the embedded default); a
postgresql://USER@HOST:PORT/DB URL is a PostgreSQL database that many
machines write to (memkit.store.backends holds what differs between the two).

The tables, their versions and how a record maps onto a row: memkit.store.schema.

A run is written experiment by experiment, each in its own transaction
(add_result; the first creates the run, marked incomplete until finish_run):
an interrupted, failed or killed run keeps what finished, marked incomplete,
and every earlier run intact.  store_run writes a whole run in one
transaction (a `memkit try`, an imported spill file).
Creating the schema (or migrating it) is one transaction too, taken by one
process at a time, so processes that start on a new database at once all
find it complete.  Only `memkit run` creates a database; every other command
reads, and refuses a file that holds no memkit schema.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError
from memkit.results import records
from memkit.store.backends import CorruptDatabase, open_backend
from memkit.store.schema import (MEASUREMENT_FIELDS, MEASUREMENT_NEWER_COLUMNS, MIGRATIONS, NUMERIC_FIELDS, SCHEMA,
                                 SCHEMA_VERSION, TABLES, canonical_params, row_to_measurement, statements)

RESULTS_IN_CHECKOUT = "results"
DB_FILE = "memkit.db"
# For --help: where the database goes by default (results_dir()).
DEFAULT_PLACES = (f"{RESULTS_IN_CHECKOUT}/{DB_FILE} of the memkit checkout it runs in, else "
                  f"$XDG_DATA_HOME/memkit/{DB_FILE} (~/.local/share/memkit/{DB_FILE})")

# A run's `incomplete` while it is under way; what a killed run keeps.
UNFINISHED = "stopped before it ended (killed, or still running)"



class AlreadyStored(MemkitError):
    """store_run(once=True) found the run in the database already."""

    def __init__(self, run_id: int):
        super().__init__(f"run {run_id} holds it already")
        self.run_id = run_id


def memkit_checkout(start: Path) -> Optional[Path]:
    """The memkit checkout start lies in (its root), or None."""
    for d in (start, *start.parents):
        if (d / "include" / "memkit.h").is_file() and (d / "python" / "memkit").is_dir():
            return d
    return None


def results_dir() -> Path:
    """Where results go unless told otherwise: results/ of the memkit
    checkout the command runs in, else the user's data directory
    ($XDG_DATA_HOME/memkit, ~/.local/share/memkit): an installed memkit
    run from / must not make /results."""
    checkout = memkit_checkout(Path.cwd())
    if checkout:
        return checkout / RESULTS_IN_CHECKOUT
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"   # the spec ignores relative ones
    return base / "memkit"


def default_path() -> str:
    return os.environ.get("MEMKIT_DB") or str(results_dir() / DB_FILE)


def fingerprint_digest(fp: dict) -> str:
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()


class Database:
    """An open results database: a file path (SQLite) or a postgresql:// URL.
    `create` (for `run`) makes a missing database, migrates an older one and
    checks it can be written before anything runs; without it the database
    must exist and hold memkit's schema, and nothing is written to it except
    a migration."""

    def __init__(self, target, create: bool = False):
        self.backend = open_backend(target, create)
        self.path = self.backend.name          # what messages call it
        self.conn = self.backend.conn
        try:
            self._check_or_create(create)
        except BaseException as e:
            self._rollback()
            self.backend.close()
            if isinstance(e, self.backend.errors):
                raise self.backend.error(e) from None
            raise

    def _rollback(self):
        try:
            if self.backend.in_transaction:
                self.backend.execute("ROLLBACK")
        except self.backend.errors:
            pass

    def _check_or_create(self, create: bool):
        b = self.backend
        # One transaction from the first look to the last change: a second
        # process creating the same database waits, then finds it complete.
        b.begin(write=create)
        if create and b.kind == "postgresql":
            b.lock_schema()
        version, names = b.schema_version(), b.tables()
        # A new SQLite file is empty; a PostgreSQL database may hold others' tables.
        fresh = not names if b.kind == "sqlite" else not names & set(TABLES)
        if version == 0 and fresh:
            if not create:
                raise MemkitError(f"{self.path} holds no memkit results yet (`memkit run --db {self.path}` "
                                  "creates them)")
            for stmt in statements(SCHEMA):
                b.execute(b.ddl(stmt))
            version = 1
        elif version < 0:
            raise MemkitError(f"{self.path} has an unknown schema version {version}: not a database memkit "
                              "wrote, or a damaged one")
        elif version > SCHEMA_VERSION:
            raise MemkitError(f"{self.path} has schema version {version}, newer than this memkit's "
                              f"{SCHEMA_VERSION}: upgrade memkit")
        elif version == 0 or not set(TABLES) <= names:
            raise MemkitError(f"{self.path} is not a memkit results database (schema version {version})")
        migrate = version < SCHEMA_VERSION
        if migrate and not create:
            # A reader may migrate too, but only under the writers' lock.
            b.execute("ROLLBACK")
            b.begin(write=True)
            if b.kind == "postgresql":
                b.lock_schema()
            version = b.schema_version()
        for v in range(version + 1, SCHEMA_VERSION + 1):
            for stmt in MIGRATIONS.get(v, ()):
                b.execute(b.ddl(stmt))
        if version != SCHEMA_VERSION or create:
            if version == SCHEMA_VERSION:
                b.probe_write()
            b.set_schema_version(SCHEMA_VERSION)
        b.execute("COMMIT")
        # A file damaged behind our back fails here rather than mid-report.
        b.check_integrity()

    def close(self):
        self.backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- writing ----

    def store_run(self, *, started_at: str, finished_at: str, quick: bool, fingerprint: Optional[dict],
                  results: list, hostname: str = "", command: str = "", load: Optional[dict] = None,
                  incomplete: Optional[str] = None, replaces: Optional[int] = None, once: bool = False) -> int:
        """Writes one run (a list of memkit.results.result.Result) in a single transaction.
        `load`: {"load_avg", "steal_pct", "busy"} as memkit.lab.load measured it;
        `incomplete`: why the run did not finish (None: it did);
        `replaces`: an incomplete run holding part of this one (an imported
        spill file's), deleted in the same transaction if it is still there;
        `once`: raise AlreadyStored when the database holds this run already
        (an imported spill file's: the same start, end, host, command and
        completeness), checked in the same transaction as the write."""
        def write():
            if replaces is not None:
                self.backend.execute("DELETE FROM runs WHERE id = ? AND incomplete IS NOT NULL"
                                     " AND started_at = ?", (replaces, started_at))
            if once:
                same = self.backend.execute(
                    "SELECT id FROM runs WHERE started_at = ? AND finished_at = ? AND COALESCE(hostname, '') = ?"
                    " AND COALESCE(command, '') = ? AND COALESCE(incomplete, '') = ? ORDER BY id",
                    (started_at, finished_at, hostname or "", command or "", incomplete or "")).fetchone()
                if same is not None:
                    raise AlreadyStored(same["id"])
            run_id = self._insert_run(started_at, quick, fingerprint, hostname, command)
            for r in results:
                self._insert_result(run_id, r)
            self._finish(run_id, finished_at, fingerprint, load, incomplete)
            return run_id
        return self._write(write)

    def add_result(self, run_id: Optional[int], r, *, started_at: str, quick: bool,
                   fingerprint: Optional[dict], hostname: str = "", command: str = "") -> int:
        """Stores one finished experiment of a run under way, in its own
        transaction; the first one creates the run (marked incomplete until
        finish_run), so a run killed before anything finished leaves nothing."""
        def write():
            rid = run_id
            if rid is None:
                rid = self._insert_run(started_at, quick, fingerprint, hostname, command)
                self.backend.execute("UPDATE runs SET incomplete = ? WHERE id = ?", (UNFINISHED, rid))
            self._insert_result(rid, r)
            return rid
        return self._write(write)

    def finish_run(self, run_id: int, *, finished_at: str, fingerprint: Optional[dict],
                   load: Optional[dict] = None, incomplete: Optional[str] = None) -> None:
        """The run's end: when, the machine's load, and complete or why not."""
        self._write(lambda: self._finish(run_id, finished_at, fingerprint, load, incomplete))

    def _write(self, write):
        b = self.backend
        try:
            b.begin(write=True)
            out = write()
            b.execute("COMMIT")
            return out
        except BaseException as e:
            self._rollback()
            if isinstance(e, b.errors):
                raise b.error(e, "store the run in") from None
            raise

    def _insert_run(self, started_at, quick, fingerprint, hostname, command) -> int:
        fp_id = self._fingerprint_id(fingerprint) if fingerprint else None
        profile = (fingerprint or {}).get("profile", "") or ""
        return self.backend.insert(
            "INSERT INTO runs (started_at, finished_at, quick, fingerprint_id, profile, hostname, command)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)", (started_at, started_at, int(quick), fp_id, profile, hostname, command))

    def _insert_result(self, run_id: int, r):
        b = self.backend
        cols = tuple(col for col, _ in MEASUREMENT_NEWER_COLUMNS)
        b.execute("INSERT INTO experiments (run_id, name, seed, description, status, seconds, args,"
                  " error, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (run_id, r.name, r.seed, r.description, r.status, r.seconds,
                   json.dumps(list(r.args)), r.error, r.output))
        b.executemany(
            "INSERT INTO measurements (run_id, experiment, params, " +
            ", ".join(MEASUREMENT_FIELDS + cols) + ") VALUES (?, ?, ?" +
            ", ?" * (len(MEASUREMENT_FIELDS) + len(cols)) + ")",
            ((run_id, r.name, canonical_params(m.get("params"))) +
             tuple(m.get(f) for f in MEASUREMENT_FIELDS) + tuple(get(m) for _, get in MEASUREMENT_NEWER_COLUMNS)
             for m in map(records.normalized, r.measurements)))
        b.executemany("INSERT INTO verdicts (run_id, experiment, seq, text, kind, data) "
                      "VALUES (?, ?, ?, ?, ?, ?)",
                      ((run_id, r.name, i, v["text"], v["kind"],
                        None if v["data"] is None else json.dumps(v["data"], sort_keys=True))
                       for i, v in enumerate(map(records.verdict, r.verdicts))))

    def _finish(self, run_id, finished_at, fingerprint, load, incomplete):
        load = load or {}
        fp_id = self._fingerprint_id(fingerprint) if fingerprint else None
        self.backend.execute(
            "UPDATE runs SET finished_at = ?, load_avg = ?, steal_pct = ?, busy = ?, incomplete = ?,"
            " fingerprint_id = COALESCE(?, fingerprint_id), profile = COALESCE(?, profile) WHERE id = ?",
            (finished_at, load.get("load_avg"), load.get("steal_pct"), load.get("busy") or "", incomplete,
             fp_id, (fingerprint or {}).get("profile", "") if fingerprint else None, run_id))

    def _fingerprint_id(self, fp: dict) -> int:
        # Insert-if-absent then read: two machines with one new fingerprint
        # both end up with the same row.
        digest = fingerprint_digest(fp)
        self.backend.execute(
            "INSERT INTO fingerprints (digest, cpu_model, microcode, kernel, glibc, tunables, profile,"
            " memkit_commit, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING",
            (digest, fp.get("cpu_model"), fp.get("microcode"), fp.get("kernel"), fp.get("glibc"),
             fp.get("tunables"), fp.get("profile"), fp.get("memkit_commit"),
             json.dumps(fp, sort_keys=True)))
        return self.backend.execute("SELECT id FROM fingerprints WHERE digest = ?", (digest,)).fetchone()["id"]

    # ---- reading ----

    def _query(self, sql, args=()) -> list[dict]:
        try:
            return [dict(r) for r in self.backend.execute(sql, args).fetchall()]
        except self.backend.errors as e:
            raise self.backend.error(e, "read") from None

    def runs(self, host: Optional[str] = None) -> list[dict]:
        """Every run (of one host, if given), oldest first, with its fingerprint (dict)."""
        sql = ("SELECT r.*, f.json AS fingerprint FROM runs r"
               " LEFT JOIN fingerprints f ON f.id = r.fingerprint_id")
        args = ()
        if host is not None:
            sql += " WHERE r.hostname = ?"
            args = (host,)
        out = []
        for d in self._query(sql + " ORDER BY r.id", args):
            if not isinstance(d["id"], int):
                raise CorruptDatabase(self.path, f"a run's id is {d['id']!r}")
            # A damaged fingerprint costs its run the machine's description,
            # not the database: the run is flagged (d["damaged"]), the others are whole.
            try:
                fp = json.loads(d["fingerprint"]) if d["fingerprint"] else {}
            except (TypeError, ValueError):
                fp = None
            d["damaged"] = None if isinstance(fp, dict) else "its machine fingerprint is damaged (not a JSON object)"
            d["fingerprint"] = fp if isinstance(fp, dict) else {}
            out.append(d)
        return out

    def run(self, run_id: int) -> dict:
        for r in self.runs():
            if r["id"] == run_id:
                r["experiments"] = self.experiments(run_id)
                return r
        raise MemkitError(f"no run {run_id} in {self.path}")

    def experiments(self, run_id: int) -> list[dict]:
        return self._query(f"SELECT * FROM experiments WHERE run_id = ? ORDER BY {self.backend.row_order}",
                           (run_id,))

    def measurements(self, run_id: int, experiment: Optional[str] = None) -> list[dict]:
        sql = "SELECT * FROM measurements WHERE run_id = ?"
        args = [run_id]
        if experiment is not None:
            sql += " AND experiment = ?"
            args.append(experiment)
        out = []
        for d in self._query(sql + " ORDER BY id", args):
            where = f"measurement {d['id']} of run {run_id}"
            bad = [f for f in NUMERIC_FIELDS if isinstance(d[f], (str, bytes))]
            if bad or not isinstance(d["series"], str):
                raise CorruptDatabase(self.path, f"{where} holds "
                                      f"{'non-numbers in ' + ', '.join(bad) if bad else 'bad values'}")
            try:
                m = row_to_measurement(d)
            except (TypeError, ValueError, AttributeError) as e:
                raise CorruptDatabase(self.path, f"{where} is not what memkit wrote ({e})") from None
            if not isinstance(m["params"], dict):
                raise CorruptDatabase(self.path, f"{where} has parameters that are not an object")
            out.append(m)
        return out

    def measurement_keys(self, run_id: int) -> frozenset:
        """What a run measured: (experiment, series, params, metric) of each
        measurement, as two runs must share them to be compared."""
        return frozenset((r["experiment"], r["series"], r["params"], r["metric"]) for r in self._query(
            "SELECT DISTINCT experiment, series, params, metric FROM measurements WHERE run_id = ?", (run_id,)))

    def verdict_records(self, run_id: int, experiment: Optional[str] = None) -> list[dict]:
        """[{"experiment", "text", "kind"}, and "data" where the verdict has
        some] in the order the experiments wrote them."""
        sql = "SELECT experiment, text, kind, data FROM verdicts WHERE run_id = ?"
        args = [run_id]
        if experiment is not None:
            sql += " AND experiment = ?"
            args.append(experiment)
        out = self._query(sql + " ORDER BY experiment, seq", args)
        for v in out:
            data = v.pop("data")
            if data:
                v["data"] = json.loads(data)
        return out

    def verdicts(self, run_id: int, experiment: Optional[str] = None) -> list[str]:
        return [v["text"] for v in self.verdict_records(run_id, experiment)]
