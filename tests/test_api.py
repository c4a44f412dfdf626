"""The documented Python API: the worked example in its docstring runs as written, and each
entry point agrees with the command line."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from ascend_tune import api
from ascend_tune.results import format as results
from tests.conftest import DATA


def _example() -> str:
    doc = api.__doc__ or ""
    block = doc.split("::\n", 1)[1].split("\n\n``tune``", 1)[0]
    return textwrap.dedent(block)


def test_the_docstring_example_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(_example(), "api-example", "exec"), {})
    finally:
        os.chdir(cwd)
    doc = results.read_all(tmp_path / "add.results.json")
    assert [e["shape"]["totalLength"] for e in doc["shapes"]] == [4096, 1 << 20]
    assert (tmp_path / "AddCustom/op_host/add_custom.cpp").exists()
    assert (tmp_path / "AddCustom/op_host/add_custom_tiling_select.h").exists()
    printed = capsys.readouterr().out.split()
    assert printed[0].endswith("_us") or printed[0] in ("gm_bandwidth", "head_overhead")


def test_tune_reuses_the_cache_and_render_matches_emit(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    out = tmp_path / "r.json"
    first = api.tune(spec, hw, [{"totalLength": 65536}], budget=100, output=out)
    again = api.tune(spec, hw, [{"totalLength": 65536}], budget=100, output=out)
    assert first == again
    files = api.render(results.read_all(out), op_host=True)
    written = api.emit(out, tmp_path / "proj", op_host=True)
    assert sorted(Path(p).relative_to(tmp_path / "proj").as_posix() for p in written) == sorted(
        files)
    with pytest.raises(api.AscendTuneError, match="out of range"):
        api.tune(spec, hw, [{"totalLength": 0}])


def test_validate_and_calibrate(tmp_path: Path) -> None:
    spec, hw = api.load_spec("add"), api.load_profile("ascend910b3")
    doc = api.validate(spec, hw, [DATA / "measurements" / "plain.csv"])
    assert doc["rows"] == 3 and doc["skipped"] == 1 and doc["errors"]["n"] == 3
    matmul = api.load_spec("matmul")
    m = DATA / "measurements"
    # One row cannot determine the three coefficients it is sensitive to: refused.
    with pytest.raises(api.AscendTuneError, match=r"1 fit row\(s\) for 3 identifiable"):
        api.calibrate(matmul, hw, [m / "op_summary_block_dim.csv"], manifest=m / "manifest.yaml")
    fit = api.calibrate(matmul, hw, [m / "op_summary_block_dim.csv"],
                        manifest=m / "manifest.yaml", exclude=["gm_to_l1_latency",
                                                               "hbm_bandwidth"])
    assert fit.fitted == ["head_overhead"] and fit.held_out_before is None
    assert fit.before.n == fit.after.n == 1
    assert fit.after.mape <= fit.before.mape + 1e-9, "a fit never makes its own rows worse"
