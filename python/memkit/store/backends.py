# SPDX-License-Identifier: Apache-2.0
"""The two places a results database can live: an SQLite file (the embedded
default, one machine) or a PostgreSQL server (a fleet writing to one place).

Each back end turns its driver's connection into the same few operations
memkit.store.db needs: run a statement with `?` placeholders, begin a reading or a
writing transaction, read and set the schema version, list the tables, and
say in one line what went wrong.  The SQL itself is written once, in
memkit.store.db; the only dialect differences are translated here (placeholders,
identity columns, floating-point type, the implicit row order).
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from memkit.errors import MemkitError

URL_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def url_scheme(target: str):
    """'postgresql' for 'postgresql://…', None for a file path."""
    m = _SCHEME.match(str(target))
    return m.group(1).lower() if m else None


def safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"^([^:/]+://[^:@/]*):[^@/]*@", r"\1:***@", url)


def one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


class CorruptDatabase(MemkitError):
    """Contents that no memkit wrote: damaged pages or hand-edited rows."""

    def __init__(self, name: str, detail: str):
        super().__init__(f"cannot use database {name}: it is corrupt ({detail})")


def busy_timeout() -> float:
    """Seconds to wait for a database another process holds:
    $MEMKIT_DB_TIMEOUT, else 60."""
    given = os.environ.get("MEMKIT_DB_TIMEOUT", "")
    try:
        return max(0.0, float(given)) if given else 60.0
    except ValueError:
        raise MemkitError(f"MEMKIT_DB_TIMEOUT={given} is not a number of seconds")


class SQLite:
    """An SQLite file.  The schema version is PRAGMA user_version; a writing
    transaction is BEGIN IMMEDIATE, which also serialises every writer."""

    kind = "sqlite"
    row_order = "rowid"

    def __init__(self, path, create: bool):
        self.path = Path(path)
        self.name = str(self.path)
        if not self.path.exists():
            if not create:
                raise MemkitError(f"no database at {self.path} (run `memkit run` first, or pass --db)")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MemkitError(f"cannot create {self.path.parent}: {e.strerror or e}")
        elif self.path.is_dir():
            raise MemkitError(f"{self.path} is a directory, not a results database")
        elif not self.path.is_file():   # /dev/null, a FIFO: SQLite would take them for an empty database
            raise MemkitError(f"{self.path} is not a regular file, so not a results database: give --db a "
                              f"file path")
        try:
            # A reader never creates the file (mode=rw); autocommit mode:
            # transactions are explicit.  A minute of waiting for another
            # writer (a run that still cannot store spills to a file).
            mode = "rwc" if create else "rw"
            self.conn = sqlite3.connect(f"file:{self.path.absolute()}?mode={mode}", uri=True,
                                        isolation_level=None, timeout=busy_timeout())
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as e:
            raise self.error(e)

    def error(self, e: BaseException, doing: str = "use") -> MemkitError:
        msg = one_line(e)
        if isinstance(e, sqlite3.DatabaseError) and ("malformed" in msg or "not a database" in msg):
            return CorruptDatabase(self.name, msg)
        if "readonly" in msg or "read-only" in msg:
            return MemkitError(f"database {self.name} is read-only ({msg}): runs cannot be stored there")
        return MemkitError(f"cannot {doing} database {self.name}: {msg}")

    errors = (sqlite3.Error,)

    def execute(self, sql, args=()):
        return self.conn.execute(sql, args)

    def executemany(self, sql, rows):
        self.conn.executemany(sql, rows)

    def insert(self, sql, args) -> int:
        return self.conn.execute(sql, args).lastrowid

    def begin(self, write: bool):
        self.conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def set_schema_version(self, v: int):
        self.conn.execute(f"PRAGMA user_version = {int(v)}")

    def tables(self) -> set:
        return {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def ddl(self, sql: str) -> str:
        return sql

    def probe_write(self):
        # Rewriting the header's version is a real write: on a read-only file
        # or file system it fails here, before any experiment runs.
        self.set_schema_version(self.schema_version())

    def check_integrity(self):
        ok = self.conn.execute("PRAGMA quick_check").fetchone()[0]
        if ok != "ok":
            raise CorruptDatabase(self.name, ok)

    def close(self):
        self.conn.close()


# The schema's SQLite spelling, translated for PostgreSQL: an identity column
# for INTEGER PRIMARY KEY, double precision for REAL (PostgreSQL's REAL is
# 4 bytes).
_PG_TYPES = [(re.compile(r"\bINTEGER PRIMARY KEY\b", re.I), "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
             (re.compile(r"\bREAL\b", re.I), "DOUBLE PRECISION"),
             (re.compile(r"\bINTEGER\b", re.I), "BIGINT")]
# Taken by whoever creates or migrates the schema, inside that transaction.
_SCHEMA_LOCK = 0x6d656d6b6974   # "memkit"


class PostgreSQL:
    """A database on a PostgreSQL server (psycopg 3).  The schema version is
    the one row of memkit_schema; schema changes happen under an advisory
    lock so that machines starting at once do not race; runs are written
    concurrently, each in its own transaction."""

    kind = "postgresql"
    # memkit only ever inserts, so the physical order is the insertion order.
    row_order = "ctid"

    def __init__(self, url: str, create: bool):
        self.name = safe_url(url)
        try:
            import psycopg
            import psycopg.conninfo
            from psycopg.rows import dict_row
        except ImportError:
            raise MemkitError("a postgresql:// database needs the psycopg package, which memkit installs only "
                              "with its postgres extra: pip install '.[postgres]' at memkit's checkout (or pip "
                              "install 'psycopg[binary]' where memkit is installed)")
        self._psycopg = psycopg
        self.errors = (psycopg.Error,)
        try:
            port = psycopg.conninfo.conninfo_to_dict(url).get("port") or "5432"
        except psycopg.ProgrammingError as e:
            raise MemkitError(f"invalid database URL {self.name}: {one_line(e)}")
        if not re.fullmatch(r"[0-9]+(,[0-9]+)*", str(port)):
            raise MemkitError(f"invalid database URL {self.name}: the port '{port}' is not a number")
        try:
            self.conn = psycopg.connect(url, autocommit=True, row_factory=dict_row, connect_timeout=10,
                                        application_name="memkit")
        except psycopg.ProgrammingError as e:
            raise MemkitError(f"invalid database URL {self.name}: {one_line(e)}")
        except psycopg.Error as e:
            raise MemkitError(f"cannot connect to {self.name}: {self._why(e)}")

    @staticmethod
    def _why(e) -> str:
        msg = one_line(e)
        m = re.search(r'database "([^"]+)" does not exist', msg)
        if m:
            return f'the server has no database "{m.group(1)}" (create it: createdb {m.group(1)})'
        if "Connection refused" in msg:
            return "connection refused (is the server running, on that host and port?)"
        return re.sub(r"^connection failed: ", "", msg)

    def error(self, e: BaseException, doing: str = "use") -> MemkitError:
        if isinstance(e, self._psycopg.OperationalError):
            return MemkitError(f"lost the connection to {self.name}: {one_line(e)}")
        if isinstance(e, self._psycopg.errors.DataCorrupted):
            return CorruptDatabase(self.name, one_line(e))
        if isinstance(e, self._psycopg.errors.ReadOnlySqlTransaction):
            return MemkitError(f"database {self.name} is read-only ({one_line(e)}): runs cannot be stored there")
        return MemkitError(f"cannot {doing} database {self.name}: {one_line(e)}")

    def execute(self, sql, args=()):
        return self.conn.execute(sql.replace("?", "%s"), args or None)

    def executemany(self, sql, rows):
        with self.conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), list(rows))

    def insert(self, sql, args) -> int:
        return self.execute(sql + " RETURNING id", args).fetchone()["id"]

    def begin(self, write: bool):
        self.conn.execute("BEGIN")

    def lock_schema(self):
        self.conn.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")

    @property
    def in_transaction(self) -> bool:
        return self.conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE

    def schema_version(self) -> int:
        if "memkit_schema" not in self.tables():
            return 0
        row = self.conn.execute("SELECT version FROM memkit_schema").fetchone()
        return int(row["version"]) if row else 0

    def set_schema_version(self, v: int):
        if "memkit_schema" not in self.tables():
            self.conn.execute("CREATE TABLE memkit_schema (version INTEGER NOT NULL)")
        self.conn.execute("DELETE FROM memkit_schema")
        self.conn.execute("INSERT INTO memkit_schema (version) VALUES (%s)", (int(v),))

    def tables(self) -> set:
        rows = self.conn.execute("SELECT table_name FROM information_schema.tables"
                                 " WHERE table_schema = current_schema()").fetchall()
        return {r["table_name"] for r in rows}

    def ddl(self, sql: str) -> str:
        for pat, repl in _PG_TYPES:
            sql = pat.sub(repl, sql)
        return sql

    def probe_write(self):
        # A hot standby or a read-only default fails here, not after the run.
        if self.conn.execute("SELECT current_setting('transaction_read_only') AS ro").fetchone()["ro"] == "on":
            raise MemkitError(f"database {self.name} is read-only: runs cannot be stored there")

    def check_integrity(self):
        pass   # the server guards its own pages

    def close(self):
        self.conn.close()


def open_backend(target, create: bool):
    scheme = url_scheme(target)
    if scheme is None:
        return SQLite(target, create)
    if scheme in URL_SCHEMES:
        return PostgreSQL(str(target), create)
    raise MemkitError(f"unsupported database URL {safe_url(str(target))}: use a file path or "
                      f"postgresql://USER@HOST:PORT/DB")
