"""Row-kernel sources compiled once per text, for every shape whose kernel has that text.

A row kernel (:mod:`.kernel`) reads the shape's values by name (``_S0`` ..) rather than as
literals, so shapes that agree in every choice the spans drive (a divisor's zero guard, the
launch checks left to run) have the same source: it is memoised (:mod:`.memo`) and compiled
once, and each shape's function is that code executed in a scope of its own (its values, empty
memo tables).
"""

from __future__ import annotations

import hashlib
import linecache
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ascend_tune.model.fastpaths import memo as row_memo

# The file stem (operator, function, digest), the memoised text, its code object and the
# length of each memo table it reads.
Code = tuple[str, str, Any, dict[str, int]]
# (operator, source, function, sizes) -> Code, most recently used last.
_CODE: dict[tuple[str, str, str, tuple[int, ...] | None], Code] = {}
CODE_MAX = 64
# Pseudo-filename -> functions alive that run its code: its linecache entry goes with the last.
_LIVE: dict[str, int] = {}


def compiled(subject: str, source: str, name: str, sizes: Sequence[int] | None) -> Code:
    """``source`` memoised (when the domain ``sizes`` of its index arguments are given) and
    compiled, once per text; ``subject`` (the operator) names its pseudo-file."""
    key = (subject, source, name, None if sizes is None else tuple(map(int, sizes)))
    hit = _CODE.pop(key, None)
    if hit is None:
        tables: dict[str, list[None]] = {}
        if sizes is not None:
            source, tables = row_memo.hoist(source, name, sizes)
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        stem = " ".join(part for part in (subject, name, digest) if part)
        code = compile(source, f"<ascend-tune row kernel {stem}>", "exec")
        hit = (stem, source, code, {k: len(v) for k, v in tables.items()})
        if len(_CODE) >= CODE_MAX:
            _CODE.pop(next(iter(_CODE)))
    _CODE[key] = hit
    return hit


def register(filename: str, source: str, fn: Callable[..., Any]) -> None:
    """``source``'s lines in linecache under ``filename`` while ``fn`` (or another function
    compiled from the same text) is alive."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    _LIVE[filename] = _LIVE.get(filename, 0) + 1
    weakref.finalize(fn, _forget, filename).atexit = False


def _forget(filename: str) -> None:
    left = _LIVE.pop(filename, 1) - 1
    if left:
        _LIVE[filename] = left
    else:
        linecache.cache.pop(filename, None)
