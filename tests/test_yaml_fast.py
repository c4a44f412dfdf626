"""libyaml's C composer (base/yaml_fast.py) reads what the Python composer reads: the same
data and line marks, the same scalar resolution (no base 60, no timestamps), the same first
node refused as too deep; text it cannot judge (anchors, aliases, C parser errors) takes the
Python path, whose messages tests/test_hostile_reading.py pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_tune.base import yaml_fast, yamlio
from ascend_tune.base.yamlio import MAX_DEPTH, ReadError, parse_yaml
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not yaml_fast.AVAILABLE, reason="PyYAML without libyaml")

TEXTS = [p.read_text() for p in sorted((ROOT / "operator_specs").glob("*.yaml"))
         + sorted((ROOT / "examples").glob("*/shapes.yaml"))
         + sorted((ROOT / "hw_profiles").glob("*.yaml"))]
# Spec files hold '*' (multiplication) and take the Python path; shape files and profiles do not.
TEXTS = [t for t in TEXTS if yaml_fast.usable(t)]
TEXTS += ["- {M: 1:30, N: 2024-01-01, K: 0x10, x: .inf, y: ~, z: yes}\n",
          "a: 1\nb:\n  - [1, 2, {c: 3}]\n  - 'q'\n", "", "# only a comment\n", "7\n"]


def _python(text: str, monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as m:
        m.setattr(yaml_fast, "AVAILABLE", False)
        try:
            return parse_yaml(text, "t.yaml")
        except ReadError as e:
            return str(e)


def _c(text: str) -> object:
    assert yaml_fast.usable(text)
    try:
        return parse_yaml(text, "t.yaml")
    except ReadError as e:
        return str(e)


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_c_and_python_read_the_same(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _c(TEXTS[index]) == _python(TEXTS[index], monkeypatch)


def test_the_shape_files_and_profiles_are_compared() -> None:
    assert len(TEXTS) >= 20


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 5])
def test_the_same_node_is_too_deep(depth: int, monkeypatch: pytest.MonkeyPatch) -> None:
    block = "".join(" " * i + "- \n" for i in range(depth - 1)) + " " * (depth - 1) + "- 1\n"
    flow = "a:\n  b: " + "[" * depth + "1" + "]" * depth + "\n"
    for text in (block, flow):
        assert _c(text) == _python(text, monkeypatch)
    assert ("nested deeper" in str(_c(flow))) == (depth + 2 > MAX_DEPTH)


def test_anchors_take_the_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a: &x [1, 2]\nb: *x\n"
    assert not yaml_fast.usable(text)
    calls = []
    monkeypatch.setattr(yamlio, "_parse_c", lambda *a: calls.append(a))
    assert parse_yaml(text, "t.yaml")[0] == {"a": [1, 2], "b": [1, 2]}
    assert calls == []


def test_a_c_parser_error_gets_the_python_message(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    for text in ("a: [1, 2\n", "a: 1\n a: 2\n", "a: 1\na: 2\n", "- !!python/object {}\n"):
        assert _c(text) == _python(text, monkeypatch)
