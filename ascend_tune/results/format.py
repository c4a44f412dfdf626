"""The results file: versioned JSON, also the search cache.

Layout: the header (tool, spec, profile, search settings) indented, then ``"shapes": [`` and one
shape entry per line, sorted by shape. One entry per line keeps diffs readable and lets readers
stream the file (a 100 000-shape cache is never held in memory as a whole). It embeds the spec
and profile text it was computed from, so `emit` needs nothing else and a changed input is
detected. It holds no wall-clock values: the same inputs and seed give a byte-identical file.

While a search runs, new entries go to a journal beside the file (``.<name>.journal``, one
entry per line, appended), merged into the file when the journal grows as large as the file
and at the end; readers merge a journal a killed run left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ascend_tune import __version__
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.processes import process_alive
from ascend_tune.base.yamlio import ReadError, parse_json
from ascend_tune.results.entries import check_entry, corrupt, entry_json, is_int, kind, parse_text
from ascend_tune.spec.shapes import shape_key

SCHEMA_VERSION = 1
_SHAPES_OPEN = ' "shapes": ['
# A temp file beside its target: ``.NAME.PID.XXXXXXXX`` (mkstemp's 8 characters after the
# writer's pid; releases before the pid was added wrote ``.NAME.XXXXXXXX``).
_TEMP_SUFFIX = re.compile(r"(?:([0-9]+)\.)?[a-z0-9_]{8}")


def header(spec_name: str, spec_sha: str, spec_text: str, hw_name: str, hw_sha: str,
           hw_data: Mapping[str, Any], strategy: str, seed: int, budget: int,
           variant: str | None = None, top_k: int = 1,
           attrs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    search: dict[str, Any] = {"strategy": strategy, "seed": seed, "budget": budget}
    if top_k != 1:
        # Recorded only when it differs from the default, so files written before --top-k
        # keep their meaning (and their cache); a different top_k retunes every shape.
        search["top_k"] = top_k
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ascend-tune", "version": __version__},
        # The operator attribute values the entries were evaluated with (specs with attrs).
        "spec": {"name": spec_name, "variant": variant, "sha256": spec_sha, "text": spec_text,
                 **({"attrs": dict(attrs)} if attrs else {})},
        "hw": {"name": hw_name, "sha256": hw_sha, "data": hw_data},
        "search": search,
    }


def sort_key(entry: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(int(v) for v in entry["shape"].values())


def entry_line(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":"))


_SHAPE_PREFIX = re.compile(r'\{"shape":(\{[^{}]*\})')


def line_shape(line: str) -> dict[str, int]:
    """The shape of an entry line without parsing the whole entry (merges copy lines)."""
    m = _SHAPE_PREFIX.match(line)
    return json.loads(m.group(1)) if m else json.loads(line)["shape"]  # type: ignore[no-any-return]


def line_sort_key(line: str) -> tuple[int, ...]:
    return tuple(int(v) for v in line_shape(line).values())


def raw_entry_lines(path: Path) -> Iterator[str]:
    """Entry lines of a file in the line layout, as written (no re-encoding)."""
    _head, entries = stream(path)
    if isinstance(entries, _LineEntries):
        yield from entries.lines()
    else:
        for entry in sorted(entries, key=sort_key):
            yield entry_line(entry)


def render_head(head: Mapping[str, Any]) -> str:
    text = json.dumps({k: v for k, v in head.items() if k != "shapes"}, indent=1)
    return text[: text.rindex("}")].rstrip() + ",\n" + _SHAPES_OPEN + "\n"


def render_lines(head: Mapping[str, Any], lines: Iterable[str]) -> Iterator[str]:
    """The file as chunks: header, entry lines (already sorted), closing brackets."""
    yield render_head(head)
    first = True
    for line in lines:
        yield line if first else ",\n" + line
        first = False
    yield ("\n" if not first else "") + "]\n}\n"


def to_text(doc: Mapping[str, Any]) -> str:
    entries = sorted(doc.get("shapes", []), key=sort_key)
    return "".join(render_lines(doc, (entry_line(e) for e in entries)))


def check_writable(path: Path) -> None:
    """Fail before any work when the results cannot be written."""
    folder = path.parent if str(path.parent) else Path(".")
    blocker = next((f for f in (folder, *folder.parents) if f.exists() and not f.is_dir()),
                   None)
    if blocker is not None:
        raise AscendTuneError(f"{path}: {blocker} is a file, not a folder")
    if not folder.is_dir():
        # -o build/r.json in a fresh checkout: make the folder, as a build tool would.
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AscendTuneError(f"{path}: cannot create folder {folder}: "
                                  f"{exc.strerror}") from None
    if path.is_dir():
        raise AscendTuneError(f"{path}: is a folder; give a file name for the results")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot write results: {exc.strerror}") from None


def _file_mode(path: Path) -> int:
    """Keep an existing file's mode; a new file gets what the umask allows (mkstemp's 0600
    would lock out the rest of a build)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (a string or chunks) to a temp file beside ``path``, then rename."""
    folder = path.parent if str(path.parent) else Path(".")
    mode = _file_mode(path)
    tmp = None
    try:
        # The pid in the name lets a later run tell a killed writer's temp from a live one's.
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for chunk in [text] if isinstance(text, str) else text:
                fh.write(chunk)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot write: {exc.strerror}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def remove_stale_temps(path: Path) -> list[Path]:
    """Temp files a killed writer left beside ``path`` (call only while holding its lock)."""
    return _remove_temps(path, lambda pid: True)


def remove_dead_writers_temps(path: Path) -> list[Path]:
    """Temp files beside ``path`` left by writers that no longer run (a SIGKILLed ``emit``):
    safe without a lock, since only temps naming a process that is gone are removed."""
    return _remove_temps(path, lambda pid: pid is not None and not process_alive(pid))


def _remove_temps(path: Path, stale: Callable[[int | None], bool]) -> list[Path]:
    """Remove the temp files beside ``path`` whose writer's pid (None: not in the name)
    ``stale`` accepts; the paths removed."""
    folder = path.parent if str(path.parent) else Path(".")
    prefix = f".{path.name}."
    removed = []
    for candidate in folder.glob(f".{glob_escape(path.name)}.*"):
        match = _TEMP_SUFFIX.fullmatch(candidate.name[len(prefix):])
        if match is None or not candidate.is_file():
            continue
        if stale(None if match.group(1) is None else int(match.group(1))):
            with contextlib.suppress(OSError):
                candidate.unlink()
                removed.append(candidate)
    return removed


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def journal_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.journal")


def _check_head(path: Path, doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise corrupt(path, "top level is not an object")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise corrupt(path, f"schema_version {doc.get('schema_version')!r:.20}, expected "
                            f"{SCHEMA_VERSION}")
    for key in ("spec", "hw", "search"):
        if not isinstance(doc.get(key), dict):
            raise corrupt(path, f"missing '{key}'")
    return doc


def _open(path: Path) -> IO[str]:
    try:
        return path.open(encoding="utf-8", newline="\n")
    except FileNotFoundError:
        raise AscendTuneError(f"{path}: results file not found") from None
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot read results: {exc.strerror}") from None


def read_head(path: Path) -> dict[str, Any]:
    """The header only (cheap even for a huge file in the line layout)."""
    head, entries = stream(path)
    if isinstance(entries, _LineEntries):
        entries.close()  # not read: close now rather than when collected
    return head


def stream(path: Path) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """Header and a lazy iterator over the entries, in file order (sorted by shape)."""
    fh = _open(path)
    try:
        head_lines: list[str] = []
        for raw in fh:
            if raw.rstrip("\n") == _SHAPES_OPEN:
                break
            head_lines.append(raw)
            if len(head_lines) > 100_000:
                raise ValueError("header too long for the line layout")
        else:
            raise ValueError("no shapes line")
        # The line layout has a whole entry (or the closing bracket) on the next line.
        first = fh.readline()
        if first.rstrip("\n") != "]":
            json.loads(first.rstrip("\n").rstrip(","))
        head_text = "".join(head_lines).rstrip()
        if not head_text.endswith(","):
            raise ValueError("not the line layout")
        head = _check_head(path, parse_text(head_text[:-1] + "\n}", path))
    except (ValueError, UnicodeDecodeError, RecursionError):
        fh.close()
        return _stream_whole(path)
    except BaseException:
        fh.close()
        raise
    return head, _LineEntries(fh, first, path, len(head_lines) + 1)


class _LineEntries:
    """Iterator over the entries of a file in the line layout (parsed and checked), or over
    its raw entry lines."""

    def __init__(self, fh: IO[str], first: str, path: Path, line_no: int) -> None:
        self._fh, self._first, self._path, self._line_no = fh, first, path, line_no
        self._parsed: Iterator[dict[str, Any]] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._parsed is None:
            self._parsed = self._parse()
        return next(self._parsed)

    def _parse(self) -> Iterator[dict[str, Any]]:
        for index, (line_no, text) in enumerate(self._numbered()):
            yield check_entry(self._path, entry_json(text, self._path, line_no), line_no,
                               index)

    def summaries(self) -> Iterator[tuple[dict[str, int], bool]]:
        """(shape, holds measurements) per entry. A line as a search writes it, with no
        device measurement, is read up to its shape only: a search that extends a 200 MB
        file does not parse the 178 000 entries it leaves as they are (merges copy them)."""
        for index, (line_no, text) in enumerate(self._numbered()):
            m = _SHAPE_PREFIX.match(text)
            shape: Any = None
            if m and '"measured"' not in text:
                with contextlib.suppress(ValueError, RecursionError):
                    shape = json.loads(m.group(1))
            if isinstance(shape, dict) and shape and all(is_int(v) for v in shape.values()):
                yield shape, False
                continue
            entry = check_entry(self._path, entry_json(text, self._path, line_no), line_no,
                                 index)
            yield entry["shape"], has_measurements(entry)

    def lines(self) -> Iterator[str]:
        for _line_no, text in self._numbered():
            yield text

    def close(self) -> None:
        self._fh.close()

    def _numbered(self) -> Iterator[tuple[int, str]]:
        line_no = self._line_no
        with self._fh:
            closed = False
            try:
                for raw in _chain(self._first, self._fh):
                    line_no += 1
                    text = raw.rstrip("\n")
                    if text == "]":
                        closed = True
                        break
                    yield line_no, text.rstrip(",")
            except UnicodeDecodeError:
                raise corrupt(self._path, "not UTF-8", line_no) from None
            if not closed:
                raise corrupt(self._path, "truncated", line_no)


def _chain(first: str, rest: Iterable[str]) -> Iterator[str]:
    yield first
    yield from rest


def _stream_whole(path: Path) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """Any other JSON layout (older versions, hand edits): parsed whole."""
    fh = _open(path)
    try:
        with fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise corrupt(path, "not UTF-8") from None
    doc = _check_head(path, parse_text(text, path))
    shapes = doc.pop("shapes", [])
    if not isinstance(shapes, list):
        raise corrupt(path, f"'shapes' is {kind(shapes)}, not a list of shape results")
    checked = [check_entry(path, e, None, i) for i, e in enumerate(shapes)]
    return doc, iter(sorted(checked, key=sort_key))


def stream_summaries(path: Path) -> tuple[dict[str, Any], Iterator[tuple[dict[str, int], bool]]]:
    """Header and (shape, holds measurements) per entry, in file order (see
    ``_LineEntries.summaries``)."""
    head, entries = stream(path)
    if isinstance(entries, _LineEntries):
        return head, entries.summaries()
    return head, ((e["shape"], has_measurements(e)) for e in entries)


def read_journal(path: Path, head: Mapping[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """Entries a journal holds for ``head`` as (offset, length, entry); a torn last line (a
    killed writer) is dropped, a journal of other inputs is ignored."""
    jpath = journal_path(path)
    try:
        data = jpath.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise AscendTuneError(f"{jpath}: cannot read the search journal: {exc.strerror}") from None
    out: list[tuple[int, int, dict[str, Any]]] = []
    offset = 0
    first = True
    for raw in data.splitlines(keepends=True):
        start, offset = offset, offset + len(raw)
        if not raw.endswith(b"\n"):
            break
        try:
            item = parse_json(raw.decode("utf-8"), str(jpath))
        except (ReadError, UnicodeDecodeError):
            break
        if first:
            if item != journal_identity(head):
                return []
            first = False
            continue
        out.append((start, len(raw), check_entry(jpath, item, None, len(out))))
    return out


def journal_identity(head: Mapping[str, Any]) -> dict[str, Any]:
    return {"journal_of": {"spec": head["spec"].get("sha256"), "hw": head["hw"].get("sha256"),
                           "search": head["search"]}}


def read_all(path: Path, fields: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The whole document (header and every entry, a leftover journal merged) in memory;
    with ``fields``, each entry (checked whole) keeps only those (what emit reads of a
    178 000-shape file: 1.7 GB of parsed entries otherwise)."""
    head, entries = stream(path)
    if fields is not None:
        entries = ({k: e[k] for k in fields if k in e} for e in entries)
    by_key: dict[str, dict[str, Any]] = {}
    for entry in entries:
        key = shape_key(entry["shape"])
        if key in by_key:
            raise corrupt(path, f"shape {key} is listed twice")
        by_key[key] = entry
    for _offset, _length, entry in read_journal(path, head):
        # A journal line is newer than the file's entry for its shape (`measure` journals
        # whole entries it updated); later lines are newer than earlier ones.
        by_key[shape_key(entry["shape"])] = (entry if fields is None else
                                             {k: entry[k] for k in fields if k in entry})
    return {**head, "shapes": sorted(by_key.values(), key=sort_key)}


def index(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {shape_key(s["shape"]): s for s in doc.get("shapes", [])}


def has_measurements(entry: Mapping[str, Any]) -> bool:
    """Whether an entry holds a device measurement (``measure``: a timed or failed candidate
    or baseline, or the measured winner): what a retune must never drop."""
    def measured(m: Any) -> bool:
        return isinstance(m, Mapping) and ("time_us" in m or "error" in m)

    cands = entry.get("candidates")
    base = entry.get("baseline")
    return measured(entry.get("measured")) or (isinstance(cands, list) and any(
        isinstance(c, Mapping) and measured(c.get("measured")) for c in cands)) or (
        isinstance(base, Mapping) and measured(base.get("measured")))
