"""A throwaway PostgreSQL cluster on 127.0.0.1 for the tests."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg2


def _bin_dir() -> Path:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        if Path(candidate, "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise RuntimeError("PostgreSQL server binaries not found: run `make test` (it installs them) "
                       "or `apt-get install -y postgresql`")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PgCluster:
    """initdb + pg_ctl in a temporary directory; ``stop()`` removes it."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="grobot-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            # initdb refuses to run as root: run the server as the postgres user.
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root without a 'postgres' user: apt-get install -y postgresql") from None
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            os.chmod(self.root, 0o755)
            self._as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as_user, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> PgCluster:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        opts = (
            f"-k {self.root} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
            "-c autovacuum=off"  # an autovacuum worker in the template database would fail CREATE DATABASE ... TEMPLATE
        )
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.root / "log"), "-w", "start")
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg2.connect(self.dsn("postgres")).close()
                break
            except psycopg2.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        return self

    def dsn(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={database}"

    def url(self, database: str) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None, *, template: str | None = None) -> str:
        """A new database, empty or a copy of ``template`` (a database nobody is connected to);
        returns its SQLAlchemy URL."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        statement = f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
        conn = psycopg2.connect(self.dsn("postgres"))
        conn.autocommit = True
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with conn.cursor() as cur:
                        cur.execute(statement)
                    break
                except psycopg2.errors.ObjectInUse:  # the template is still in use: a connection being closed
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            conn.close()
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        except Exception:
            pass
        shutil.rmtree(self.root, ignore_errors=True)
