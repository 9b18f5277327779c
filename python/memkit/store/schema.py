# SPDX-License-Identifier: Apache-2.0
"""The results database's tables, their versions, and how a measurement
record (memkit.results.records) maps onto a row and back; memkit.store.db
opens, writes and reads it.

Schema (version 7: SQLite's PRAGMA user_version, PostgreSQL's one row of
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
"""

from __future__ import annotations

import json

from memkit.results import records

SCHEMA_VERSION = 7

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


def canonical_params(params) -> str:
    return json.dumps(params or {}, sort_keys=True, separators=(",", ":"))


def statements(script: str) -> list:
    return [s.strip() for s in script.split(";") if s.strip()]


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
