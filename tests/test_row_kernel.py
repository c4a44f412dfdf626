"""The row kernel gives the vectorised engine's bits, one configuration at a time.

:mod:`ascend_tune.model.fastpaths.kernel` renders every expression and the engine's loop, stage and
transfer formulas as straight-line Python on floats. Held here against the numpy evaluation:

* every operator and function of the expression language, element by element, over the
  operand kinds and the awkward values of tests/test_model_fastpaths.py (zeros, -0.0, inf, nan,
  zero divisors);
* whole models: every built-in spec on its example shapes on every bundled profile, valid and
  invalid configurations, latency bit for bit;
* the checks a search asks about (``CheckSet.passes``), remembered or not;
* the generated source: only names the kernel makes, no text from a spec.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ascend_tune.expr import FUNCTIONS, Kind, parse
from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ROW_KERNEL_MAX_ROWS, ShapeModel
from ascend_tune.model.fastpaths import kernel as row_kernel
from ascend_tune.model.fastpaths import memo as row_memo
from ascend_tune.model.fastpaths.tables import MAX_TABLE_ENTRIES
from ascend_tune.search.space import CHECK_KERNEL_MAX_ROWS, CheckSet, enumerator, index_blocks
from ascend_tune.spec import load_spec
from tests.test_model_fastpaths import SPECS, SYMBOLS, _envs, _example_shapes, _sources

ROOT = Path(__file__).resolve().parents[1]
PROFILES = sorted(p.stem for p in (ROOT / "hw_profiles").glob("*.yaml"))
_PY = {Kind.INT: int, Kind.FLOAT: float, Kind.BOOL: bool}


def _same_value(row: Any, ref: Any) -> bool:
    """One element, bit for bit: the same Python type family and the same float64 bits."""
    ref = ref.item() if isinstance(ref, np.generic) else ref
    if isinstance(ref, bool) or isinstance(row, bool):
        return type(row) is type(ref) and row == ref
    if isinstance(ref, float) or isinstance(row, float):
        return isinstance(row, float) and isinstance(ref, float) and \
            np.float64(row).tobytes() == np.float64(ref).tobytes()
    return row == ref


# Sources the row kernel renders inline when a divisor is a literal, and functions the fast
# path tests leave out.
_MORE = ["x // 4", "x % 4", "f / 4", "x / 4", "ceil_div(x, 16)", "align_up(x, 16)",
         "align_down(x, 16)", "clamp(x, -5, 50)", "clamp(f, g, 2.5)", "log2(f)", "log2(x)",
         "is_pow2(x)", "pow2_ceil(x)", "pow2_floor(x)", "where(p, x, f)", "where(p, q, x)",
         "where(p, q, q)", "abs(x)", "abs(f)", "floor(f)", "ceil(g)", "x ** 3", "f ** 2",
         "x ** 0", "-p", "not x", "p and x > 3 or f < g", "x < f", "p == q", "x == p",
         "2 * 3 + x", "1.5 * 2 - f"]


@pytest.mark.parametrize("source", _sources() + _MORE)
def test_expression_is_numpys_on_every_row(source: str) -> None:
    e = parse(source, SYMBOLS)
    fn = row_kernel.expression_function(e, SYMBOLS)
    compared = 0
    for env in _envs():
        if any(np.asarray(env[k]).dtype == bool for k, kind in SYMBOLS.items()
               if kind is not Kind.BOOL):
            continue  # booleans for declared integers: parameters are always integers
        with np.errstate(all="ignore"):
            try:
                ref = np.broadcast_to(np.asarray(e.root.evaluate(env)), (301,))
            except TypeError:  # numpy refuses it (booleans subtracted): not a valid spec
                continue
        cols = [np.broadcast_to(np.asarray(env[k]), (301,)) for k in SYMBOLS]
        for i in range(301):
            args = [_PY[kind](c[i].item()) for c, kind in zip(cols, SYMBOLS.values(),
                                                               strict=True)]
            try:
                got = fn(*args)
            except row_kernel.ROW_ERRORS:
                continue  # such a row goes to the engine
            assert _same_value(got, ref[i]), (source, args, got, ref[i])
            compared += 1
    assert compared > 500, source


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", SPECS)
def test_latency_is_the_engines(name: str, profile: str) -> None:
    spec, hw = load_spec(name), load_profile(profile)
    for i, shape in enumerate(_example_shapes(name)):
        model = ShapeModel(spec, hw, shape)
        assert model._row_latency is not None, (name, shape)  # every example space is proven
        rng = np.random.default_rng(i)
        valid_set = next(index_blocks(model, rows=20_000), model.sizes[None, :0])
        genomes = np.concatenate([  # random (mostly invalid) and valid configurations
            rng.integers(0, model.sizes, size=(1000, model.sizes.size)),
            valid_set[rng.choice(len(valid_set), min(500, len(valid_set)), replace=False)]])
        want = model.evaluate(model.values(genomes)).latency_us
        got = model._row_objective(genomes)
        assert got.tobytes() == want.tobytes(), (name, profile, shape)
        valid = genomes[np.isfinite(want)]
        assert valid.size, (name, shape)
        # Through the search seam: small batches take the kernel, large ones the engine.
        small = valid[:ROW_KERNEL_MAX_ROWS]
        assert model.objective(small).tobytes() == want[np.isfinite(want)][:len(small)].tobytes()


def test_a_row_python_cannot_compute_goes_to_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    model = ShapeModel(load_spec("matmul"), load_profile("ascend910b3"),
                       {"M": 512, "N": 4096, "K": 1024})
    genomes = np.random.default_rng(3).integers(0, model.sizes, size=(20, model.sizes.size))
    want = model.evaluate(model.values(genomes)).latency_us

    def overflow(*_values: int) -> float:
        raise OverflowError("math range error")

    monkeypatch.setitem(model.__dict__, "_row_latency", overflow)
    assert model.objective(genomes).tobytes() == want.tobytes()


def test_another_profile_gets_its_own_kernel() -> None:
    shape = {"M": 512, "N": 4096, "K": 1024}
    model = ShapeModel(load_spec("matmul"), load_profile("ascend910b3"), shape)
    other = model.with_profile(load_profile("ascend910b3").scaled(2.0))
    genomes = next(index_blocks(model, rows=20_000))[:30]
    model.objective(genomes)  # builds the first profile's kernel
    want = other.evaluate(other.values(genomes)).latency_us
    assert other.objective(genomes).tobytes() == want.tobytes()
    assert np.isfinite(want).any()


def _checks(model: ShapeModel, max_table_entries: int) -> CheckSet:
    return CheckSet(enumerator(model), proven=model.space_proven,
                    max_table_entries=max_table_entries)


# Every check tabled (the default), none (the row kernel for all), some of each.
@pytest.mark.parametrize("tables", [MAX_TABLE_ENTRIES, 0, 100])
@pytest.mark.parametrize("name", SPECS)
def test_checks_are_the_vectorised_ones(name: str, tables: int) -> None:
    hw = load_profile("ascend910b3")
    for i, shape in enumerate(_example_shapes(name)):
        checks = _checks(ShapeModel(load_spec(name), hw, shape), tables)
        if tables == 0:
            assert checks._untabled == list(range(len(checks.checks)))
        rng = np.random.default_rng(10 + i)
        every = list(range(len(checks.checks)))
        for n in (1, 7, CHECK_KERNEL_MAX_ROWS, 2 * CHECK_KERNEL_MAX_ROWS):  # kernel, vectorised
            genomes = rng.integers(0, [g.size for g in checks.grids], size=(n, len(checks.grids)))
            genomes[n // 2:] = genomes[:n - n // 2]  # repeats: remembered the first time
            want = checks.passes_vectorised(genomes, every)
            assert np.array_equal(checks.passes(genomes, every), want), (name, n)
            assert np.array_equal(checks.passes(genomes, every), want), (name, n)  # memo
            some = every[::2][::-1]
            assert np.array_equal(checks.passes(genomes, some), want[:, some]), (name, n)
        assert checks.passes(genomes[:0], every).shape == (0, len(every))


_OWN_NAMES = {"math", "float", "int", "abs", "bytes", "value", "latency", "checks"}


def _names(source: str) -> set[str]:
    return {t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.NAME and not keyword.iskeyword(t.string)}


@pytest.mark.parametrize("name", SPECS)
def test_generated_source_holds_no_text_from_the_spec(name: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sources: list[str] = []
    real = row_kernel._compile

    def keep(source: str, fn: str, constants: Any = None, sizes: Any = None) -> Any:
        sources.append(source)
        if sizes is not None:  # and the source with its memoised groups, as compiled
            hoisted, tables = row_memo.hoist(source, fn, sizes)
            assert set(tables) <= set(re.findall(r"_M[0-9]+", hoisted))
            sources.append(hoisted)
        return real(source, fn, constants, sizes)

    monkeypatch.setattr(row_kernel, "_compile", keep)
    spec = load_spec(name)
    model = ShapeModel(spec, load_profile("ascend910b3"), _example_shapes(name)[0])
    assert model._row_latency is not None
    assert _checks(model, 0)._row_checks is not None  # every check untabled
    assert len(sources) == 4
    allowed = _OWN_NAMES | set(row_kernel._HELPERS)
    for source in sources:
        for token in _names(source):
            assert token in allowed or re.fullmatch(r"[pti][0-9]+|_(XP|FP|G|M|S|h)[0-9]+|_[vk]",
                                                    token), token
        for spec_name in [*spec.params, *(n for n, _ in spec.derive)]:
            assert spec_name not in _names(source) or spec_name in allowed, spec_name


def test_every_expression_function_has_a_row_form_under_test() -> None:
    """A function registered in expr.FUNCTIONS needs its one-row form in the row kernel; the
    sources above must call it so the comparison with numpy covers it."""
    called = {m for source in _sources() + _MORE for m in re.findall(r"([a-z_0-9]+)\(", source)}
    assert set(FUNCTIONS) <= called, set(FUNCTIONS) - called
