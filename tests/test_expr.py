from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascend_tune.base.errors import ExprError
from ascend_tune.expr import CPP_RUNTIME, Kind, parse
from tests.conftest import needs_gxx

SYMS = {"a": Kind.INT, "b": Kind.INT, "c": Kind.INT, "x": Kind.FLOAT, "hw.ub_bytes": Kind.INT,
        "sizeof.x": Kind.INT}


def ev(src: str, **env: object) -> object:
    return parse(src, SYMS).evaluate(env)


def test_integer_semantics_follow_python() -> None:
    a = np.array([7, -7, 7, -7, 5])
    b = np.array([2, 2, -2, -2, 0])
    assert ev("a // b", a=a, b=b).tolist() == [3, -4, -4, 3, 0]
    assert ev("a % b", a=a, b=b).tolist() == [1, 1, -1, -1, 0]
    assert ev("ceil_div(a, b)", a=a, b=b).tolist() == [4, -3, -3, 4, 0]
    assert ev("align_up(a, b)", a=a, b=b).tolist() == [8, -6, 6, -8, 0]
    assert ev("align_down(a, b)", a=a, b=b).tolist() == [6, -8, 8, -6, 0]
    assert ev("a / b", a=a, b=b).tolist() == [3.5, -3.5, -3.5, 3.5, 0.0]


def test_functions_and_kinds() -> None:
    e = parse("where(a > b, a, 2.5)", SYMS)
    assert e.kind is Kind.FLOAT
    assert e.evaluate({"a": np.array([3, 1]), "b": 2}).tolist() == [3.0, 2.5]
    assert ev("clamp(a, 2, 4)", a=np.array([1, 3, 9])).tolist() == [2, 3, 4]
    assert ev("is_pow2(a)", a=np.array([0, 1, 6, 64])).tolist() == [False, True, False, True]
    assert ev("log2(a)", a=np.array([0, 8])).tolist() == [0.0, 3.0]
    a = np.array([-3, 0, 1, 2, 3, 1023, 1024, 1025, (1 << 40) + 1])
    assert ev("pow2_ceil(a)", a=a).tolist() == [1, 1, 1, 2, 4, 1024, 1024, 2048, 1 << 41]
    assert ev("pow2_floor(a)", a=a).tolist() == [1, 1, 1, 2, 2, 512, 1024, 1024, 1 << 40]
    assert ev("min(a, b, 3)", a=5, b=4) == 3
    assert ev("1 < a <= 3", a=np.array([1, 2, 3, 4])).tolist() == [False, True, True, False]
    assert ev("2 ** 10") == 1024
    assert parse("hw.ub_bytes // sizeof.x", SYMS).names == {"hw.ub_bytes", "sizeof.x"}


@pytest.mark.parametrize(("src", "message"), [
    ("__import__('os')", "f.yaml: d.e: unknown function '__import__'; allowed: abs, align_down, "
     "align_up, ceil, ceil_div, clamp, floor, is_pow2, log2, max, min, pow2_ceil, pow2_floor, "
     "where at '__import__('os')' in expression '__import__('os')'"),
    ("a.real", "f.yaml: d.e: attribute access is only allowed as hw.<field> or sizeof.<tensor> "
     "at 'a.real' in expression 'a.real'"),
    ("(lambda: 1)()", "f.yaml: d.e: only plain function calls are allowed at '(lambda: 1)()' in "
     "expression '(lambda: 1)()'"),
    ("max(a, [a for a in b])", "f.yaml: d.e: comprehensions are not allowed at '[a for a in b]' in "
     "expression 'max(a, [a for a in b])'"),
    ("a[0]", "f.yaml: d.e: subscripts are not allowed at 'a[0]' in expression 'a[0]'"),
    ("9**9**9", "f.yaml: d.e: '**' needs a literal integer exponent between 0 and 64 at "
     "'9**9**9' in expression '9**9**9'"),
    ("ub_byte", "f.yaml: d.e: unknown name 'ub_byte' (did you mean 'hw.ub_bytes'?) at "
     "'ub_byte' in expression 'ub_byte'"),
    ("ceil_dv(a, b)", "f.yaml: d.e: unknown function 'ceil_dv' (did you mean 'ceil_div'?); "
     "allowed: abs, align_down, align_up, ceil, ceil_div, clamp, floor, is_pow2, log2, max, min, "
     "pow2_ceil, pow2_floor, where at 'ceil_dv(a, b)' in expression 'ceil_dv(a, b)'"),
    ("a if b else c", "f.yaml: d.e: 'x if c else y' is not allowed; use where(c, x, y) at "
     "'a if b else c' in expression 'a if b else c'"),
    ("hw.__class__", "f.yaml: d.e: name 'hw.__class__' is not allowed at 'hw.__class__' in "
     "expression 'hw.__class__'"),
    ("a +", "f.yaml: d.e: syntax error in expression 'a +'"),
])
def test_hostile_and_wrong_input_is_rejected_with_exact_message(src: str, message: str) -> None:
    with pytest.raises(ExprError) as info:
        parse(src, SYMS, "f.yaml: d.e")
    assert str(info.value) == message


def test_runaway_nesting_is_rejected_before_parsing() -> None:
    with pytest.raises(ExprError, match="nests deeper than 40 brackets"):
        parse("(" * 500 + "a" + ")" * 500, SYMS)
    with pytest.raises(ExprError, match="longer than 2000 characters"):
        parse("a+" * 5000 + "a", SYMS)
    with pytest.raises(ExprError, match="nests deeper than 40 levels"):
        parse("-" * 200 + "a", SYMS)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab()+-*/%<>=!.,_ 0123456789hwsizeofxceil_divwhere", max_size=60))
def test_parser_fuzz_only_ever_raises_expr_error(text: str) -> None:
    try:
        e = parse(text, SYMS)
    except ExprError:
        return
    e.evaluate({"a": np.array([3, -2]), "b": np.array([0, 5]), "c": 1, "x": 0.5,
                "hw.ub_bytes": 196608, "sizeof.x": 2})


EXPRESSIONS = [
    "a // b + a % b",
    "ceil_div(a, b) * b - align_down(a, c)",
    "align_up(a, c) + max(a, b, c) - min(a, b)",
    "clamp(a, -3, 7) * 2 ** 3",
    "where(a > b and not c == 0, a * c, b // 3)",
    "a / b + log2(c)",
    "x * a - b / 3",
    "floor(x * a) + ceil(x - b)",
    "is_pow2(c) or a >= b",
    "abs(a - b) % 7",
    "(a - 2 * b) // c",
    "pow2_ceil(a) + pow2_floor(c * 37)",
]


@needs_gxx
def test_numpy_and_cpp_agree_on_random_inputs(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 300
    env = {"a": rng.integers(-50, 200, n), "b": rng.integers(-9, 30, n),
           "c": rng.integers(-4, 70, n), "x": rng.uniform(-3, 3, n).round(3)}
    names = {"a": "a", "b": "b", "c": "c", "x": "x"}
    parsed = [parse(s, SYMS) for s in EXPRESSIONS]
    body = []
    for i, e in enumerate(parsed):
        cpp_text = e.to_cpp(names.__getitem__)
        body.append(f"  std::printf(\"%.17g \", static_cast<double>({cpp_text}));"
                    f"  // {i}")
    program = (CPP_RUNTIME + "#include <cstdio>\nusing namespace ascend_tune_rt;\n"
               "int main() {\n  long long ia, ib, ic; double x;\n"
               "  while (std::scanf(\"%lld %lld %lld %lf\", &ia, &ib, &ic, &x) == 4) {\n"
               "  const int64_t a = ia, b = ib, c = ic;\n" + "\n".join(body)
               + "\n  std::printf(\"\\n\");\n  }\n}\n")
    src = tmp_path / "expr.cpp"
    src.write_text(program)
    exe = tmp_path / "expr"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-O1", str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    stdin = "\n".join(f"{env['a'][i]} {env['b'][i]} {env['c'][i]} {float(env['x'][i])!r}"
                      for i in range(n))
    out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True)
    cpp_rows = [list(map(float, line.split())) for line in out.stdout.strip().splitlines()]
    for j, e in enumerate(parsed):
        expected = np.broadcast_to(np.asarray(e.evaluate(env), dtype=np.float64), (n,))
        got = np.array([row[j] for row in cpp_rows])
        if e.kind is Kind.FLOAT:
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12,
                                       err_msg=EXPRESSIONS[j])
        else:
            assert got.tolist() == expected.tolist(), EXPRESSIONS[j]
