"""All terminal output: rich tables and progress on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

stdout = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    # One line, no markup interpretation: messages quote user input verbatim.
    sys.stderr.write(f"error: {message}\n")


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def note(message: str) -> None:
    # Information, not a problem (exit codes do not change).
    sys.stderr.write(f"note: {message}\n")


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
          right: Sequence[int] = ()) -> None:
    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        # Numbers keep their width; long text folds instead of being cut with an ellipsis.
        if i in right:
            t.add_column(c, justify="right", no_wrap=True)
        else:
            t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(str(x) for x in r))
    stdout.print(t)


def line(text: str) -> None:
    stdout.print(text, markup=False)


class Reporter:
    """Progress for a multi-shape run: a bar with ETA on a terminal, plain lines otherwise,
    nothing when quiet."""

    def __init__(self, total: int, quiet: bool, label: str = "tuning") -> None:
        self.total = total
        self.label = label  # what the bar says it is doing
        self.quiet = quiet
        self.done = 0
        self.interactive = stderr.is_terminal and not quiet
        self._progress: Progress | None = None
        self._task: Any = None

    @contextmanager
    def running(self) -> Iterator[Reporter]:
        if self.interactive:
            self._progress = Progress(TextColumn(f"[bold]{self.label}"), BarColumn(),
                                      MofNCompleteColumn(), TimeRemainingColumn(),
                                      TextColumn("{task.description}"), console=stderr,
                                      transient=True)
            with self._progress:
                self._task = self._progress.add_task("", total=self.total)
                yield self
        else:
            yield self

    def shape_done(self, text: str) -> None:
        self.done += 1
        if self.quiet:
            return
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=text)
        else:
            sys.stderr.write(f"[{self.done}/{self.total}] {text}\n")
            sys.stderr.flush()
