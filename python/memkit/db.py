"""The results database (SQLite): every run, its machine fingerprint, its
measurements and verdicts.

Location: --db PATH, else $MEMKIT_DB, else results/memkit.db under the
current directory.

Schema (PRAGMA user_version = 1):

  fingerprints  one row per distinct machine state
    id, digest (sha256 of the canonical JSON, unique), cpu_model, microcode,
    kernel, glibc, tunables, profile, memkit_commit, json (all of it)
  runs          one row per `memkit run`
    id, started_at, finished_at (ISO 8601, UTC), quick (0/1),
    fingerprint_id, profile (the tuned profile in force, '' for none),
    hostname, command
  experiments   one row per experiment per run
    run_id, name, seed, description, status ('ok', 'failed', 'crashed'),
    seconds, args (JSON list), error, output (the experiment's table)
  measurements  one row per number
    run_id, experiment, series (method/variant), params (canonical JSON
    object, e.g. {"size": 4096, "value": 0}), metric, unit, stat (which
    statistic value is), value, min, median, max, samples, and for
    interleaved comparisons ratio_to, ratio, ratio_min, ratio_max
  verdicts      run_id, experiment, seq, text

A run is written in one transaction after all its experiments finished:
an interrupted or killed run leaves no trace and every earlier run intact.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError

SCHEMA_VERSION = 1
DEFAULT_PATH = Path("results") / "memkit.db"

SCHEMA = """
CREATE TABLE fingerprints (
  id            INTEGER PRIMARY KEY,
  digest        TEXT NOT NULL UNIQUE,
  cpu_model     TEXT, microcode TEXT, kernel TEXT, glibc TEXT,
  tunables      TEXT, profile TEXT, memkit_commit TEXT,
  json          TEXT NOT NULL
);
CREATE TABLE runs (
  id             INTEGER PRIMARY KEY,
  started_at     TEXT NOT NULL,
  finished_at    TEXT NOT NULL,
  quick          INTEGER NOT NULL,
  fingerprint_id INTEGER REFERENCES fingerprints(id),
  profile        TEXT NOT NULL DEFAULT '',
  hostname       TEXT,
  command        TEXT
);
CREATE TABLE experiments (
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name        TEXT NOT NULL,
  seed        TEXT, description TEXT,
  status      TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'crashed')),
  seconds     REAL,
  args        TEXT,
  error       TEXT,
  output      TEXT,
  PRIMARY KEY (run_id, name)
);
CREATE TABLE measurements (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  experiment  TEXT NOT NULL,
  series      TEXT NOT NULL,
  params      TEXT NOT NULL,
  metric      TEXT NOT NULL,
  unit        TEXT,
  stat        TEXT,
  value       REAL, min REAL, median REAL, max REAL,
  samples     INTEGER,
  ratio_to    TEXT, ratio REAL, ratio_min REAL, ratio_max REAL
);
CREATE INDEX measurements_by_run ON measurements(run_id, experiment);
CREATE TABLE verdicts (
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  experiment  TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  text        TEXT NOT NULL
);
"""

TABLES = ("fingerprints", "runs", "experiments", "measurements", "verdicts")
MEASUREMENT_FIELDS = ("series", "metric", "unit", "stat", "value", "min", "median", "max",
                      "samples", "ratio_to", "ratio", "ratio_min", "ratio_max")


def _column(m: dict, f: str):
    """A measurement's column; format-2 records (lab.h) carry the samples
    themselves and a baseline object: stored here as their count and the
    baseline's series until the schema keeps them."""
    if f == "samples" and isinstance(m.get("samples"), list):
        return len(m["samples"])
    if f == "ratio_to" and "ratio_to" not in m and isinstance(m.get("baseline"), dict):
        return m["baseline"].get("series")
    return m.get(f)


def default_path() -> Path:
    return Path(os.environ.get("MEMKIT_DB") or DEFAULT_PATH)


def canonical_params(params) -> str:
    return json.dumps(params or {}, sort_keys=True, separators=(",", ":"))


def fingerprint_digest(fp: dict) -> str:
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()


class Database:
    """An open results database.  `create` makes a missing one (for `run`);
    the read-only commands refuse a missing file."""

    def __init__(self, path, create: bool = False):
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise MemkitError(f"no database at {self.path} (run `memkit run` first, or pass --db)")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MemkitError(f"cannot create {self.path.parent}: {e.strerror or e}")
        try:
            # Autocommit mode: transactions are explicit (BEGIN ... COMMIT).
            self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=10)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._check_or_create()
        except sqlite3.Error as e:
            raise MemkitError(f"cannot use database {self.path}: {e}")

    def _check_or_create(self):
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        names = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and not names:
            # One transaction: a half-created schema never exists.
            self.conn.executescript(f"BEGIN IMMEDIATE;{SCHEMA}PRAGMA user_version = {SCHEMA_VERSION};COMMIT;")
            return
        if version != SCHEMA_VERSION or not set(TABLES) <= names:
            raise MemkitError(f"{self.path} is not a memkit results database (schema version {version})")
        # A file damaged behind our back fails here rather than mid-report.
        ok = self.conn.execute("PRAGMA quick_check").fetchone()[0]
        if ok != "ok":
            raise MemkitError(f"database {self.path} is corrupt: {ok}")

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- writing ----

    def store_run(self, *, started_at: str, finished_at: str, quick: bool, fingerprint: Optional[dict],
                  results: list, hostname: str = "", command: str = "") -> int:
        """Writes one run (a list of lab.Result) in a single transaction."""
        c = self.conn
        try:
            c.execute("BEGIN IMMEDIATE")
            fp_id = self._fingerprint_id(fingerprint) if fingerprint else None
            profile = (fingerprint or {}).get("profile", "") or ""
            run_id = c.execute(
                "INSERT INTO runs (started_at, finished_at, quick, fingerprint_id, profile, hostname, command)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (started_at, finished_at, int(quick), fp_id, profile, hostname, command)).lastrowid
            for r in results:
                c.execute("INSERT INTO experiments (run_id, name, seed, description, status, seconds, args,"
                          " error, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (run_id, r.name, r.seed, r.description, r.status, r.seconds,
                           json.dumps(list(r.args)), r.error, r.output))
                c.executemany(
                    "INSERT INTO measurements (run_id, experiment, params, " + ", ".join(MEASUREMENT_FIELDS) +
                    ") VALUES (?, ?, ?" + ", ?" * len(MEASUREMENT_FIELDS) + ")",
                    ((run_id, r.name, canonical_params(m.get("params"))) +
                     tuple(_column(m, f) for f in MEASUREMENT_FIELDS) for m in r.measurements))
                c.executemany("INSERT INTO verdicts (run_id, experiment, seq, text) VALUES (?, ?, ?, ?)",
                              ((run_id, r.name, i, t) for i, t in enumerate(r.verdicts)))
            c.execute("COMMIT")
            return run_id
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise

    def _fingerprint_id(self, fp: dict) -> int:
        digest = fingerprint_digest(fp)
        row = self.conn.execute("SELECT id FROM fingerprints WHERE digest = ?", (digest,)).fetchone()
        if row:
            return row[0]
        return self.conn.execute(
            "INSERT INTO fingerprints (digest, cpu_model, microcode, kernel, glibc, tunables, profile,"
            " memkit_commit, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (digest, fp.get("cpu_model"), fp.get("microcode"), fp.get("kernel"), fp.get("glibc"),
             fp.get("tunables"), fp.get("profile"), fp.get("memkit_commit"),
             json.dumps(fp, sort_keys=True))).lastrowid

    # ---- reading ----

    def _query(self, sql, args=()):
        try:
            return self.conn.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            raise MemkitError(f"cannot read database {self.path}: {e}")

    def runs(self) -> list[dict]:
        """Every run, oldest first, with its fingerprint (dict) and experiments."""
        rows = self._query("SELECT r.*, f.json AS fingerprint FROM runs r"
                           " LEFT JOIN fingerprints f ON f.id = r.fingerprint_id ORDER BY r.id")
        out = []
        for row in rows:
            d = dict(row)
            d["fingerprint"] = json.loads(d["fingerprint"]) if d["fingerprint"] else {}
            out.append(d)
        return out

    def run(self, run_id: int) -> dict:
        for r in self.runs():
            if r["id"] == run_id:
                r["experiments"] = self.experiments(run_id)
                return r
        raise MemkitError(f"no run {run_id} in {self.path}")

    def experiments(self, run_id: int) -> list[dict]:
        rows = self._query("SELECT * FROM experiments WHERE run_id = ? ORDER BY rowid", (run_id,))
        return [dict(r) for r in rows]

    def measurements(self, run_id: int, experiment: Optional[str] = None) -> list[dict]:
        sql = "SELECT * FROM measurements WHERE run_id = ?"
        args = [run_id]
        if experiment is not None:
            sql += " AND experiment = ?"
            args.append(experiment)
        rows = self._query(sql + " ORDER BY id", args)
        out = []
        for r in rows:
            d = dict(r)
            d["params"] = json.loads(d["params"])
            out.append(d)
        return out

    def verdicts(self, run_id: int, experiment: Optional[str] = None) -> list[str]:
        sql = "SELECT text FROM verdicts WHERE run_id = ?"
        args = [run_id]
        if experiment is not None:
            sql += " AND experiment = ?"
            args.append(experiment)
        return [r[0] for r in self._query(sql + " ORDER BY experiment, seq", args)]
