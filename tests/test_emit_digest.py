"""The inputs digest in every emitted banner (emit/bundle.py ``digest``): the same for the same
inputs, different when anything the emitted files are made from differs, and the same whether
emit reads the file whole or keeps only the fields it uses of each entry (a large file)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ascend_tune.emit import render as emit
from ascend_tune.emit.bundle import ENTRY_FIELDS
from ascend_tune.results import format as results
from tests.conftest import ROOT

_DOC: dict[str, Any] = json.loads((ROOT / "examples/add/results.json").read_text())
_RUNNER = {"blockDim": 1, "tileLength": 1024, "bufferNum": 1}  # valid on totalLength=1000


def _digest(doc: dict[str, Any]) -> str:
    return emit.load_bundle(doc, "r.json").digest


def _changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = copy.deepcopy(_DOC)
    change(doc)
    return doc


def test_same_inputs_same_digest() -> None:
    first = _digest(copy.deepcopy(_DOC))
    assert len(first) == 64 and int(first, 16) >= 0
    assert _digest(copy.deepcopy(_DOC)) == first
    files = emit.render(emit.load_bundle(copy.deepcopy(_DOC), "r.json"), "macro")
    assert all(f"// Inputs digest: sha256:{first}\n" in text for text in files.values())


def _spec_text(doc: dict[str, Any]) -> None:
    doc["spec"]["text"] += "\n# a comment\n"


def _variant(doc: dict[str, Any]) -> None:
    doc["spec"]["variant"] = "float32"


def _profile(doc: dict[str, Any]) -> None:
    doc["hw"]["data"]["chip"]["clock_mhz"]["value"] = 1700


def _shape(doc: dict[str, Any]) -> None:
    doc["shapes"][0]["shape"]["totalLength"] = 1008


def _winner(doc: dict[str, Any]) -> None:
    doc["shapes"][0]["best"] = dict(_RUNNER)


def _runner_up(doc: dict[str, Any]) -> None:
    doc["shapes"][0]["candidates"] = [{"config": doc["shapes"][0]["best"]},
                                      {"config": dict(_RUNNER)}]


def _one_shape_less(doc: dict[str, Any]) -> None:
    del doc["shapes"][-1]


@pytest.mark.parametrize("change", [_spec_text, _variant, _profile, _shape, _winner,
                                    _runner_up, _one_shape_less])
def test_what_the_files_are_made_of_changes_it(change: Callable[[dict[str, Any]], None]
                                               ) -> None:
    before = _digest(copy.deepcopy(_DOC))
    after = _digest(_changed(change))
    assert after != before


def test_runner_up_order_changes_it() -> None:
    # The emitted candidate table lists runners-up in file order.
    two = [{"config": dict(_RUNNER)}, {"config": {**_RUNNER, "tileLength": 512}}]

    def forward(doc: dict[str, Any]) -> None:
        doc["shapes"][0]["candidates"] = [{"config": doc["shapes"][0]["best"]}, *two]

    def backward(doc: dict[str, Any]) -> None:
        doc["shapes"][0]["candidates"] = [{"config": doc["shapes"][0]["best"]}, *two[::-1]]

    assert _digest(_changed(forward)) != _digest(_changed(backward))


def _predicted(doc: dict[str, Any]) -> None:
    doc["shapes"][0]["predicted"]["latency_us"] *= 2
    doc["shapes"][0]["history"] = []


def _settings(doc: dict[str, Any]) -> None:
    doc["search"]["seed"] = 99


def _order(doc: dict[str, Any]) -> None:
    doc["shapes"].reverse()


@pytest.mark.parametrize("change", [_predicted, _settings, _order])
def test_what_does_not_reach_the_files_leaves_it(change: Callable[[dict[str, Any]], None]
                                                 ) -> None:
    # Emitting the same code after a retune that found the same winners keeps the headers
    # byte-identical (no rebuild, `emit --check` passes).
    assert _digest(_changed(change)) == _digest(copy.deepcopy(_DOC))


def test_a_file_read_for_emit_gives_the_whole_documents_digest(tmp_path: Path) -> None:
    doc = _changed(_runner_up)
    path = tmp_path / "r.json"
    path.write_text(results.to_text(doc))
    slim = results.read_all(path, ENTRY_FIELDS)
    assert all(set(e) <= set(ENTRY_FIELDS) for e in slim["shapes"])
    assert _digest(slim) == _digest(doc)
    plan_bundle, files = emit.prepare(path, tmp_path / "out")
    assert plan_bundle.digest == _digest(doc)
    assert files == emit.render(emit.load_bundle(doc, "r.json"), "macro")
