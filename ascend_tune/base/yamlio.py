"""The one reading layer for untrusted input: bytes to text, YAML, JSON and CSV.

Every reader of user files (specs, profiles, shape lists, measurement files and manifests,
results) goes through here, so each hostile input is answered the same way everywhere: one
``ReadError`` (an ``AscendTuneError``) whose message is a single line naming the file and,
where it makes sense, the line. What is refused:

* files larger than a per-kind limit (read with a bounded read, so ``/dev/zero`` is safe too);
* text that is not UTF-8 (the byte offset and line are named), UTF-16, control characters;
  a UTF-8 byte order mark is accepted and stripped;
* YAML: nesting deeper than ``MAX_DEPTH``, aliases that expand to more than
  ``MAX_ALIAS_NODES`` extra nodes ("billion laughs"), recursive aliases, tags outside the core
  schema (``!!python/object``, ``!custom``, ``!!binary``, ...), duplicate keys, ``.nan`` and
  ``.inf``, merge keys; dates stay strings;
* JSON: nesting deeper than ``MAX_DEPTH``, ``NaN`` / ``Infinity`` / overflowing numbers,
  duplicate keys, integers with thousands of digits;
* CSV: fields over the csv module's limit and other ``_csv.Error`` (with the line number).

Line numbers let error messages point at ``spec.yaml:42``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any, ClassVar

import yaml

from ascend_tune.base import yaml_fast
from ascend_tune.base.errors import AscendTuneError

KeyPath = tuple[str, ...]

MiB = 1 << 20
# Size limits per kind of input. Legit files are far below them: a spec or profile is tens
# of kB, a 100 000-shape CSV about 2 MB; msprof op_summary files and results of big suites
# can be large.
LIMIT_YAML = 4 * MiB  # spec, profile, manifest (the YAML parser is pure Python)
LIMIT_SHAPES = 32 * MiB
LIMIT_MEASUREMENTS = 512 * MiB
LIMIT_RESULTS = 1024 * MiB
MAX_DEPTH = 100  # nesting levels of YAML / JSON collections
MAX_ALIAS_NODES = 100_000  # extra nodes YAML aliases may expand to
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

_BOM = "\ufeff"
# C0 controls except tab, LF, CR; and DEL. NUL is the usual sign of a binary file.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# What the YAML reader refuses (PyYAML's Reader.NON_PRINTABLE).
_YAML_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class ReadError(AscendTuneError):
    """Unreadable input. ``problem`` is the message without the location, so callers can
    rephrase it (``results`` wraps it as 'corrupt results file (...)')."""

    def __init__(self, origin: str, problem: str, line: int | None = None) -> None:
        self.origin = origin
        self.problem = one_line(problem)
        self.line = line
        super().__init__(f"{origin}:{line}: {self.problem}" if line else
                         f"{origin}: {self.problem}")


def one_line(text: str, limit: int = 300) -> str:
    """``text`` with every run of whitespace (newlines included) made one space, cut at
    ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def show(value: Any, limit: int = 40) -> str:
    """``repr(value)`` for an error message, cut so a hostile value cannot flood it."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10 ** 60 else \
        f"{str(value)[:20]}... ({len(str(abs(value)))} digits)"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def in_int64(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


# ---- bytes to text ----------------------------------------------------------------------------


def decode(data: bytes, origin: str) -> str:
    """UTF-8 bytes to text: a byte order mark is dropped; invalid UTF-8 and control
    characters are refused with their line."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ReadError(origin, "is UTF-16 text; save it as UTF-8")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReadError(origin, f"not UTF-8: byte 0x{data[exc.start]:02x} at byte offset "
                                f"{exc.start} cannot be decoded",
                        data.count(b"\n", 0, exc.start) + 1) from None
    check_control(text, origin)
    return text


def check_control(text: str, origin: str) -> None:
    m = _CONTROL.search(text)
    if m:
        raise ReadError(origin, f"control character U+{ord(m.group()):04X} at column "
                                f"{m.start() - text.rfind(chr(10), 0, m.start())}; "
                                "not a text file?", line_of(text, m.start()))


def read_bytes(path: Path, what: str, limit: int) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise AscendTuneError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise AscendTuneError(f"{path}: is a folder, expected a {what} file") from None
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot read {what}: "
                              f"{exc.strerror or one_line(str(exc))}") from None
    if len(data) > limit:
        raise AscendTuneError(f"{path}: {what} is larger than {limit // MiB} MiB; refusing to "
                              "read it")
    return data


def read_text(path: Path, what: str, limit: int = LIMIT_YAML) -> str:
    """The text of a user file: at most ``limit`` bytes of UTF-8 (a BOM is dropped)."""
    return decode(read_bytes(path, what, limit), str(path))


# ---- YAML -----------------------------------------------------------------------------------

_CORE = "tag:yaml.org,2002:"
_CORE_TAGS = {_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map")}


def _no_base_60(rx: re.Pattern[str]) -> re.Pattern[str]:
    """YAML 1.1 reads ``1:30`` as the base-60 integer 90 (and ``1:30.5`` as a float): a shape
    range ``M: 1:30`` would silently become M=90. YAML 1.2 dropped base 60; so do we, and such a
    scalar stays the string it looks like."""
    lines = rx.pattern.split("\n")
    kept: list[str] = []
    for alt in lines:
        if "(?::[0-5]?[0-9])" not in alt:
            kept.append(alt)
        elif alt.endswith(")$") and kept:  # the last alternative closes the group
            kept[-1] += ")$"
    return rx if len(kept) == len(lines) else re.compile("\n".join(kept), rx.flags)


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that bounds nesting and alias expansion while composing, and resolves
    plain scalars by the core schema only (no timestamps, no '=')."""

    # (newer types-PyYAML declare it an instance variable; it is a class table in PyYAML)
    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, Any]]]] = {  # type: ignore[misc]
        first: [(tag, _no_base_60(rx)) for tag, rx in resolvers
                if tag not in (_CORE + "timestamp", _CORE + "value")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def __init__(self, text: str, origin: str) -> None:
        super().__init__(text)
        self.origin = origin
        self.depth = 0
        self.expanded = 0
        self.sizes: dict[int, int] = {}
        self.open_anchors: set[str] = set()

    def _refuse(self, mark: Any, problem: str) -> ReadError:
        return ReadError(self.origin, problem, mark.line + 1 if mark is not None else None)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self.open_anchors:
                raise self._refuse(event.start_mark, f"recursive alias "
                                   f"*{one_line(event.anchor, 40)} (a node that contains itself)")
            node = super().compose_node(parent, index)
            self.expanded += self.sizes.get(id(node), 1)
            if self.expanded > MAX_ALIAS_NODES:
                raise self._refuse(event.start_mark, "aliases expand to more than "
                                   f"{MAX_ALIAS_NODES} nodes (an alias bomb?)")
            return node
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self._refuse(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self.open_anchors.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
            if anchor is not None:
                self.open_anchors.discard(anchor)
        if isinstance(node, yaml.MappingNode):
            size = 1 + sum(self.sizes.get(id(k), 1) + self.sizes.get(id(v), 1)
                           for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self.sizes.get(id(item), 1) for item in node.value)
        else:
            size = 1
        self.sizes[id(node)] = size
        return node


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag


def parse_yaml(text: str, origin: str) -> tuple[Any, dict[KeyPath, int]]:
    """Parse ``text``; return the data and a map from key path to 1-based line number."""
    if text.startswith(_BOM):
        text = text[1:]
    bad = _YAML_NON_PRINTABLE.search(text)
    if bad:
        raise ReadError(origin, f"character U+{ord(bad.group()):04X} is not allowed in YAML "
                                f"(column {bad.start() - text.rfind(chr(10), 0, bad.start())})",
                        line_of(text, bad.start()))
    lines: dict[KeyPath, int] = {}
    fast = _parse_c(text, origin, lines) if _CLoader and yaml_fast.usable(text) else None
    if fast is not None:
        return fast[0], lines
    lines.clear()
    loader = _Loader(text, origin)
    try:
        node = loader.get_single_node()
        data = _convert(loader, node, (), lines, origin) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context
        if exc.context and exc.context.startswith("found"):  # composer: "found duplicate anchor"
            problem = exc.context.split(";")[0]
        raise ReadError(origin, f"malformed YAML: {problem}",
                        mark.line + 1 if mark is not None else None) from None
    except yaml.YAMLError as exc:
        raise ReadError(origin, f"malformed YAML: {exc}") from None
    except RecursionError:
        raise ReadError(origin, "nested too deeply") from None
    finally:
        loader.dispose()
    return data, lines


_CLoader = yaml_fast.loader_class(_Loader.yaml_implicit_resolvers)


def _parse_c(text: str, origin: str, lines: dict[KeyPath, int]) -> tuple[Any] | None:
    """libyaml's parse of ``text`` (yaml_fast), or None where the Python loader must decide."""
    loader = _CLoader(text)  # type: ignore[misc]
    try:
        node = loader.get_single_node()
        if node is None:
            return (None,)
        deep = yaml_fast.first_too_deep(node, MAX_DEPTH)
        if deep is not None:
            raise ReadError(origin, f"nested deeper than {MAX_DEPTH} levels",
                            deep.start_mark.line + 1)
        return (_convert(loader, node, (), lines, origin),)
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()


def _convert(loader: Any, node: yaml.Node, path: KeyPath,
             lines: dict[KeyPath, int], origin: str) -> Any:
    line = node.start_mark.line + 1
    if node.tag not in _CORE_TAGS:
        if node.tag == _CORE + "merge":
            raise ReadError(origin, "merge keys (<<) are not supported; write the keys out",
                            line)
        raise ReadError(origin, f"tag '{one_line(_tag_name(node.tag), 60)}' is not allowed; "
                                "only plain YAML data (strings, numbers, booleans, null, lists, "
                                "mappings)", line)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                raise ReadError(origin, f"mapping keys must be names, got a {kind}", key_line)
            key = _convert(loader, key_node, path, lines, origin)
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise ReadError(origin, f"mapping keys must be names, got {show(key)}", key_line)
            skey = str(key)
            if skey in out:
                raise ReadError(origin, f"duplicate key '{'.'.join((*path, skey))}'", key_line)
            key_path = (*path, skey)
            lines[key_path] = key_line
            out[skey] = _convert(loader, value_node, key_path, lines, origin)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(loader, item, (*path, str(i)), lines, origin)
                for i, item in enumerate(node.value)]
    try:  # a core-tag scalar: its constructor directly (what construct_object calls)
        value = loader.yaml_constructors[node.tag](loader, node)
    except (ValueError, KeyError, TypeError, OverflowError) as exc:
        if "digits" in str(exc):
            raise ReadError(origin, f"{show(node.value)} has more than 4300 digits",
                            line) from None
        raise ReadError(origin, f"cannot read {show(node.value)} as "
                                f"{_tag_name(node.tag)}", line) from None
    if isinstance(value, float) and not math.isfinite(value):
        where = f"{'.'.join(path)}: " if path else ""
        raise ReadError(origin, f"{where}{show(node.value)} is not a finite number", line)
    return value


def load_yaml(path: Path, what: str, limit: int = LIMIT_YAML) -> tuple[Any, dict[KeyPath, int]]:
    return parse_yaml(read_text(path, what, limit), str(path))


# ---- JSON -----------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, literal: str, problem: str, nth: int = 1) -> None:
        super().__init__(problem)
        self.literal = literal  # where it is: the nth standalone occurrence of this text
        self.nth = nth
        self.problem = problem


def _no_constant(literal: str) -> Any:
    raise _Refused(literal, f"{literal} is not a number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _Refused(literal, f"{show(literal)} overflows a float")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _Refused(json.dumps(k), f"duplicate key {show(k)}", nth=2)
            seen.add(k)
    return out


def literal_line(text: str, literal: str, nth: int = 1) -> int | None:
    """The line of the ``nth`` occurrence of ``literal`` standing alone (not part of a longer
    number or name) in ``text``: for errors found after ``json.loads``, which keeps no
    positions."""
    found = re.finditer(r"(?<![\w.+-])" + re.escape(literal) + r"(?![\w.])", text)
    for i, m in enumerate(found, start=1):
        if i == nth:
            return line_of(text, m.start())
    return None


def parse_json(text: str, origin: str, first_line: int = 1) -> Any:
    """Parse untrusted JSON. Line numbers in errors count from ``first_line`` (for text that
    is one line of a bigger file)."""
    if text.startswith(_BOM):
        text = text[1:]

    def at(line: int | None) -> int | None:
        return None if line is None else line + first_line - 1

    if _json_depth(text) > MAX_DEPTH:
        raise ReadError(origin, f"nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ReadError(origin, f"malformed JSON: {exc.msg} (column {exc.colno})",
                        at(exc.lineno)) from None
    except _Refused as exc:
        leaf = _refused_leaf(text) if exc.nth == 1 else None
        problem = f"{leaf}: {exc.problem}" if leaf else exc.problem
        raise ReadError(origin, problem, at(literal_line(text, exc.literal, exc.nth))) from None
    except RecursionError:
        raise ReadError(origin, f"nested deeper than {MAX_DEPTH} levels", at(1)) from None
    except ValueError as exc:  # e.g. an integer with more than 4300 digits
        problem = ("a number has more than 4300 digits" if "digits" in str(exc) else
                   f"malformed JSON: {one_line(str(exc), 100)}")
        raise ReadError(origin, problem) from None
    return data


class _Bad:
    """Stands in for a refused number in the second parse that locates it."""


def _refused_leaf(text: str) -> str | None:
    """The key path (``hw.data.chip.clock_mhz``, ``shapes[3].best``) of the first NaN,
    Infinity or overflowing number: a line number alone does not say which value of a
    one-line entry or an embedded profile is wrong."""
    bad = _Bad()

    def number(literal: str) -> Any:
        value = float(literal)
        return value if math.isfinite(value) else bad

    try:
        data = json.loads(text, parse_constant=lambda _literal: bad, parse_float=number)
    except (ValueError, RecursionError):
        return None

    def find(node: Any, path: str) -> str | None:
        if node is bad:
            return path or "(top level)"
        items = (node.items() if isinstance(node, dict) else
                 ((f"[{i}]", v) for i, v in enumerate(node)) if isinstance(node, list) else ())
        for key, value in items:
            sub = (f"{path}{key}" if isinstance(node, list) else
                   f"{path}.{key}" if path else str(key))
            found = find(value, sub)
            if found is not None:
                return found
        return None

    return find(data, "")


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_BRACKETS = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _json_depth(text: str) -> int:
    """Deepest bracket nesting outside strings (in C-speed passes; for valid JSON exact)."""
    brackets = _JSON_BRACKETS.findall(_JSON_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def load_json_text(text: str, origin: str) -> Any:
    """Alias of ``parse_json`` for whole files."""
    return parse_json(text, origin)


def load_json(path: Path, what: str, limit: int = LIMIT_RESULTS) -> Any:
    return parse_json(read_text(path, what, limit), str(path))


# ---- CSV ------------------------------------------------------------------------------------


def csv_rows(text: str, origin: str, comments: bool = False
             ) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each non-empty CSV row of ``text``, header included; with
    ``comments`` lines starting with '#' are skipped. A field over the csv module's limit or
    another CSV error is a ``ReadError`` naming the line. The line number is where the row
    ends (a quoted field may span lines)."""
    if text.startswith(_BOM):
        text = text[1:]
    buffer = io.StringIO(text, newline="")
    real = [0]
    if comments:
        def source() -> Iterator[str]:
            for n, raw in enumerate(buffer, start=1):
                if not raw.startswith("#"):
                    real[0] = n
                    yield raw
        reader = csv.reader(source())
    else:
        reader = csv.reader(buffer)
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            line = (real[0] if comments else reader.line_num) or 1
            message = str(exc)
            if "field limit" in message:
                message = (f"a field is longer than {csv.field_size_limit()} characters; "
                           "not a CSV file?")
            raise ReadError(origin, f"malformed CSV: {one_line(message, 100)}", line) from None
        if fields:
            yield (real[0] if comments else reader.line_num), fields


def is_finite_number(value: object) -> bool:
    """A parsed value that is a real, finite number (not a bool, which JSON readers give as
    an int): what a measured time or a rate read from a file must be before any arithmetic."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
