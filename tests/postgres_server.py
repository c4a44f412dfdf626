"""A throwaway PostgreSQL server for the database tests: the distribution's server binaries
(``/usr/lib/postgresql/*/bin``, or ``pg_ctl`` on PATH), a cluster initialised in a temp
folder, listening on a free loopback port, stopped and removed at the end. PostgreSQL refuses
to run as root: as root the cluster belongs to the ``postgres`` system user (the Debian
package creates it) and the server runs as that user."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

USER = "tuner"
PASSWORD = "tuner-secret"


def server_bin() -> Path | None:
    """The folder holding initdb and pg_ctl (the newest version installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: [int(x) for x in Path(p).parts[-3].split(".") if x.isdigit()])
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).resolve().parent if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Server:
    port: int
    data: Path

    def url(self, database: str = "postgres", password: str = PASSWORD) -> str:
        return f"postgresql+psycopg://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={USER} "
                             f"password={PASSWORD} dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _as_owner(argv: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *argv] if owner else argv


@contextlib.contextmanager
def running() -> Iterator[Server]:
    """Start a server; stop it and remove its folder when the block ends."""
    bin_dir = server_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
    owner = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="ascend-tune-pg-"))
    data = root / "data"
    try:
        pwfile = root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if owner:
            entry = pwd.getpwnam(owner)
            os.chown(root, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        subprocess.run(_as_owner([str(bin_dir / "initdb"), "-D", str(data), "-U", USER,
                                  f"--pwfile={pwfile}", "--auth=scram-sha-256",
                                  "-E", "UTF8", "--no-sync"], owner),
                       check=True, capture_output=True, timeout=120)
        port = _free_port()
        options = (f"-c listen_addresses=127.0.0.1 -c port={port} "
                   f"-c unix_socket_directories={root} -c fsync=off -c max_connections=60")
        subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options,
                                  "-l", str(root / "log"), "-w", "-t", "60", "start"], owner),
                       check=True, capture_output=True, timeout=120)
        try:
            yield Server(port, data)
        finally:
            subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast",
                                      "-w", "stop"], owner), capture_output=True, timeout=120)
    finally:
        shutil.rmtree(root, ignore_errors=True)
