"""Memoised row kernels (ascend_tune.model.fastpaths.memo): the same bits as the
straight-line kernel in any row order, errors never remembered, anything unfamiliar left alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.model.fastpaths import kernel as row_kernel
from ascend_tune.model.fastpaths import memo as row_memo
from ascend_tune.search.space import index_blocks
from ascend_tune.spec import load_spec
from tests.test_model_fastpaths import SPECS, _example_shapes

_SMALL = """def f(i0, i1):
    p0 = _G0[i0]
    p1 = _G1[i1]
    t0 = (10 // p0)
    t1 = (t0 + 1)
    t2 = (t1 * 2)
    t3 = (t2 - 3)
    if not (t3 > 0): return _INF
    t4 = (t3 * p1)
    return t4
"""


def _build(source: str, sizes: list[int], constants: dict[str, Any]) -> Any:
    return row_kernel._compile(source, "f", constants, sizes)


def test_a_small_group_is_computed_once_per_combination() -> None:
    grids = {"_G0": [0, 1, 2, 5], "_G1": [3, 4, 5]}
    hoisted, tables = row_memo.hoist(_SMALL, "f", [4, 3], cap=4)
    assert list(tables) == ["_M0"] and len(tables["_M0"]) == 4, hoisted
    assert "_h0(i0)" in hoisted
    plain = row_kernel._compile(_SMALL, "f", grids)
    memo = _build(_SMALL, [4, 3], grids)
    for i0 in (3, 1, 2, 3, 1, 2):
        for i1 in range(3):
            assert memo(i0, i1) == plain(i0, i1)
    for _ in range(2):  # p0 = 0: the error reaches the caller each time, nothing is kept
        with pytest.raises(ZeroDivisionError):
            memo(0, 1)


def test_unfamiliar_source_is_left_alone() -> None:
    for source in (_SMALL.replace("    t1 = (t0 + 1)", "    for _ in (): pass"),
                   _SMALL.replace("def f(i0, i1):", "def f(i0, i1, i2):"),
                   _SMALL.replace("    t2 = (t1 * 2)", "    t0 = (t1 * 2)")):
        assert row_memo.hoist(source, "f", [4, 3]) == (source, {})
    # Nothing small enough to be worth a table: unchanged too.
    assert row_memo.hoist(_SMALL, "f", [4, 3], cap=1) == (_SMALL, {})


@pytest.mark.parametrize("name", SPECS)
def test_memoised_kernels_give_the_straight_line_bits(name: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every built-in spec's latency kernel, memoised and not, on valid and random rows in an
    order that revisits combinations: the same floats, bit for bit."""
    captured: list[tuple[str, Any, Any]] = []
    real = row_kernel._compile

    def keep(source: str, fn: str, constants: Any = None, sizes: Any = None) -> Any:
        captured.append((source, constants, sizes))
        return real(source, fn, constants, sizes)

    monkeypatch.setattr(row_kernel, "_compile", keep)
    for shape in _example_shapes(name):
        model = ShapeModel(load_spec(name), load_profile("ascend910b3"), shape)
        memo = model._row_latency
        if memo is None:
            continue
        source, constants, _sizes = captured[-1]
        plain = real(source, "latency", constants)
        rng = np.random.default_rng(5)
        valid = next(index_blocks(model, rows=50_000), np.zeros((0, model.sizes.size), int))
        rows = np.concatenate([valid[rng.integers(0, max(len(valid), 1), 300)] if len(valid)
                               else valid,
                               rng.integers(0, model.sizes, size=(300, model.sizes.size))])
        for row in np.concatenate([rows, rows[::-1]]).tolist():
            try:
                want = plain(*row)
            except row_kernel.ROW_ERRORS:
                with pytest.raises(row_kernel.ROW_ERRORS):
                    memo(*row)
                continue
            assert np.float64(memo(*row)).tobytes() == np.float64(want).tobytes(), (name, row)


def test_matmul_kernel_is_memoised() -> None:
    model = ShapeModel(load_spec("matmul"), load_profile("ascend910b3"),
                       {"M": 512, "N": 4096, "K": 1024})
    assert model._row_latency is not None
    assert any(k.startswith("_M") for k in model._row_latency.__globals__)
