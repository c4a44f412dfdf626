"""docs/spec_tutorial.md cannot rot: every ``sh`` block's commands run, in order, in one scratch
folder (``operator_specs`` and ``benchmarks`` linked in, as in a clone), and every code block
marked ``<!-- from: FILE -->`` is an exact excerpt of FILE."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

TUTORIAL = ROOT / "docs" / "spec_tutorial.md"
BLOCK = re.compile(r"(?:<!-- from: (?P<source>\S+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```",
                   re.S)


def _blocks(lang: str | None = None) -> list[tuple[str | None, str, str]]:
    text = TUTORIAL.read_text()
    return [(m["source"], m["lang"], m["body"]) for m in BLOCK.finditer(text)
            if lang is None or m["lang"] == lang]


def _commands() -> list[str]:
    return [line for _, _, body in _blocks("sh") for line in body.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _argv(command: str) -> list[str]:
    words = shlex.split(command)
    if words[0] == "ascend-tune":
        return [sys.executable, "-m", "ascend_tune", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    raise AssertionError(f"the tutorial runs only ascend-tune and python: {command}")


def test_the_tutorial_has_commands_and_excerpts() -> None:
    assert len(_commands()) >= 9
    sources = {s for s, _, _ in _blocks() if s is not None}
    assert sources == {"operator_specs/floor_mod.yaml", "operator_specs/broadcast_mul.yaml",
                       "examples/floor_mod/FloorModCustom/op_kernel/floor_mod_custom.cpp",
                       "examples/broadcast_mul/BroadcastMulCustom/op_kernel/"
                       "broadcast_mul_custom.cpp"}


@pytest.mark.parametrize("index", range(len([b for b in _blocks() if b[0] is not None])))
def test_every_marked_block_is_an_excerpt_of_its_file(index: int) -> None:
    source, _, body = [b for b in _blocks() if b[0] is not None][index]
    assert source is not None
    assert body in (ROOT / source).read_text(), f"block {index} is not in {source}:\n{body}"


def test_every_command_runs(tmp_path: Path) -> None:
    for folder in ("operator_specs", "benchmarks"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    for command in _commands():
        proc = subprocess.run(_argv(command), cwd=tmp_path, capture_output=True, text=True,
                              env=env, timeout=600)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    # What the commands say they write.
    tree = tmp_path / "FloorModCustom"
    assert (tree / "op_host" / "floor_mod_custom.cpp").is_file()
    assert (tree / "op_host" / "floor_mod_custom_tiling.h").is_file()
    assert (tree / "op_kernel" / "floor_mod_custom_tuned_constants.h").is_file()
    assert "<svg" in (tmp_path / "broadcast_mul.html").read_text()
