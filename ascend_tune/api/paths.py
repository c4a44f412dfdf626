"""Path arguments of the API: each takes ``str`` or ``Path`` (a notebook passes text), and
where several are allowed, one path (a ``str`` is one path, not a sequence of characters)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

PathLike = str | Path


def _path(value: str | Path | None) -> Path | None:
    """Paths may be given as text, as in a notebook (``"add.results.json"``)."""
    return None if value is None else Path(value)


def _paths(value: PathLike | Sequence[PathLike]) -> Path | list[Path]:
    return Path(value) if isinstance(value, (str, Path)) else [Path(v) for v in value]


def _list(value: PathLike | Sequence[PathLike]) -> list[Path]:
    """One path or several (a str is one path, not a sequence of characters)."""
    return [Path(value)] if isinstance(value, (str, Path)) else [Path(v) for v in value]
