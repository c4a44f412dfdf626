"""The results file: versioned JSON, written atomically after every shape; also the cache.

It embeds the spec and profile text it was computed from (and their hashes), so `emit` needs
nothing else and a changed input is detected. It holds no wall-clock values: the same inputs and
seed give a byte-identical file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ascend_tune import __version__
from ascend_tune.errors import AscendTuneError
from ascend_tune.spec import shape_key

SCHEMA_VERSION = 1


def header(spec_name: str, spec_sha: str, spec_text: str, hw_name: str, hw_sha: str,
           hw_data: Mapping[str, Any], strategy: str, seed: int, budget: int,
           variant: str | None = None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ascend-tune", "version": __version__},
        "spec": {"name": spec_name, "variant": variant, "sha256": spec_sha, "text": spec_text},
        "hw": {"name": hw_name, "sha256": hw_sha, "data": hw_data},
        "search": {"strategy": strategy, "seed": seed, "budget": budget},
    }


def _shape_sort_key(entry: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(int(v) for v in entry["shape"].values())


def render(doc: Mapping[str, Any]) -> str:
    out = dict(doc)
    out["shapes"] = sorted(doc.get("shapes", []), key=_shape_sort_key)
    return json.dumps(out, indent=1, sort_keys=False) + "\n"


def check_writable(path: Path) -> None:
    """Fail before any work when the results cannot be written."""
    folder = path.parent if str(path.parent) else Path(".")
    if folder.exists() and not folder.is_dir():
        raise AscendTuneError(f"{path}: {folder} is a file, not a folder")
    if not folder.is_dir():
        raise AscendTuneError(f"{path}: folder {folder} does not exist")
    if path.is_dir():
        raise AscendTuneError(f"{path}: is a folder; give a file name for the results")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot write results: {exc.strerror}") from None


def write_atomic(path: Path, text: str) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot write: {exc.strerror}") from None


def load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AscendTuneError(f"{path}: results file not found") from None
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot read results: {exc.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AscendTuneError(f"{path}:{exc.lineno}: corrupt results file ({exc.msg}); "
                              "move it away or pass another -o") from None
    problems = []
    if not isinstance(doc, dict):
        problems.append("top level is not an object")
    else:
        if doc.get("schema_version") != SCHEMA_VERSION:
            problems.append(f"schema_version {doc.get('schema_version')!r}, "
                            f"expected {SCHEMA_VERSION}")
        for key in ("spec", "hw", "search"):
            if not isinstance(doc.get(key), dict):
                problems.append(f"missing '{key}'")
        shapes = doc.get("shapes", [])
        if not isinstance(shapes, list) or not all(
                isinstance(s, dict) and isinstance(s.get("shape"), dict) and "best" in s
                for s in shapes):
            problems.append("'shapes' is not a list of shape results")
    if problems:
        raise AscendTuneError(f"{path}: corrupt results file ({problems[0]}); "
                              "move it away or pass another -o")
    return doc  # type: ignore[no-any-return]


def index(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {shape_key(s["shape"]): s for s in doc.get("shapes", [])}
