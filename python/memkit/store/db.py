# SPDX-License-Identifier: Apache-2.0
"""The results database: every run, its machine fingerprint, its
measurements and verdicts.

Location: --db PATH or URL, else $MEMKIT_DB, else results/memkit.db under
the current directory.  A path is an SQLite file (the embedded default); a
postgresql://USER@HOST:PORT/DB URL is a PostgreSQL database that many
machines write to (memkit.store.backends holds what differs between the two).

Schema (version 6: SQLite's PRAGMA user_version, PostgreSQL's one row of
memkit_schema):

  fingerprints  one row per distinct machine state
    id, digest (sha256 of the canonical JSON, unique), cpu_model, microcode,
    kernel, glibc, tunables, profile, memkit_commit, json (all of it)
  runs          one row per `memkit run`
    id, started_at, finished_at (ISO 8601, UTC), quick (0/1),
    fingerprint_id, profile (the tuned profile in force, '' for none),
    hostname (the host it ran on: --host, $MEMKIT_HOST or the host name),
    command, load_avg (1-minute load average when it started),
    steal_pct (% of CPU time stolen by the hypervisor while it ran),
    busy (why the machine was busy, '' when it was not); from version 6:
    incomplete (NULL for a run that finished, else why not: interrupted,
    or UNFINISHED while it runs and after it was killed)
  experiments   one row per experiment per run
    run_id, name, seed, description, status ('ok', 'failed', 'crashed'),
    seconds, args (JSON list), error, output (the experiment's table)
  measurements  one row per number (see memkit.results.records for the record format)
    run_id, experiment, series (method/variant), params (canonical JSON
    object, e.g. {"size": 4096, "value": 0}), metric, unit, stat (which
    statistic value is), value, min, median, max, samples (the count), and
    for interleaved comparisons ratio_to, ratio, ratio_min, ratio_max;
    from version 2: record_format (1: ratios point either way, 2: ratios
    are speed-ups), axis_name, axis_unit, better ('lower'/'higher'),
    sample_values (JSON list, one per round), process_samples (JSON list,
    one per process), baseline_series, baseline_params (canonical JSON),
    ratios (JSON list of paired per-round speed-ups); from version 3:
    process_ratios (JSON list, each process's median speed-up); from
    version 4: contract (what the series' method needs of its inputs,
    e.g. aligned buffers; NULL: any input); from version 7: tuned (JSON:
    the speed-ups over glibc tuned where a run raced it, or NULL)
  verdicts      run_id, experiment, seq, text, kind ('loss', 'fastest',
    'note' or NULL; from version 2); from version 5: data (JSON: the facts
    the verdict states, e.g. a "fastest" verdict's ranking, or NULL)

Versions: a database is created at version 1 and brought forward by the
MIGRATIONS (portable SQL: ALTER TABLE ... ADD COLUMN), so a new database and
a migrated one have the same columns.  An older database is migrated when
opened, never refused.

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

SCHEMA_VERSION = 7
RESULTS_IN_CHECKOUT = "results"
DB_FILE = "memkit.db"
# For --help: where the database goes by default (results_dir()).
DEFAULT_PLACES = (f"{RESULTS_IN_CHECKOUT}/{DB_FILE} of the memkit checkout it runs in, else "
                  f"$XDG_DATA_HOME/memkit/{DB_FILE} (~/.local/share/memkit/{DB_FILE})")

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

# MIGRATIONS[v]: the statements that bring version v-1 to v, applied in the
# opening transaction; written in the SQLite spelling (see
# backends.PostgreSQL.ddl).  A new database gets SCHEMA, then every migration.
MIGRATIONS = {
    2: [
        "ALTER TABLE measurements ADD COLUMN record_format INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE measurements ADD COLUMN axis_name TEXT",
        "ALTER TABLE measurements ADD COLUMN axis_unit TEXT",
        "ALTER TABLE measurements ADD COLUMN better TEXT",
        "ALTER TABLE measurements ADD COLUMN sample_values TEXT",
        "ALTER TABLE measurements ADD COLUMN process_samples TEXT",
        "ALTER TABLE measurements ADD COLUMN baseline_series TEXT",
        "ALTER TABLE measurements ADD COLUMN baseline_params TEXT",
        "ALTER TABLE measurements ADD COLUMN ratios TEXT",
        "ALTER TABLE verdicts ADD COLUMN kind TEXT",
        "ALTER TABLE runs ADD COLUMN load_avg REAL",
        "ALTER TABLE runs ADD COLUMN steal_pct REAL",
        "ALTER TABLE runs ADD COLUMN busy TEXT",
    ],
    3: [
        "ALTER TABLE measurements ADD COLUMN process_ratios TEXT",
    ],
    4: [
        "ALTER TABLE measurements ADD COLUMN contract TEXT",
    ],
    5: [
        "ALTER TABLE verdicts ADD COLUMN data TEXT",
    ],
    6: [
        "ALTER TABLE runs ADD COLUMN incomplete TEXT",
    ],
    7: [
        "ALTER TABLE measurements ADD COLUMN tuned TEXT",
    ],
}
# A run's `incomplete` while it is under way; what a killed run keeps.
UNFINISHED = "stopped before it ended (killed, or still running)"

TABLES = ("fingerprints", "runs", "experiments", "measurements", "verdicts")
MEASUREMENT_FIELDS = ("series", "metric", "unit", "stat", "value", "min", "median", "max",
                      "samples", "ratio_to", "ratio", "ratio_min", "ratio_max")
NUMERIC_FIELDS = ("value", "min", "median", "max", "samples", "ratio", "ratio_min", "ratio_max")
# The columns from version 2 on and how a normalised measurement (memkit.results.records) fills them.
MEASUREMENT_NEWER_COLUMNS = (
    ("record_format", lambda m: m.get("format") or 1),
    ("axis_name", lambda m: (m.get("axis") or {}).get("name")),
    ("axis_unit", lambda m: (m.get("axis") or {}).get("unit")),
    ("better", lambda m: m.get("better")),
    ("sample_values", lambda m: records.dumps(m.get("sample_values"))),
    ("process_samples", lambda m: records.dumps(m.get("process_samples"))),
    ("baseline_series", lambda m: (m.get("baseline") or {}).get("series")),
    ("baseline_params", lambda m: canonical_params((m["baseline"] or {}).get("params"))
     if m.get("baseline") else None),
    ("ratios", lambda m: records.dumps(m.get("ratios"))),
    ("process_ratios", lambda m: records.dumps(m.get("process_ratios"))),
    ("contract", lambda m: m.get("contract")),
    ("tuned", lambda m: records.dumps(m.get("tuned"))),
)


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


def canonical_params(params) -> str:
    return json.dumps(params or {}, sort_keys=True, separators=(",", ":"))


def fingerprint_digest(fp: dict) -> str:
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()


def _statements(script: str) -> list:
    return [s.strip() for s in script.split(";") if s.strip()]


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
            for stmt in _statements(SCHEMA):
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


def row_to_measurement(d: dict) -> dict:
    """A measurements row in memkit.results.records' normalised shape."""
    d["params"] = json.loads(d["params"])
    d["format"] = d.pop("record_format", 1) or 1
    name, unit = d.pop("axis_name", None), d.pop("axis_unit", None)
    d["axis"] = {"name": name, "unit": unit} if name is not None else None
    d["sample_values"] = records.loads(d.get("sample_values"))
    d["process_samples"] = records.loads(d.get("process_samples"))
    d["ratios"] = records.loads(d.get("ratios"))
    d["process_ratios"] = records.loads(d.get("process_ratios"))
    d["tuned"] = records.loads(d.get("tuned"))
    series, params = d.pop("baseline_series", None), d.pop("baseline_params", None)
    d["baseline"] = {"series": series, "params": json.loads(params or "{}")} if series is not None else None
    return d
