"""Where a spec compiler is: the shared state of every section compiler.

Owns :class:`Compiler` (the file, its key-path -> line map, and the names the spec has defined
so far), which places every error at file:line and key path, parses each expression against the
names visible at its place, and keeps shape variables, parameters and derived values in one
namespace; and :data:`Symbols`, the name -> kind map an expression is checked against.
"""

from __future__ import annotations

from collections.abc import Mapping

from ascend_tune.base.errors import SpecError
from ascend_tune.base.yamlio import KeyPath
from ascend_tune.expr import Expr, Kind, parse
from ascend_tune.spec.format import CPP_IDENT, CPP_KEYWORDS

Symbols = dict[str, Kind]


class Compiler:
    """Where a key is (file, line, key path), and the names the spec has defined so far."""

    def __init__(self, origin: str, lines: Mapping[KeyPath, int]) -> None:
        self.origin = origin
        self.lines = lines
        self.names_seen: dict[str, str] = {}

    def where(self, *path: str) -> str:
        line = None
        for cut in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:cut]))
            if line is not None:
                break
        head = f"{self.origin}:{line}" if line else self.origin
        return f"{head}: {'.'.join(path)}"

    def expr(self, source: object, symbols: Mapping[str, Kind], *path: str) -> Expr:
        return parse(source, symbols, self.where(*path))

    def fail(self, message: str, *path: str) -> SpecError:
        return SpecError(f"{self.where(*path)}: {message}")

    def ident(self, name: str, what: str, *path: str) -> None:
        if not isinstance(name, str) or not CPP_IDENT.fullmatch(name) or name in CPP_KEYWORDS:
            raise self.fail(f"{what} '{name}' is not a valid C++ identifier", *path)

    def claim(self, name: str, what: str, *path: str) -> None:
        """A shape variable, parameter or derived value: one namespace, no name twice."""
        self.ident(name, f"{what} name", *path)
        if name in self.names_seen:
            raise self.fail(f"'{name}' is already defined as a {self.names_seen[name]}", *path)
        self.names_seen[name] = what

