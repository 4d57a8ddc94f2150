"""A PostgreSQL server of chaoskit's own, from Debian's package, for brokers that store in it (tansu).

Its own data folder under the run's folder and its own port on 127.0.0.1; run as the `postgres`
user (PostgreSQL refuses root) through `setpriv`, which execs the server so kill -9 hits it and
not a wrapper. Local connections are trusted: the only clients are the run's brokers and chaoskit.
Ready when `pg_isready` says it accepts connections. Removed with the run, as ZooKeeper is.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
from pathlib import Path

from chaoskit.cluster.node import Node
from chaoskit.cluster.waiting import free_port

USER = "postgres"


class PostgresMissing(Exception):
    """The server's programs or its user are not installed."""


def server_bin() -> Path:
    """The newest installed server's bin folder (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise PostgresMissing("PostgreSQL's server is not installed: apt-get install -y postgresql, then run again")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        raise PostgresMissing(f"the {USER!r} user is missing: apt-get install -y postgresql creates it") from None
    return Path(found[-1]).parent


def as_postgres(command: list[str]) -> list[str]:
    """`command` run as the postgres user when chaoskit runs as root (setpriv execs it)."""
    if os.geteuid() != 0:
        return command
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "--", *command]


def reachable(folder: Path) -> None:
    """Let the postgres user pass through `folder`'s parents (a private temporary folder has none of
    that): search only, nobody gains the right to list them."""
    for parent in folder.resolve().parents:
        mode = parent.stat().st_mode
        if not mode & 0o001 and parent.stat().st_uid == os.geteuid():
            parent.chmod(mode | 0o001)


class PostgresNode(Node):
    role = "storage"
    ready_timeout = 60.0

    def __init__(self, run_id: str, workdir: Path, host: str = "127.0.0.1", name: str = "postgres") -> None:
        super().__init__(name, run_id, workdir)
        self.bin = server_bin()
        self.host, self.port = host, free_port(host)
        self.home = self.workdir / name
        self.data_dir = self.home / "data"
        self.socket_dir = self.home / "socket"

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def prepare(self, clean: bool) -> None:
        if clean and self.home.exists():
            shutil.rmtree(self.home)
        if (self.data_dir / "PG_VERSION").exists():
            return
        for d in (self.home, self.socket_dir):
            d.mkdir(parents=True, exist_ok=True)
            shutil.chown(d, USER, USER)
        reachable(self.home)
        done = subprocess.run(as_postgres([str(self.bin / "initdb"), "-D", str(self.data_dir), "-U", USER,
                                           "--auth=trust", "--encoding=UTF8", "--no-sync"]),
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed for {self.name}: {done.stderr.strip().splitlines()[-1:]}")

    def command(self) -> list[str]:
        return as_postgres([str(self.bin / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
                            "-c", f"listen_addresses={self.host}", "-c", f"unix_socket_directories={self.socket_dir}",
                            "-c", "fsync=off", "-c", "max_connections=200"])

    def is_ready(self) -> bool:
        done = subprocess.run([str(self.bin / "pg_isready"), "-h", self.host, "-p", str(self.port), "-U", USER],
                              capture_output=True, timeout=10)
        return done.returncode == 0

    def psql(self, sql: str, database: str = USER) -> str:
        """Run `sql` (statements, ON_ERROR_STOP) and give psql's output; RuntimeError with its error line."""
        done = subprocess.run([str(self.bin / "psql"), "-h", self.host, "-p", str(self.port), "-U", USER, "-d", database,
                               "-v", "ON_ERROR_STOP=1", "-q", "-At"], input=sql, capture_output=True, text=True,
                              timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"psql on {self.name}: {done.stderr.strip()}")
        return done.stdout

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "address": "%s:%d" % self.address, "data": str(self.data_dir)}
