"""All terminal output: rich tables and progress on a terminal, plain lines otherwise."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's default exits 1, which means "found something" here; cli.main turns this
        # into a quiet exit for ``ascend-tune ... | head``.
        raise BrokenPipeError


stdout = _Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 200)
stderr = _Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    # One line, no markup interpretation: messages quote user input verbatim.
    sys.stderr.write(f"error: {message}\n")


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def interrupted(message: str) -> None:
    # The user asked for it (Ctrl-C): not an error; what is said is what was kept.
    sys.stderr.write(f"interrupted: {message}\n")


def note(message: str) -> None:
    # Information, not a problem (exit codes do not change).
    sys.stderr.write(f"note: {message}\n")


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
          right: Sequence[int] = ()) -> None:
    cells = [[str(x) for x in r] for r in rows]
    natural = sum(max(len(c), *(len(r[i]) for r in cells)) + 3
                  for i, c in enumerate(columns)) + 1
    if natural > stdout.width:
        # Too wide for the terminal: let text wrap after the separators of shape keys and
        # settings (M=128, N=4096,...) rather than fold a token mid-word (M=128,N / =4096).
        cells = [[c if i in right else _BREAK_AFTER.sub(", ", c) for i, c in enumerate(r)]
                 for r in cells]
    stdout.print(_table(title, columns, cells, right, compact=natural > stdout.width))


_BREAK_AFTER = re.compile(r",(?=\S)")


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
           right: Sequence[int], compact: bool = False) -> Table:
    t = Table(title=title, title_justify="left", pad_edge=not compact,
              collapse_padding=compact)
    for i, c in enumerate(columns):
        # No column narrower than its longest word (a number, a K=V token, a header word):
        # rich then wraps at spaces and folds a token only when a word alone is too wide.
        words = [w for text in (c, *(r[i] for r in rows)) for w in text.split()]
        widest = min(max(map(len, words), default=1), 24)
        if i in right:
            t.add_column(c, justify="right", min_width=widest, overflow="fold")
        else:
            t.add_column(c, min_width=widest, overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


def line(text: str) -> None:
    stdout.print(text, markup=False)


class Reporter:
    """Progress for a multi-shape run: a bar with ETA on a terminal, plain lines otherwise,
    nothing when quiet."""

    def __init__(self, total: int, quiet: bool, label: str = "tuning",
                 bar: bool = False) -> None:
        self.total = total
        self.label = label  # what the bar says it is doing
        self.quiet = quiet
        self.done = 0
        # ``bar``: the bar even where stderr is no terminal (a CI log that renders it).
        self.interactive = (stderr.is_terminal or bar) and not quiet
        self._console = stderr if stderr.is_terminal or not bar else _Console(
            stderr=True, highlight=False, soft_wrap=True, force_terminal=True)
        self._progress: Progress | None = None
        self._task: Any = None

    @contextmanager
    def running(self) -> Iterator[Reporter]:
        if self.interactive:
            self._progress = Progress(TextColumn(f"[bold]{self.label}"), BarColumn(),
                                      MofNCompleteColumn(), TimeRemainingColumn(),
                                      TextColumn("{task.description}"),
                                      console=self._console,
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


def percent_text(value: float) -> str:
    """A precision in percent as a reader wants it: ``<0.1 %``, ``2.3 %``, ``12 %``,
    ``>100 %`` (beyond that the number says nothing but "not determined")."""
    if value < 0.1:
        return "<0.1 %"
    if value < 10:
        return f"{value:.1f} %"
    return f"{value:.0f} %" if value < 99.5 else ">100 %"
