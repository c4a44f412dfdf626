"""The command-line application every command module registers on: ``app``, the root
``--version`` option, and :class:`ExitWith` for a command that leaves with a chosen code.

Apart from the package's ``__init__`` (which imports every command module, so they register)
so that a command module imports what it registers on without importing its own importer.
"""

from __future__ import annotations

import typer

from ascend_tune import __version__
from ascend_tune.cli import console

# -h as well as --help on every command; --install-completion / --show-completion for bash,
# zsh, fish and PowerShell (typer's own). pyproject pins typer below 0.27: later versions show
# "<bool>" after flags and "<str>" after values (tests/test_cli_help.py holds the help to that).
app = typer.Typer(add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Tiling auto-tuner for Huawei Ascend NPUs (no NPU needed).")


class ExitWith(Exception):
    """Leave with ``code`` after the command printed what it has to say."""

    def __init__(self, code: int) -> None:
        self.code = code


def _version(value: bool) -> None:
    if value:
        console.line(f"ascend-tune {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """ascend-tune: search tiling parameters with an analytical NPU pipeline model."""
