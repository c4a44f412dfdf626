"""Values a measurement or results file cannot hold are refused naming where they are: a
measured time that is not finite and positive (file, line, column), a NaN leaf of an embedded
profile (its key path), a malformed results entry (its index, shape and field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascend_tune import api
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.hardware import HardwareProfile
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec

HEADER = "totalLength,blockDim,tileLength,bufferNum,time_us,aiv_mte2_time_us\n"
GOOD = "1048576,40,4096,2,12.5,9.1\n4096,8,512,2,2.4,\n"


@pytest.mark.parametrize(("cell", "shown"), [
    ("inf", "'inf'"), ("-inf", "'-inf'"), ("nan", "'nan'"), ("-3", "'-3'"), ("0", "'0'"),
    ("1e999", "'1e999'"),
])
def test_a_measured_time_that_cannot_be_a_time_refuses_the_file(
        tmp_path: Path, add_spec: OperatorSpec, hw: HardwareProfile, cell: str,
        shown: str) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text(HEADER + GOOD + f"65536,8,2048,2,{cell},\n")
    with pytest.raises(AscendTuneError) as info:
        api.load_measurements(add_spec, hw, [csv])
    assert str(info.value) == (f"{csv}:4: column time_us: {shown} is not a finite positive "
                               "time; fix or remove the row")


def test_a_pipe_time_may_be_zero_but_not_negative_or_infinite(
        tmp_path: Path, add_spec: OperatorSpec, hw: HardwareProfile) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text(HEADER + GOOD + "65536,8,2048,2,5.0,0\n")
    assert len(api.load_measurements(add_spec, hw, [csv]).rows) == 3
    csv.write_text(HEADER + GOOD + "65536,8,2048,2,5.0,inf\n")
    with pytest.raises(AscendTuneError) as info:
        api.load_measurements(add_spec, hw, [csv])
    assert str(info.value) == (f"{csv}:4: column aiv_mte2_time_us: 'inf' is not a finite "
                               "non-negative time; fix or remove the row")


def test_an_empty_or_text_time_is_still_a_skipped_row(
        tmp_path: Path, add_spec: OperatorSpec, hw: HardwareProfile) -> None:
    # Not a number at all (a profiler's N/A): the row is left out with its reason, as before.
    csv = tmp_path / "m.csv"
    csv.write_text(HEADER + GOOD + "65536,8,2048,2,N/A,\n")
    report = api.load_measurements(add_spec, hw, [csv])
    assert len(report.rows) == 2
    assert report.skipped == [f"{csv}:4: could not convert string to float: 'N/A'"]


def test_calibrate_cli_exits_2_on_an_infinite_time(tmp_path: Path) -> None:
    from tests.test_cli import cli, one_line_error

    csv = tmp_path / "m.csv"
    csv.write_text(HEADER + GOOD + "65536,8,2048,2,inf,\n")
    proc = cli("calibrate", str(csv), "--spec", "add", "--hw", "ascend910b3", "-o",
               str(tmp_path / "cal.yaml"))
    one_line_error(proc, f"error: {csv}:4: column time_us: 'inf' is not a finite positive time")
    assert not (tmp_path / "cal.yaml").exists()


@pytest.fixture(scope="module")
def add_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("results") / "add.json"
    api.tune(api.load_spec("add"), api.load_profile("ascend910b3"),
             [{"totalLength": 4096}, {"totalLength": 65536}], output=path, budget=30)
    return path


def _edited(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert old in text
    path = tmp_path / "edited.json"
    path.write_text(text.replace(old, new, 1))
    return path


def _corrupt_message(path: Path) -> str:
    with pytest.raises(AscendTuneError) as info:
        results.read_all(path)
    return str(info.value)


def test_a_nan_leaf_of_the_embedded_profile_is_named(tmp_path: Path, add_results: Path) -> None:
    lines = add_results.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"clock_mhz"' in line) + 1
    assert lines[at].strip().startswith('"value": ')
    lines[at] = '     "value": NaN,'
    path = tmp_path / "nan.json"
    path.write_text("\n".join(lines) + "\n")
    assert _corrupt_message(path) == (
        f"{path}:{at + 1}: corrupt results file (hw.data.chip.clock_mhz.value: NaN is not a "
        "number); move it away or pass another -o")


@pytest.mark.parametrize(("old", "new", "problem"), [
    ('{"shape":{"totalLength":65536}', '{"shape":{"totalLength":"65536"}',
     'shapes[1]: shape.totalLength is "65536", not an integer'),
    ('{"shape":{"totalLength":65536},', '{"shap":{"totalLength":65536},',
     "shapes[1] has no 'shape', expected an object of integers"),
    ('{"shape":{"totalLength":65536},"strategy":"exhaustive","best":',
     '{"shape":{"totalLength":65536},"strategy":"exhaustive","bst":',
     "shapes[1] (totalLength=65536) has no 'best' (the winning configuration)"),
    ('"best":{"blockDim":8,', '"best":{"blockDim":8.5,',
     "shapes[1] (totalLength=65536): best.blockDim is 8.5, not an integer"),
])
def test_a_malformed_entry_names_its_index_shape_and_field(
        tmp_path: Path, add_results: Path, old: str, new: str, problem: str) -> None:
    path = _edited(tmp_path, add_results, old, new)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if new in text)
    assert _corrupt_message(path) == (f"{path}:{line}: corrupt results file ({problem}); "
                                      "move it away or pass another -o")


def test_a_malformed_entry_of_a_whole_json_document_is_named(tmp_path: Path,
                                                             add_results: Path) -> None:
    doc = results.read_all(add_results)
    doc["shapes"][0] = ["not", "an", "entry"]
    path = tmp_path / "whole.json"
    path.write_text(json.dumps(doc))
    assert _corrupt_message(path) == (f"{path}: corrupt results file (shapes[0] is a list, not "
                                      "a shape result object); move it away or pass another -o")
