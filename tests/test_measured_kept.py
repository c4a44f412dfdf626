"""What a device measured is never lost: a search whose inputs changed, --fresh, or a shape
list that no longer holds a measured shape refuses to touch a results file with measurements
(exit 2, the file byte for byte as it was); a plain cache is still retuned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascend_tune import api
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.hil import candidates as cands
from ascend_tune.results import format as results
from tests.test_report import run_cli

SHAPES = [{"totalLength": 4096}, {"totalLength": 1 << 20}]


def _measured_file(path: Path) -> bytes:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    api.tune(spec, hw, SHAPES, output=path, top_k=2)
    doc = json.loads(path.read_text())
    doc["shapes"][0] = cands.record(doc["shapes"][0], 0, {"time_us": 12.5})
    path.write_text(results.to_text(doc))
    return path.read_bytes()


@pytest.mark.parametrize("change", ["seed", "fresh", "prune", "spec"])
def test_a_retune_never_drops_measurements(tmp_path: Path, change: str) -> None:
    path = tmp_path / "r.json"
    before = _measured_file(path)
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    options: dict[str, object] = {"output": path, "top_k": 2}
    shapes = SHAPES
    if change == "seed":
        options["seed"] = 99
    elif change == "fresh":
        options["fresh"] = True
    elif change == "prune":
        shapes = SHAPES[1:]  # the measured shape is the first
        options["prune"] = True  # without it the entry would simply stay
    else:
        spec = api.load_spec("mul")
    with pytest.raises(AscendTuneError, match=r"1 shape\(s\) there hold device measurements"):
        api.search(spec, hw, shapes, **options)  # type: ignore[arg-type]
    assert path.read_bytes() == before


def test_unmeasured_entries_are_still_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    api.tune(spec, hw, SHAPES, output=path)
    api.tune(spec, hw, SHAPES[1:], output=path, seed=5)  # retuned and pruned: no refusal
    assert [e["shape"] for e in json.loads(path.read_text())["shapes"]] == SHAPES[1:]


def test_cli_refusal_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    before = _measured_file(path)
    code, _out, err = run_cli(capsys, monkeypatch, "search", "mul", "--hw", "ascend910b3",
                              "--shape", "totalLength=4096", "-o", str(path), "-q")
    assert code == 2 and err.count("\n") == 1 and "device measurements" in err
    assert "the spec changed (AddCustom -> MulCustom)" in err
    assert path.read_bytes() == before


def test_another_operators_file_is_refused_whatever_it_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A results file of AddCustom with no measurements: `search mul -o` on it is a typo, not
    a cache to retune; refused in one line, the file untouched. --fresh replaces it."""
    path = tmp_path / "r.json"
    api.tune(api.load_spec("add"), api.load_profile("ascend910b3"), SHAPES, output=path)
    before = path.read_bytes()
    args = ("search", "mul", "--hw", "ascend910b3", "--shape", "totalLength=4096", "-o",
            str(path), "-q")
    code, _out, err = run_cli(capsys, monkeypatch, *args)
    assert code == 2 and err.count("\n") == 1, err
    assert "holds results of AddCustom, not MulCustom" in err and "Traceback" not in err
    assert path.read_bytes() == before
    code, _out, err = run_cli(capsys, monkeypatch, *args, "--fresh")
    assert code == 0, err
    assert json.loads(path.read_text())["spec"]["name"] == "MulCustom"
