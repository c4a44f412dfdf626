"""The command line: a thin shell over the core that parses options, calls the public API
and prints. The only place that exits.

Exit codes: 0 success; 1 the command worked and found what it reports (stale emitted files,
a shape with no valid configuration, a results file --locked would change); 2 bad input or
usage (one line on stderr); 130 interrupted; 141 the reader of stdout went away (``| head``:
quietly, as other command-line tools do).

One module per command group registers its commands on ``app``: search, explain, emit,
measure (calibrate, validate), report, check, hw, cmake-dir, db.
"""

from __future__ import annotations

import os
import sys

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.memory import keep_batch_memory
from ascend_tune.cli import console
from ascend_tune.cli.app import ExitWith, app

__all__ = ["ExitWith", "app", "main"]

# Every command module registers on ``app`` when imported; the order is the help order.
from ascend_tune.cli import search, explain, emit, measure, hil, probe, report, check, hw, cmake, db  # noqa: F401, I001


def main() -> None:
    # Standalone mode: typer/click own usage errors (one message, exit 2) and --help; our own
    # errors propagate out of app() and become one line with the contract's exit code.
    keep_batch_memory()  # the command line owns its process: batches reuse their memory
    try:
        app()
    except ExitWith as exc:
        _flush_or_quiet()
        sys.exit(exc.code)
    except AscendTuneError as exc:
        console.error(str(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        console.interrupted(_INTERRUPTED)
        sys.exit(130)
    except BrokenPipeError:
        _quiet_exit()
    except SystemExit as exc:
        # click turns a broken stdout into a silent exit 1 (1 means "found something" here)
        # after wrapping stdout in its PacifyFlushWrapper.
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            _quiet_exit()
        if exc.code == 130:  # click's exit for a Ctrl-C it caught
            console.interrupted(_INTERRUPTED)
        _flush_or_quiet()
        raise


# Results and journals are saved shape by shape, every other file is written whole or not at
# all: an interrupt loses at most the work in flight.
_INTERRUPTED = "what finished is saved"


def _flush_or_quiet() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_exit()


def _quiet_exit() -> None:
    # stdout's reader closed it (``search ... | head -3``): everything computed is already
    # saved; point stdout at /dev/null so the interpreter's final flush does not complain.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(141)
