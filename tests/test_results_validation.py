"""What emit accepts from a results file (emit/bundle.py): an edited or stale file is refused
with one exact message per problem, before anything reaches C++."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit import render as emit
from tests.conftest import ROOT

_DOC: dict[str, Any] = json.loads((ROOT / "examples/add/results.json").read_text())


def _doc() -> dict[str, Any]:
    return copy.deepcopy(_DOC)


def _refused(doc: Any, message: str) -> None:
    with pytest.raises(AscendTuneError) as info:
        emit.load_bundle(doc, "r.json")
    assert str(info.value) == message


def test_the_example_loads_whole() -> None:
    doc = _doc()
    bundle = emit.load_bundle(doc, "r.json")
    assert [s for s, _b in bundle.shapes] == [e["shape"] for e in doc["shapes"]]
    assert [b for _s, b in bundle.shapes] == [e["best"] for e in doc["shapes"]]
    assert bundle.runners_up == ()
    canonical = json.dumps({"spec": doc["spec"], "hw": doc["hw"],
                            "tuned": [[e["shape"], e["best"]] for e in doc["shapes"]],
                            "runners_up": []}, sort_keys=True, separators=(",", ":"))
    assert bundle.digest == hashlib.sha256(canonical.encode()).hexdigest()
    assert bundle.hw.name == "ascend910b3" and bundle.spec.name == "AddCustom"


def test_missing_spec_or_profile() -> None:
    doc = _doc()
    del doc["hw"]
    _refused(doc, "r.json: results file lacks the embedded spec or profile; rerun "
                  "`ascend-tune search`")
    doc = _doc()
    doc["spec"] = "text"
    _refused(doc, "r.json: results file lacks the embedded spec or profile; rerun "
                  "`ascend-tune search`")


@pytest.mark.parametrize("shapes", [[], {}, None, "x"])
def test_no_tuned_shape(shapes: Any) -> None:
    doc = _doc()
    doc["shapes"] = shapes
    _refused(doc, "r.json: results file holds no tuned shape")


def test_entry_not_a_mapping() -> None:
    doc = _doc()
    doc["shapes"][1] = ["totalLength", 5]
    _refused(doc, "r.json: shapes[1]: expected a mapping with 'shape' and 'best'")
    doc = _doc()
    doc["shapes"][0]["shape"] = 7
    _refused(doc, "r.json: shapes[0]: expected a mapping with 'shape' and 'best'")


def test_a_shape_listed_twice() -> None:
    doc = _doc()
    doc["shapes"].append(copy.deepcopy(doc["shapes"][0]))
    n = len(doc["shapes"]) - 1
    _refused(doc, f"r.json: shapes[{n}]: shape totalLength=1000 is listed twice")


def test_a_winner_failing_a_constraint() -> None:
    doc = _doc()
    # 8 cores for 1000 elements: blocks of 128, and a 512-element tile is not below twice
    # that (nor the 256 minimum).
    doc["shapes"][0]["best"]["blockDim"] = 8
    _refused(doc, "r.json: shapes[0] (totalLength=1000): the tuned configuration fails "
                  "'tile_not_oversized' on ascend910b3; the results file is stale or was edited: "
                  "rerun `ascend-tune search`")


@pytest.mark.parametrize(("best", "message"), [
    ([1, 2, 3], "'best' must map each parameter to an integer"),
    ({"blockDim": 2, "tileLength": 512, "bufferNum": 1, "tileLen": 3},
     "'best' has unknown parameter 'tileLen' (did you mean 'tileLength'?)"),
    ({"blockDim": True, "tileLength": 512, "bufferNum": 1},
     "best.blockDim must be an integer, got True"),
    ({"blockDim": 2.0, "tileLength": 512, "bufferNum": 1},
     "best.blockDim must be an integer, got 2.0"),
    ({"tileLength": 512, "bufferNum": 1}, "best.blockDim must be an integer, got None"),
    ({"blockDim": 1 << 63, "tileLength": 512, "bufferNum": 1},
     "best.blockDim = 9223372036854775808 does not fit a 64-bit integer"),
    ({"blockDim": -(1 << 63) - 1, "tileLength": 512, "bufferNum": 1},
     "best.blockDim = -9223372036854775809 does not fit a 64-bit integer"),
])
def test_a_winner_that_is_not_an_integer_configuration(best: Any, message: str) -> None:
    doc = _doc()
    doc["shapes"][0]["best"] = best
    _refused(doc, f"r.json: shapes[0] (totalLength=1000): {message}")


@pytest.mark.parametrize("value", [(1 << 63) - 1, -(1 << 63)])
def test_int64_ends_are_integers_that_then_overflow(value: int) -> None:
    # The extreme 64-bit values pass the integer check; the spec's arithmetic then refuses.
    doc = _doc()
    doc["shapes"][0]["best"]["blockDim"] = value
    with pytest.raises(AscendTuneError, match=rf"integer overflow: .* with blockDim={value},"):
        emit.load_bundle(doc, "r.json")


def test_runners_up() -> None:
    doc = _doc()
    entry = doc["shapes"][0]
    runner = {"blockDim": 1, "tileLength": 1024, "bufferNum": 1}
    # candidates[0] is the winner itself: not a runner-up, and not re-checked.
    entry["candidates"] = [{"config": "ignored"}, {"config": runner}]
    bundle = emit.load_bundle(doc, "r.json")
    assert bundle.runners_up == (runner,)
    entry["candidates"] = {"config": runner}
    _refused(doc, "r.json: shapes[0] (totalLength=1000): 'candidates' must be a list")
    entry["candidates"] = [{}, [runner]]
    _refused(doc, "r.json: shapes[0] (totalLength=1000): candidates[1]: expected a mapping "
                  "with 'config'")
    entry["candidates"] = [{}, {"config": {**runner, "bufferNum": "2"}}]
    _refused(doc, "r.json: shapes[0] (totalLength=1000): candidates[1]: config.bufferNum must "
                  "be an integer, got '2'")
    entry["candidates"] = [{}, {"config": runner}, {"config": {**runner, "blockDim": 8}}]
    _refused(doc, "r.json: shapes[0] (totalLength=1000): candidates[2]: the configuration "
                  "fails 'tile_not_oversized' on ascend910b3; the results file is stale or was "
                  "edited")
