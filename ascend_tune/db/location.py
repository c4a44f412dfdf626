"""Which database a command uses: ``--db URL``, else ``ASCEND_TUNE_DB``, else a SQLite file in
the user's data directory; ``--no-db`` (or ``ASCEND_TUNE_DB=off``) uses none."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ascend_tune.base.errors import AscendTuneError

ENV = "ASCEND_TUNE_DB"
OFF_WORDS = frozenset({"off", "none", "no", "0"})
FILE_NAME = "tuning.sqlite"
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def data_dir() -> Path:
    """The per-user data directory (XDG: ``$XDG_DATA_HOME/ascend-tune``, else
    ``~/.local/share/ascend-tune``; ``%LOCALAPPDATA%\\ascend-tune`` on Windows)."""
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "ascend-tune"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "ascend-tune"


def default_url() -> str:
    return sqlite_url(data_dir() / FILE_NAME)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.expanduser().absolute()}"


def resolve(option: str | None, disabled: bool = False) -> str | None:
    """The database URL to use, or None for none. A plain path names a SQLite file."""
    if disabled:
        if option is not None:
            raise AscendTuneError("--db and --no-db contradict each other")
        return None
    text = option if option is not None else os.environ.get(ENV)
    where = "--db" if option is not None else ENV
    if text is None:
        return default_url()
    text = text.strip()
    if not text:
        raise AscendTuneError(f"{where} is empty: give a database URL or a SQLite file path")
    if option is None and text.lower() in OFF_WORDS:
        return None
    if _SCHEME.match(text):
        scheme = text.split("://", 1)[0].lower()
        if scheme.startswith("postgres"):
            # postgres:// and postgresql:// (the forms libpq takes) mean psycopg 3.
            return "postgresql+psycopg://" + text.split("://", 1)[1]
        if scheme.split("+")[0] not in ("sqlite", "postgresql"):
            raise AscendTuneError(f"{where} {shown(text)}: not a SQLite or PostgreSQL URL "
                                  "(sqlite:///PATH, postgresql://USER@HOST/DB)")
        return text
    return sqlite_url(Path(text))


def shown(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages)."""
    return re.sub(r"(://[^/:@]*:)[^@/]*@", r"\1***@", url)
