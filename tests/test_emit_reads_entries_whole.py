"""emit keeps only the fields it uses of each entry (a 178 000-shape file would hold 1.7 GB of
parsed entries), but every entry is still parsed and checked whole first: a malformed entry,
in a used field or not, is refused with one line naming the file, line, entry and field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ascend_tune.cli import main
from tests.conftest import ROOT

_TEXT = (ROOT / "examples/add/results.json").read_text()
# The second entry's line as a search wrote it (shape 4096).
_LINE_NO, _LINE = next((i, line) for i, line in enumerate(_TEXT.splitlines(), 1)
                       if line.startswith('{"shape":{"totalLength":4096}'))


def _emit(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
          old: str, new: str) -> tuple[int, str, str]:
    assert old in _LINE
    path = tmp_path / "r.json"
    path.write_text(_TEXT.replace(_LINE, _LINE.replace(old, new, 1)))
    monkeypatch.setattr(sys, "argv", ["ascend-tune", "emit", str(path), "-o",
                                      str(tmp_path / "out")])
    with pytest.raises(SystemExit) as exc:
        main()
    code = exc.value.code
    return code if isinstance(code, int) else 0, capsys.readouterr().err, f"{path}:{_LINE_NO}"


@pytest.mark.parametrize(("old", "new", "problem"), [
    # Fields emit keeps.
    ('"best":{"blockDim":', '"best":{"blockDim":"2","x":',
     'shapes[1] (totalLength=4096): best.blockDim is "2", not an integer'),
    ('{"shape":{"totalLength":4096}', '{"shape":{"totalLength":4096.5}',
     "shapes[1]: shape.totalLength is 4096.5, not an integer"),
    # Fields emit drops: checked all the same.
    ('"predicted":{"latency_us":', '"predicted":{"latency_us":1,"latency_us":',
     "duplicate key 'latency_us'"),
    ('"predicted":{"latency_us":', '"predicted":{"latency_us":1e999,"x":',
     "predicted.latency_us"),
    ('"history":[', '"history":[,', "malformed JSON"),
])
def test_a_malformed_entry_is_refused_by_emit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        old: str, new: str, problem: str) -> None:
    code, err, where = _emit(tmp_path, capsys, monkeypatch, old, new)
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {where}: corrupt results file ("), err
    assert problem in err
    assert not (tmp_path / "out").exists()


def test_the_unedited_file_emits(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    code, err, _where = _emit(tmp_path, capsys, monkeypatch, '"best":', '"best":')
    assert code == 0, err
    assert (tmp_path / "out/op_host/add_custom_tiling_select.h").exists()
