"""Generated Python can be read: a traceback through a row kernel shows its lines, and
ASCEND_TUNE_DUMP_GENERATED keeps every generated source in a folder.

The row kernels (:mod:`ascend_tune.model.fastpaths.kernel`, memoised by
:mod:`ascend_tune.model.fastpaths.memo`) are compiled from source made at run time; each is
registered with linecache under a pseudo-filename naming the operator, the function and a
digest of the text, for as long as a function compiled from it is alive.
"""

from __future__ import annotations

import gc
import json
import linecache
import math
import re
import subprocess
import traceback
from pathlib import Path

import pytest

from ascend_tune.expr import Kind, parse
from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.model.fastpaths import kernel as row_kernel
from ascend_tune.spec import load_spec
from tests.conftest import ROOT, STUB, needs_gxx, slow_unless

EXAMPLES = ROOT / "examples"
KINDS = {"f": Kind.FLOAT, "x": Kind.INT}
MATMUL_SHAPE = {"M": 512, "N": 4096, "K": 1024}


def test_a_traceback_through_generated_code_shows_the_line() -> None:
    fn = row_kernel.expression_function(parse("floor(f) + x", KINDS), KINDS)
    filename = fn.__code__.co_filename
    assert re.fullmatch(r"<ascend-tune row kernel expression value [0-9a-f]{12}>", filename)
    with pytest.raises(OverflowError) as info:  # math.floor(inf): the row goes to the engine
        fn(math.inf, 1)
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert frame.filename == filename and frame.name == "value"
    assert frame.line == "t0 = math.floor(p0)"
    assert linecache.getline(filename, frame.lineno or 0).strip() == "t0 = math.floor(p0)"
    shown = "".join(traceback.format_exception(info.value))
    assert f'File "{filename}", line {frame.lineno}, in value\n    t0 = math.floor(p0)' in shown


def test_the_lines_stay_while_a_function_runs_them() -> None:
    kinds = {"x": Kind.INT, "y": Kind.INT}
    e = parse("ceil_div(x, y) * 31337", kinds)
    first = row_kernel.expression_function(e, kinds)
    second = row_kernel.expression_function(e, kinds)  # the same text: the same name
    filename = first.__code__.co_filename
    assert second.__code__.co_filename == filename
    assert linecache.getline(filename, 1) == "def value(p0, p1):\n"
    del first
    gc.collect()
    assert linecache.getline(filename, 1) == "def value(p0, p1):\n"
    del second
    gc.collect()
    assert filename not in linecache.cache


def test_a_memoised_kernel_is_registered_and_dumped(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "generated"
    monkeypatch.setenv(row_kernel.DUMP_ENV, str(folder))
    model = ShapeModel(load_spec("matmul"), load_profile("ascend910b3"), MATMUL_SHAPE)
    fn = model._row_latency
    assert fn is not None and any(k.startswith("_M") for k in fn.__globals__)  # memoised
    filename = fn.__code__.co_filename
    m = re.fullmatch(r"<ascend-tune row kernel MatmulCustom latency ([0-9a-f]{12})>", filename)
    assert m, filename
    compiled = "".join(linecache.getlines(filename))
    assert "def latency(" in compiled and "_M0[_k]" in compiled
    # The helpers memo.py writes run the same registered text.
    helper = fn.__globals__["_h0"]
    assert helper.__code__.co_filename == filename
    assert linecache.getline(filename, helper.__code__.co_firstlineno).startswith("def _h0(")
    # One file per source: what was compiled, and the straight-line source memo.py rewrote.
    base = folder / f"row-kernel-MatmulCustom-latency-{m.group(1)}"
    assert Path(f"{base}.py").read_text() == compiled
    straight = Path(f"{base}.straight.py").read_text()
    assert straight.startswith("def latency(") and "_M0" not in straight
    # Deterministic names: the same shape again writes the same files, nothing more.
    files = sorted(p.name for p in folder.iterdir())
    again = ShapeModel(load_spec("matmul"), load_profile("ascend910b3"), MATMUL_SHAPE)
    assert again._row_latency is not None
    assert again._row_latency.__code__.co_filename == filename
    assert sorted(p.name for p in folder.iterdir()) == files


def test_nothing_is_dumped_without_the_variable(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(row_kernel.DUMP_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    fn = row_kernel.expression_function(parse("x * 2", KINDS), KINDS)
    assert fn(1.0, 3) == 6
    assert list(tmp_path.iterdir()) == []


def _stage_names(body: object) -> list[str]:
    out: list[str] = []
    for item in body:  # type: ignore[attr-defined]
        out += _stage_names(item.body) if hasattr(item, "body") else [item.name]
    return out


def test_the_selection_header_reads_like_code_a_person_wrote() -> None:
    """PredictUs in the emitted selection header: no numbered temporaries (t17), no branch
    on a constant, values named for the stage / loop / derived value they price, one comment
    per block, the stages in the spec's order; the walk is not a loop nest per parameter."""
    from ascend_tune.emit import render as emit

    bundle = emit.load_bundle(json.loads((EXAMPLES / "matmul/results.json").read_text()), "mm")
    text = emit.render(bundle, "macro", op_host=True)["op_host/matmul_custom_tiling_select.h"]
    start = text.index("inline double PredictUs(")
    predict = text[start:text.index("\n}\n", start)]
    assert not re.search(r"\bt[0-9]+\b", predict)
    assert not re.search(r"\|\| \((\w+) != \1\)\)", predict), "np.maximum written out"
    assert "at_max2(" in predict
    assert not re.search(r"\(\(?-?[0-9.]+ [<>=!]=? -?[0-9.]+\)?\)", predict), "constant test"
    comments = re.findall(r"^    // (\w+)$", predict, re.M)
    spec = bundle.spec
    stages = [n for side in spec.sides for n in _stage_names(side.body)]
    assert [c for c in comments if c in stages] == stages, "one block per stage, spec order"
    for stage in ("load_a_l1", "load_b_l1", "mmad", "write_c"):
        assert f"// {stage}\n" in predict and f"const double {stage}_0 = " in predict
    assert f"const int64_t v_{spec.params[0]} = config[0];" in predict
    start = text.index("inline bool WalkFallback(")
    walk = text[start:text.index("\n}\n", start)]
    assert walk.count("for (") == 1 and walk.count("while (") == 1  # not a loop per parameter


@needs_gxx
@pytest.mark.parametrize("name", [pytest.param(n, marks=slow_unless(n, {"matmul", "add"}))
                                  for n in sorted(p.parent.name for p in EXAMPLES.glob(
                                      "*/results.json"))])
def test_the_selection_header_compiles_without_a_warning(name: str, tmp_path: Path) -> None:
    header = next((EXAMPLES / name).glob("*/op_host/*_tiling_select.h"))
    main = tmp_path / "main.cpp"
    main.write_text(f'#include "{header.name}"\nint main() {{ return 0; }}\n')
    proc = subprocess.run(["g++", "-std=c++11", "-fsyntax-only", "-Wall", "-Wextra",
                           "-Wconversion", "-Werror", f"-I{STUB}", f"-I{header.parent}",
                           str(main)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[:3000]
