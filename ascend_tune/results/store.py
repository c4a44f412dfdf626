"""The writing side of a results file during a search: one writer at a time, constant cost
per shape, nothing lost to a kill.

* A lock file (``.<name>.lock``, ``flock``) held for the whole search: a second search on the
  same ``-o`` refuses with a message instead of silently replacing the first one's shapes; the
  settings check runs under the lock.
* Temp files a killed writer left are removed (under the lock, so none is in use).
* Each new entry is appended to the journal (``results.journal_path``) and flushed: a killed
  search loses at most the shape in flight, and the next run or any reader merges the rest.
* The journal is merged into the file (streamed, sorted merge) when it holds as many entries as
  the file, and at the end: the total merge work stays linear in the number of shapes.
* Only shape keys and journal offsets are held in memory, never the cached entries.
* ``replace`` journals a whole entry that supersedes the shape's earlier one (`measure` saves
  each measured candidate this way); merges and readers keep the newest line per shape.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.results import format as results
from ascend_tune.spec.shapes import shape_key

try:  # POSIX; elsewhere a second writer is not detected.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

MERGE_AT_LEAST = 256  # entries; below this the journal is merged only at the end


def lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


class ResultsStore:
    """Use as a context manager around a search writing to ``path``."""

    def __init__(self, path: Path, head: Mapping[str, Any], fresh: bool,
                 keep: set[str] | None = None) -> None:
        self.path = path
        self.head = dict(head)
        self.fresh = fresh
        self.keep = keep  # shape keys the file should hold; None keeps every entry
        self.keys: set[str] = set()
        self.invalidated: str | None = None  # why the file's entries were dropped
        self.pruned = 0  # entries dropped because their shape is no longer asked for
        self.saved = 0  # entries added by this run
        self.removed_temps: list[Path] = []
        self.stale_lock: int | None = None  # pid of a killed search whose lock file was left
        self._file_entries = 0
        self._file_valid = False  # the file on disk holds entries for this head
        self._pending: list[tuple[tuple[int, ...], int, int]] = []  # (sort key, offset, length)
        self._lock: IO[str] | None = None
        self._created = False
        self._journal: IO[bytes] | None = None
        self._journal_end = 0

    # ---- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> ResultsStore:
        results.check_writable(self.path)
        self._created = not self.path.exists()
        self._acquire()
        try:
            self.removed_temps = results.remove_stale_temps(self.path)
            self._load_existing()
            self._open_journal()
            if not self._file_valid and not self.pruned:
                # A header-only file at once: readers of a run killed before its first merge
                # find the file and merge the journal.
                results.write_atomic(self.path, results.render_lines(self.head, []))
                self._file_valid = True
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            failed = exc_type is not None and not issubclass(exc_type, KeyboardInterrupt)
            if failed and self._created and self.saved == 0:
                self._discard()  # bad input found before anything was tuned: leave no trace
            else:
                self.close()
        finally:
            self._release()

    def _discard(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        for leftover in (self.path, results.journal_path(self.path)):
            with contextlib.suppress(OSError):
                leftover.unlink()

    def close(self) -> None:
        """Merge what the journal holds into the file, then drop the journal."""
        if self._journal is None:
            return
        if self._pending or not self._file_valid:
            self._merge()
        else:
            # Nothing new: still mark the file newer than the inputs it answers, so a build
            # rule (results: shapes.yaml) does not rerun the search on every build.
            os.utime(self.path)
        self._journal.close()
        self._journal = None
        try:
            results.journal_path(self.path).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise AscendTuneError(f"{results.journal_path(self.path)}: cannot remove: "
                                  f"{exc.strerror}") from None

    # ---- writing ---------------------------------------------------------------------------

    def add(self, entry: Mapping[str, Any]) -> None:
        key = shape_key(entry["shape"])
        if key in self.keys:
            return
        self.replace(entry)

    def replace(self, entry: Mapping[str, Any]) -> None:
        """Save ``entry``, replacing the one its shape has (`measure` adds what it measured
        to entries as it goes; a killed run keeps every line it journaled)."""
        key = shape_key(entry["shape"])
        assert self._journal is not None
        data = (results.entry_line(entry) + "\n").encode("utf-8")
        try:
            self._journal.write(data)
            self._journal.flush()
        except OSError as exc:
            raise AscendTuneError(f"{results.journal_path(self.path)}: cannot write: "
                                  f"{exc.strerror}") from None
        self._pending.append((results.sort_key(entry), self._journal_end, len(data)))
        self._journal_end += len(data)
        self.keys.add(key)
        self.saved += 1
        if len(self._pending) >= max(MERGE_AT_LEAST, self._file_entries):
            self._merge()

    def entries(self, keys: set[str] | None = None) -> Iterator[dict[str, Any]]:
        """Entries on disk (file and journal) in shape order, optionally only ``keys``."""
        for entry in self._merged():
            if keys is None or shape_key(entry["shape"]) in keys:
                yield entry

    # ---- internals -------------------------------------------------------------------------

    def _acquire(self) -> None:
        if fcntl is None:  # pragma: no cover
            return
        lpath = lock_path(self.path)
        try:
            fh = lpath.open("a+", encoding="utf-8")
        except OSError as exc:
            raise AscendTuneError(f"{lpath}: cannot create the lock file: {exc.strerror}") from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read(32).strip()
            fh.close()
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise AscendTuneError(f"{self.path}: another ascend-tune search is writing it{who}; "
                                  "wait for it to finish or pass another -o") from None
        fh.seek(0)
        left = fh.read(32).strip()
        if left.isdigit() and int(left) != os.getpid():
            # A lock file that exists but is not held: its writer was killed (SIGKILL leaves
            # the file; the flock died with the process). Taken over, and said so.
            self.stale_lock = int(left)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock = fh

    def _release(self) -> None:
        if self._lock is not None:
            # Unlink while still holding it: a later search creates a fresh lock file. (A
            # search that opened the old file in between fails its non-blocking flock and
            # refuses, or locks an unlinked file just as we finish; both are harmless.)
            with contextlib.suppress(OSError):
                lock_path(self.path).unlink()
            self._lock.close()  # closing drops the flock
            self._lock = None

    def _load_existing(self) -> None:
        if not self.path.exists():
            return
        plan = survey(self.path, self.head, self.keep)
        lost = plan.measured if self.fresh else plan.measured_dropped
        if lost:
            # Device time is expensive (hours of NPU): a retune may replace a cache, never
            # what `measure` recorded.
            why = ("--fresh retunes every shape" if self.fresh else plan.invalidated
                   or f"{plan.pruned} shape(s) are no longer in the shape list")
            raise AscendTuneError(
                f"{self.path}: {lost} shape(s) there hold device measurements "
                f"(`ascend-tune measure`) that this search would drop ({why}); write to "
                "another file with -o, or move this one away if you mean to drop them")
        if plan.operator != self.head["spec"]["name"] and not self.fresh:
            # Another operator's file is a typo in -o, not a cache to retune: replacing it
            # would lose that operator's tuning (an edited spec of the same operator retunes).
            raise AscendTuneError(
                f"{self.path}: holds results of {plan.operator}, not "
                f"{self.head['spec']['name']}; write to another file with -o, or --fresh to "
                "replace it")
        if self.fresh:
            return
        self.invalidated, self.pruned = plan.invalidated, plan.pruned
        if plan.invalidated is None:
            self.keys = plan.cached
            self._file_entries = plan.entries
            self._file_valid = self.pruned == 0  # pruning rewrites the file

    def _open_journal(self) -> None:
        jpath = results.journal_path(self.path)
        replay = [] if self.fresh else results.read_journal(self.path, self.head)
        identity = (results.entry_line(results.journal_identity(self.head)) + "\n").encode()
        try:
            if replay:
                # Keep the intact part a killed run left; cut a torn last line.
                end = replay[-1][0] + replay[-1][1]
                with jpath.open("r+b") as fh:
                    fh.truncate(end)
                self._journal = jpath.open("ab")
                self._journal_end = end
            else:
                self._journal = jpath.open("wb")
                self._journal.write(identity)
                self._journal.flush()
                self._journal_end = len(identity)
        except OSError as exc:
            raise AscendTuneError(f"{jpath}: cannot write the search journal: "
                                  f"{exc.strerror}") from None
        for offset, length, entry in replay:
            # Every line, even for a shape the file holds: a journaled entry is newer.
            self.keys.add(shape_key(entry["shape"]))
            self._pending.append((results.sort_key(entry), offset, length))

    def _journal_lines(self) -> Iterator[tuple[tuple[int, ...], str]]:
        if not self._pending:
            return
        jpath = results.journal_path(self.path)
        with jpath.open("rb") as fh:
            for key, offset, length in sorted(self._pending):
                fh.seek(offset)
                yield key, fh.read(length).decode("utf-8").rstrip("\n")

    def _file_lines(self) -> Iterator[tuple[tuple[int, ...], str]]:
        if not self._file_valid and not (self.pruned and self.invalidated is None):
            return
        for line in results.raw_entry_lines(self.path):
            if self.keep is not None and self.pruned:
                shape = results.line_shape(line)
                if shape_key(shape) not in self.keep:
                    continue
            yield results.line_sort_key(line), line

    def _latest_lines(self) -> Iterator[str]:
        """File and journal lines in shape order, one per shape: the newest (journal after
        file, later journal lines after earlier ones; the merge is stable on the key)."""
        merged = heapq.merge(self._file_lines(), self._journal_lines(), key=lambda t: t[0])
        held: tuple[tuple[int, ...], str] | None = None
        for item in merged:
            if held is not None and held[0] != item[0]:
                yield held[1]
            held = item
        if held is not None:
            yield held[1]

    def _merged(self) -> Iterator[dict[str, Any]]:
        for line in self._latest_lines():
            yield json.loads(line)  # type: ignore[misc]

    def _merge(self) -> None:
        written = [0]

        def counted() -> Iterator[str]:
            for line in self._latest_lines():
                written[0] += 1
                yield line

        results.write_atomic(self.path, results.render_lines(self.head, counted()))
        self._file_entries = written[0]  # replaced entries do not add to the file
        self._file_valid = True
        self._pending = []
        assert self._journal is not None
        try:
            self._journal.truncate(0)
            self._journal.seek(0)
            identity = results.entry_line(results.journal_identity(self.head)) + "\n"
            self._journal.write(identity.encode())
            self._journal.flush()
            self._journal_end = len(identity.encode())
        except OSError as exc:
            raise AscendTuneError(f"{results.journal_path(self.path)}: cannot write: "
                                  f"{exc.strerror}") from None


@dataclass(frozen=True)
class Survey:
    """What a search would do with an existing results file (read only, no lock)."""

    invalidated: str | None  # the file answers other inputs: every entry is retuned
    cached: set[str]  # shape keys reusable as they are
    entries: int  # entries in the file
    pruned: int  # entries whose shape is no longer asked for
    measured: int = 0  # entries holding device measurements
    measured_dropped: int = 0  # of those, entries the search would drop (retune or prune)
    pruned_keys: tuple[str, ...] = ()  # the shape keys of the pruned entries
    operator: str | None = None  # the operator the file tunes (its spec's name)


def survey(path: Path, head: Mapping[str, Any], keep: set[str] | None) -> Survey:
    if not path.exists():
        return Survey(None, set(), 0, 0)
    old_head, entries = results.stream_summaries(path)
    reason = None
    for part, what in (("spec", "spec"), ("hw", "hardware profile")):
        if reason is None and old_head[part].get("sha256") != head[part]["sha256"]:
            reason = f"the {what} changed ({old_head[part].get('name')} -> {head[part]['name']})"
    old_search, new_search = old_head["search"], head["search"]
    if reason is None and old_search != new_search:
        # Name what changed, not two dicts (--seed 0 -> 5, not {...} -> {...}).
        keys = sorted(set(old_search) | set(new_search), key=str) if isinstance(
            old_search, dict) and isinstance(new_search, dict) else []
        changed = ", ".join(f"{k} {old_search.get(k)} -> {new_search.get(k)}" for k in keys
                            if old_search.get(k) != new_search.get(k))
        reason = f"the search settings changed ({changed or 'settings'})"
    cached: set[str] = set()
    pruned_keys: list[str] = []
    count = pruned = measured = measured_dropped = 0
    for shape, holds_measurements in entries:
        count += 1
        key = shape_key(shape)
        dropped = keep is not None and key not in keep
        if dropped:
            pruned += 1
            pruned_keys.append(key)
        else:
            cached.add(key)
        if holds_measurements:
            measured += 1
            measured_dropped += dropped or reason is not None
    operator = old_head["spec"].get("name")
    if reason is not None:
        return Survey(reason, set(), count, 0, measured, measured_dropped, (), operator)
    return Survey(None, cached, count, pruned, measured, measured_dropped, tuple(pruned_keys),
                  operator)
