# SPDX-License-Identifier: Apache-2.0
"""A throwaway PostgreSQL server for the tests: a cluster made with initdb in
a temporary directory, listening on a free local port and on a socket in
that directory, run by an unprivileged user (the server refuses root),
stopped and deleted when the test session ends or its start fails.

Fixtures: `pg_server` (the session's server) and `pg_url` (a new, empty
database on it for one test, as a postgresql:// URL).
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

USER = "memkit"


def _bin_dir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[-3]) if p.split("/")[-3].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, bindir: str):
        self.bindir = bindir
        self.root = tempfile.mkdtemp(prefix="memkit-pg-")
        self.data = os.path.join(self.root, "data")
        self.log = os.path.join(self.root, "log")
        self.port = None
        self._as = []
        if os.geteuid() == 0:
            # The server will not run as root: the package's own account runs it.
            shutil.chown(self.root, "postgres", "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self._names = itertools.count(1)

    def _run(self, *cmd, **kw):
        return subprocess.run(self._as + [os.path.join(self.bindir, cmd[0]), *cmd[1:]], capture_output=True,
                              text=True, timeout=120, **kw)

    def start(self):
        p = self._run("initdb", "-D", self.data, "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync")
        if p.returncode:
            raise RuntimeError(f"initdb failed: {p.stderr.strip()}")
        opts = (f"-c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off -c synchronous_commit=off "
                f"-c full_page_writes=off -c shared_buffers=16MB -c max_connections=40")
        for _ in range(5):   # another process may take the port between the probe and the start
            self.port = _free_port()
            p = self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "30",
                          "-o", f"-p {self.port} {opts}", "start")
            if p.returncode == 0:
                return self
        raise RuntimeError(f"the server did not start: {p.stderr.strip()} {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            with open(self.log) as f:
                return " | ".join(f.read().splitlines()[-10:])
        except OSError:
            return ""

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        import psycopg
        name = f"t{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    bindir = _bin_dir()
    if bindir is None:
        if os.environ.get("MEMKIT_BUILD"):   # under `make test`, scripts/deps.sh installed it
            pytest.fail("no /usr/lib/postgresql/*/bin/initdb: Debian's postgresql package is missing")
        pytest.skip("PostgreSQL is not installed (make test installs it)")
    server = Server(bindir)
    atexit.register(server.stop)   # also when the session dies before its finalizers
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server):
    return pg_server.new_database()
