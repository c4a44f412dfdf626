"""The help a user reads: plain metavars (no "<bool>" after a flag, which made users type
``--fresh true``), -h beside --help on every command, shell completion."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from ascend_tune.cli import app

COMMANDS = [c.name or c.callback.__name__ for c in app.registered_commands
            if c.callback is not None]
HW_COMMANDS = ["list", "show"]


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args], env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_listed() -> None:
    assert COMMANDS == ["search", "explain", "emit", "calibrate", "validate", "measure",
                        "probe", "report", "check", "cmake-dir"]


@pytest.mark.parametrize("command", [[c] for c in COMMANDS] + [["hw", c] for c in HW_COMMANDS])
def test_help_shows_plain_metavars_and_bare_flags(command: list[str]) -> None:
    text = _help(*command, "--help")
    assert re.findall(r"<(?:str|int|float|bool|path|list\[\w+\])>", text) == []


@pytest.mark.parametrize("command", [[], ["search"], ["hw", "list"]])
def test_dash_h_is_help(command: list[str]) -> None:
    assert _help(*command, "-h") == _help(*command, "--help")


def test_search_help_names_option_types_and_defaults() -> None:
    text = _help("search", "--help")
    assert re.search(r"--budget\s+INTEGER\s+Configurations looked at per shape", text)
    assert "[default: 2000]" in text
    assert re.search(r"--fresh\s+Retune every shape", text)


def test_shell_completion_completes_commands_and_options(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # What the installed bash hook asks the program: the words so far, the one to complete.
    runner = CliRunner()
    env = {"_ASCEND_TUNE_COMPLETE": "complete_bash", "COMP_WORDS": "ascend-tune sea",
           "COMP_CWORD": "1"}
    result = runner.invoke(app, [], env=env, prog_name="ascend-tune")
    assert result.output.split() == ["search"]
    env.update(COMP_WORDS="ascend-tune search --fr", COMP_CWORD="2")
    result = runner.invoke(app, [], env=env, prog_name="ascend-tune")
    assert result.output.split() == ["--fresh"]
    assert "--install-completion" in _help("--help")
    assert isinstance(typer.__version__, str)


@pytest.mark.parametrize("command", [[c] for c in COMMANDS] + [["hw", c] for c in HW_COMMANDS])
def test_help_names_what_each_value_is(command: list[str]) -> None:
    """Every option's metavar says what is meant (SPEC, CHIP, K=V,... ...), never TEXT or
    NAME; no argument is a bare lower-case name; values are listed, not referred to."""
    text = _help(*command, "--help")
    assert re.findall(r"--[\w-]+(?:\s+-\w)?\s+(?:TEXT|NAME)\b", text) == []
    assert re.findall(r"│ [* ]\s+[a-z_]+\s+(?:TEXT|PATH)\b", text) == []
    assert "(see " not in text
    assert "(default: none" not in text


def test_measure_help_lists_every_run_placeholder() -> None:
    from ascend_tune.hil.command import JOB_PLACEHOLDERS, RUN_PLACEHOLDERS

    text = re.sub(r"[│\s]+", " ", _help("measure", "--help"))
    for name in (*JOB_PLACEHOLDERS, *RUN_PLACEHOLDERS):
        assert "{" + name + "}" in text, name


def test_metavars_name_the_value() -> None:
    search = _help("search", "--help")
    assert re.search(r"--hw\s+CHIP\s+Hardware profile", search)
    assert re.search(r"--shape\s+K=V,\.\.\.\s+One shape", search)
    assert re.search(r"│ \*\s+CHIP\s+TEXT\s+Profile file", _help("hw", "show", "--help"))
    assert re.search(r"--include\s+COEFFICIENT", _help("calibrate", "--help"))
    assert re.search(r"--soc\s+SOC", _help("emit", "--help"))
