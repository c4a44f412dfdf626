"""Row-kernel statements that depend on few parameters, computed once per combination.

A row kernel (:mod:`ascend_tune.model.fastpaths.kernel`) is straight-line code over one
configuration's index genome ``i0 .. in``. Most of its statements read only a few parameters:
matmul's core split (mDim, nDim, kDim: 196 combinations) fixes 27 of its ~340 statements, baseM
with baseK another dozen, and so on; only about a third read enough parameters that their
combinations run into the millions. A search scores thousands of configurations that share those
few values.

:func:`hoist` rewrites the kernel's source so that each group of statements reading at most
``cap`` combinations of parameters is a small function of those indices, its results kept in
a list indexed by the combination: the first row with that combination computes them, every
later row reads them. The statements themselves are unchanged (the same text, run in the same
order within each group), so every value is bit for bit what the straight-line kernel gives;
the kernel's checks (``if not ...: return _INF``) stay in the main function in their order.

Works on the kernel's own source only: assignments to one name, ``if not X: return _INF`` and
a final ``return``; any other statement leaves the source as it was. The rewritten source is
what the kernel compiles, so it is the text registered with linecache for tracebacks and
dumped with ``ASCEND_TUNE_DUMP_GENERATED`` (beside the straight-line source it came from).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# Largest memo table (combinations of a group's parameters): a list of this many slots per
# group, filled as rows arrive.
MEMO_CAP = 4096
# A group whose statements are fewer than this stays inline: its lookup would cost as much.
MIN_STATEMENTS = 4


@dataclass
class _Stmt:
    text: str
    defines: str | None  # the name assigned (None: a check or the return)
    uses: set[str]
    deps: frozenset[int]  # parameter indices read, directly or through earlier names


def hoist(source: str, name: str, sizes: Sequence[int], cap: int = MEMO_CAP
          ) -> tuple[str, dict[str, list[None]]]:
    """``source`` (one ``def name(i0, ..., in)``) with its few-parameter groups memoised,
    and the memo tables the new source needs in its scope."""
    params = {f"i{j}": j for j in range(len(sizes))}
    head = f"def {name}({', '.join(params)}):"
    lines = source.splitlines()
    if not lines or lines[0] != head or not all(t[:4] == "    " and t[4:5] not in ("", " ")
                                                for t in lines[1:]):
        return source, {}
    stmts = _statements([t[4:] for t in lines[1:]], params)
    if stmts is None:
        return source, {}
    defs = {s.defines: s for s in stmts if s.defines is not None}

    known: dict[frozenset[int], bool] = {}

    def small(deps: frozenset[int]) -> bool:
        out = known.get(deps)
        if out is None:
            out = known[deps] = math.prod(sizes[j] for j in deps) <= cap
        return out

    def lookup(stmt: _Stmt) -> bool:  # a parameter's value: cheaper inline than anything
        return stmt.defines is not None and stmt.defines[0] == "p"

    # Main statements: the large ones, every check and the return; the small names they read
    # are each group's results.
    main = [s for s in stmts if s.defines is None or not small(s.deps)]
    wanted: dict[frozenset[int], list[str]] = {}
    for s in main:
        for n in sorted(s.uses):
            d = defs.get(n)
            if d is not None and small(d.deps) and not lookup(d):
                group = wanted.setdefault(d.deps, [])
                if n not in group:
                    group.append(n)
    groups = _merged(wanted)
    position = {n: k for k, n in enumerate(defs)}
    hoisted: list[tuple[frozenset[int], list[str], list[_Stmt]]] = []
    inline: set[str] = set()
    for deps, names in groups.items():
        body = _closure(names, defs, position)
        if sum(1 for s in body if not lookup(s)) < MIN_STATEMENTS:
            inline.update(s.defines for s in body if s.defines is not None)
        else:
            hoisted.append((deps, names, body))
    if not hoisted:
        return source, {}
    keep = {id(s) for s in main} | {id(defs[n]) for n in inline}
    # Parameter lookups the main statements read.
    body_main = [s for s in stmts if id(s) in keep]
    needed = set().union(*(s.uses for s in body_main))
    out: list[str] = []
    tables: dict[str, list[None]] = {}
    placed: set[int] = set()
    helpers: list[str] = []
    exported = {n: g for g, (_d, names, _b) in enumerate(hoisted) for n in names}
    for s in stmts:
        if lookup(s) and s.defines in needed:
            out.append(s.text)
            continue
        if id(s) not in keep:
            continue
        for g in sorted({exported[n] for n in s.uses if n in exported} - placed):
            placed.add(g)
            deps, names, body = hoisted[g]
            args = [f"i{j}" for j in sorted(deps)]
            tables[f"_M{g}"] = [None] * math.prod(sizes[j] for j in deps)
            helpers.append(_helper(g, args, names, body))
            out += _read(g, args, sizes, sorted(deps), names)
        out.append(s.text)
    text = "\n".join([*helpers, head, *(f"    {line}" for line in out)]) + "\n"
    return text, tables


_NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) = ")


def _statements(body: list[str], params: dict[str, int]) -> list[_Stmt] | None:
    """The kernel's statements (one per line, as the kernel writes them) with what each
    defines and reads; None for anything a kernel does not write."""
    out: list[_Stmt] = []
    deps: dict[str, frozenset[int]] = {}
    for text in body:
        defines = None
        check = text.startswith("if not ") and text.endswith(": return _INF")
        if check or text.startswith("return "):
            rest = text
        else:
            m = _ASSIGN.match(text)
            if m is None:
                return None
            defines, rest = m.group(1), text[m.end():]
        uses = set(_NAME.findall(rest))
        d = frozenset().union(*(deps.get(n, frozenset()) for n in uses),
                              {params[n] for n in uses if n in params})
        if defines is not None:
            if defines in deps or defines in params:
                return None  # names are assigned once in a kernel
            deps[defines] = d
        out.append(_Stmt(text, defines, uses, d))
    return out


def _merged(wanted: dict[frozenset[int], list[str]]) -> dict[frozenset[int], list[str]]:
    """Groups whose parameters are a subset of another group's join that group (one lookup
    instead of several): the smallest superset, the first in sorted order on ties."""
    keys = sorted(wanted, key=lambda d: (len(d), sorted(d)))
    out: dict[frozenset[int], list[str]] = {}
    for d in reversed(keys):
        supers = [o for o in out if d < o]
        target = min(supers, key=lambda o: (len(o), sorted(o))) if supers else d
        out.setdefault(target, [])
        out[target] += [n for n in wanted[d] if n not in out[target]]
    return out


def _closure(names: list[str], defs: dict[str, _Stmt], position: dict[str, int]
             ) -> list[_Stmt]:
    """The statements that compute ``names``, in source order."""
    need: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n in need or n not in defs:
            continue
        need.add(n)
        todo += list(defs[n].uses)
    return sorted((defs[n] for n in need), key=lambda s: position[s.defines or ""])


def _helper(g: int, args: list[str], names: list[str], body: list[_Stmt]) -> str:
    result = f"({', '.join(names)},)"
    lines = [f"def _h{g}({', '.join(args)}):", *(f"    {s.text}" for s in body),
             f"    return {result}"]
    return "\n".join(lines)


def _read(g: int, args: list[str], sizes: Sequence[int], deps: list[int],
          names: list[str]) -> list[str]:
    """Main-function lines that read group ``g``'s results for this row's combination (its
    slot: the combination's number, parameters with one value left out)."""
    index = "0"
    for j in deps:
        if sizes[j] > 1:
            index = f"i{j}" if index == "0" else f"({index}) * {sizes[j]} + i{j}"
    return [f"_k = {index}",
            f"_v = _M{g}[_k]",
            "if _v is None:",
            f"    _v = _M{g}[_k] = _h{g}({', '.join(args)})",
            f"{', '.join(names)}, = _v"]
