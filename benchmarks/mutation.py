"""Mutation testing of the core modules: does a small bug in them make a test fail?

    python benchmarks/mutation.py                 # every module below, kill rate per module
    python benchmarks/mutation.py --module costs  # one module
    python benchmarks/mutation.py --list          # the mutants, without running anything
    python benchmarks/mutation.py --module costs --only 12   # one mutant, its test output shown

Each mutant is one small change to one function (an operator swapped, a comparison made
strict or loose, a constant moved by one, a rounding or a min/max dropped, a condition
negated, an in-place step or a call statement removed). It is written into a copy of the
work tree (the checkout itself is never touched) and that module's own test files run there
with ``-x``; a failing (or hanging) run kills the mutant. A survivor is a bug the tests
miss, unless it is equivalent (the program behaves the same): those are listed, with the
reason, in :data:`EQUIVALENT` and docs/mutation.md, and are left out of the rate.

Why a script and not mutmut or cosmic-ray: the rate that matters is per module, each against
its own few fast tests (the whole suite takes minutes; a mutant must take seconds), and only
the functions that carry the logic (not message formatting) are mutated. Both are a table
here; the tools need a session database, a copy of the project under their control and a
test command per run. Stdlib only. Run it niced on a shared machine: ``nice -n 5``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    path: str  # module file, relative to the repository
    functions: tuple[str, ...]  # qualified names (Class.method) mutated in it
    tests: tuple[str, ...]  # pytest arguments: the module's own tests


# The core modules of issue 29, each with the tests that should catch a bug in it.
TARGETS: dict[str, Target] = {
    "costs": Target("ascend_tune/model/costs.py",
                    ("transfer", "contiguous_runs", "_chip_bytes_per_cycle",
                     "chip_share_bytes_per_cycle", "mmad_cycles", "vector_cycles", "head_us",
                     "_port"),
                    ("tests/test_model_by_hand.py",)),
    "launch": Target("ascend_tune/spec/launch.py",
                     ("core_limit_names", "range_checks", "check_names", "Check.passes",
                      "checks", "evaluate", "always_pass"),
                     ("tests/test_launch_checks.py", "-k", "not compiled")),
    "results_validation": Target("ascend_tune/emit/bundle.py",
                                 ("load_bundle", "_runners_up", "_checked_config"),
                                 ("tests/test_results_validation.py",
                                  "tests/test_launch_checks.py", "-k", "not compiled")),
    "selection": Target("ascend_tune/emit/selection.py",
                        ("runtime_env", "first_failure", "derive", "candidate_table",
                         "select", "field_value"),
                        ("tests/test_selection_rule.py", "tests/test_launch_checks.py",
                         "-k", "not compiled")),
    "feasibility": Target("ascend_tune/search/construct.py",
                          ("violated", "complete", "_choose", "repair", "mutate"),
                          ("tests/test_feasible_walks.py", "tests/test_strategy_repair.py")),
    "strategy_repair": Target("ascend_tune/search/strategies/genetic.py",
                              ("_Run._cross", "_Run._group"),
                              ("tests/test_strategy_repair.py",)),
    "calibration_split": Target("ascend_tune/calibrate/split.py",
                                ("group_keys", "_groups", "holdout", "kfold"),
                                ("tests/test_calibration_split.py",)),
}

# Mutants that do not change behaviour, by key (see :func:`key`), with the reason.
# docs/mutation.md lists the same.
_PAIR_TABLE_CHOICE = ("a choice between two ways of filling the same table of shares (only "
                      "the distinct (cores, rate) pairs used, or every pair): the values are "
                      "the same, only time and memory differ")
_TRUNCATION = ("int(v) and math.trunc(v) agree on every int and finite float (and both raise "
               "on inf and nan)")
_EMPTY_PASSES = ("the early return only skips Feasible.passes for no rows or no checks; "
                 "passes gives the same empty (rows, checks) array there (the search's "
                 "CheckSet, Unconstrained and the tests' toy all do)")
_SPLIT_GUARD = ("holdout's 'taken >= 1 and len(held) < n' always holds where it is tested: "
                "the target is at least one row, there are at least four groups and the loop "
                "never takes the last group")
_DEAD_REFINE_GUARD = (
    "a change to the NONE selection select returns when the refined configuration fails "
    "derive: that branch is never taken, since refine accepts only configurations whose score "
    "is finite and select's score is inf exactly where derive fails (a guard that mirrors the "
    "C++ kNone)")
EQUIVALENT: dict[str, str] = {
    "costs/chip_share_bytes_per_cycle: negate: len(k_values) * len(c_values) > "
    "max(_PAIR_TABLE, pairs.size) -> not (len(k_values) * len(c_values) > "
    "max(_PAIR_TABLE, pairs.size)) #1": _PAIR_TABLE_CHOICE,
    "costs/chip_share_bytes_per_cycle: compare: len(k_values) * len(c_values) > "
    "max(_PAIR_TABLE, pairs.size) -> len(k_values) * len(c_values) >= "
    "max(_PAIR_TABLE, pairs.size) #1": _PAIR_TABLE_CHOICE,
    "costs/chip_share_bytes_per_cycle: binop: len(k_values) * len(c_values) -> "
    "len(k_values) / len(c_values) #1": _PAIR_TABLE_CHOICE,
    "costs/chip_share_bytes_per_cycle: call_drop: max(_PAIR_TABLE, pairs.size) -> "
    "_PAIR_TABLE #1": _PAIR_TABLE_CHOICE,
    "selection/select: boolop: found is None or local is None -> found is None and local is "
    "None #1": ("the walk returns only configurations that pass every check, so local is None "
                "exactly when found is None: 'or' and 'and' agree"),
    "selection/field_value: negate: not isinstance(value, float) -> not (not isinstance("
    "value, float)) #1": _TRUNCATION,
    "selection/field_value: unary_drop: not isinstance(value, float) -> isinstance(value, "
    "float) #1": _TRUNCATION,
    "feasibility/violated: boolop: not n_checks or not genomes.shape[0] -> not n_checks and "
    "(not genomes.shape[0]) #1": _EMPTY_PASSES,
    "feasibility/violated: constant: 0 -> 1 #2": _EMPTY_PASSES,
    "feasibility/complete: compare: kn == kn[0] -> kn != kn[0] #1": (
        "the test only picks the shortcut for rows that know the same genes; the general "
        "path computes the same decidable checks for every row"),
    "feasibility/_choose: constant: 1.0 -> 2.0 #1": (
        "doubling every weight but the current value's halves every key log(u) / w alike: "
        "the largest key, the pick, is the same"),
    "feasibility/_choose: call_drop: np.maximum(u, 1e-300) -> u #1": (
        "a uniform draw of exactly 0 has probability 2^-53: the guard only keeps log(0) away"),
    "feasibility/repair: remove: ok[again] &= ~violated(feasible, rows[again]).any(axis=1) -> "
    "pass #1": (
        "complete enforces each check when the last of its free genes is assigned, from "
        "values that never change afterwards: a completed row passes every check that reads "
        "a free gene, so the re-check finds nothing (it guards a Feasible whose reads miss a "
        "gene, which breaks the Feasible contract)"),
    "selection/select: unary_drop: -1 -> 1 #3": _DEAD_REFINE_GUARD,
    "selection/select: constant: 1 -> 2 #4": _DEAD_REFINE_GUARD,
    "selection/select: constant: 0 -> 1 #3": _DEAD_REFINE_GUARD,
    "strategy_repair/_Run._cross: constant: 1 -> 2 #1": (
        "the pinned mask made two rows instead of one: settle reads pinned only at the rows "
        "it settles (the one child, row 0), so the extra all-False row is never read"),
    "strategy_repair/_Run._group: constant: 0 -> 1 #2": (
        "reads.shape[1] (the number of genes) instead of reads.shape[0] (the number of "
        "checks) as the guard: with no checks, reads.sum(axis=1) is empty either way and no "
        "coupled check is found; a problem always has at least one gene"),
    "calibration_split/holdout: boolop: taken >= 1 and len(held) < n -> taken >= 1 or "
    "len(held) < n #1": _SPLIT_GUARD,
    "calibration_split/holdout: compare: len(held) < n -> len(held) <= n #1": _SPLIT_GUARD,
}

_BINOP_SWAPS: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div,
                                  ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
                                  ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult}
_COMPARE_SWAPS: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
                                    ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
                                    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                                    ast.IsNot: ast.Is}
# Calls whose removal (keeping the first argument) is a plausible bug: a rounding or a clamp
# forgotten.
_DROPPABLE_CALLS = frozenset({"ceil", "floor", "maximum", "minimum", "max", "min", "clip",
                              "round", "trunc"})


@dataclass(frozen=True)
class Mutant:
    module: str
    number: int  # within the module, in source order
    function: str
    line: int  # in the unmutated file
    operator: str
    before: str
    after: str
    key: str  # stable across edits elsewhere in the file


def _functions(tree: ast.Module, wanted: tuple[str, ...]) -> Iterator[tuple[str, ast.AST]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in wanted:
            yield node.name, node
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                name = f"{node.name}.{sub.name}" if hasattr(sub, "name") else ""
                if isinstance(sub, ast.FunctionDef) and name in wanted:
                    yield name, sub


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _sites(func: ast.AST) -> Iterator[tuple[ast.AST, str, Any]]:
    """(node, operator name, argument) of every mutation in ``func``, in a fixed order.
    Docstrings and nested function bodies count (a closure is part of the function)."""
    for node in ast.walk(func):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP_SWAPS:
            yield node, "binop", _BINOP_SWAPS[type(node.op)]
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAPS:
                    yield node, "compare", (i, _COMPARE_SWAPS[type(op)])
        elif isinstance(node, ast.BoolOp):
            yield node, "boolop", ast.Or if isinstance(node.op, ast.And) else ast.And
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
            yield node, "unary_drop", None
        elif (isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
              and not isinstance(node.value, bool)):
            yield node, "constant", node.value + 1
        elif (isinstance(node, ast.Call) and node.args and _call_name(node) in _DROPPABLE_CALLS
              and not node.keywords):
            yield node, "call_drop", None
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            yield node, "negate", None
        if isinstance(node, (ast.FunctionDef, ast.If, ast.For, ast.While, ast.With)):
            for field in ("body", "orelse"):
                for i, stmt in enumerate(getattr(node, field, [])):
                    removable = (isinstance(stmt, ast.AugAssign)
                                 or (isinstance(stmt, ast.Expr)
                                     and isinstance(stmt.value, ast.Call))
                                 or (isinstance(stmt, ast.Assign)
                                     and isinstance(stmt.targets[0], ast.Subscript)))
                    if removable:
                        yield node, "remove", (field, i)


def _apply(node: Any, operator: str, arg: Any) -> Any:
    """Mutate ``node`` in place; return a replacement node where the node itself changes."""
    if operator == "binop":
        node.op = arg()
    elif operator == "compare":
        i, op = arg
        node.ops[i] = op()
    elif operator == "boolop":
        node.op = arg()
    elif operator == "unary_drop":
        return node.operand
    elif operator == "constant":
        node.value = arg
    elif operator == "call_drop":
        return node.args[0]
    elif operator == "negate":
        node.test = ast.UnaryOp(ast.Not(), node.test)
    elif operator == "remove":
        field, i = arg
        getattr(node, field)[i] = ast.Pass()
    return None


class _Replace(ast.NodeTransformer):
    def __init__(self, old: ast.AST, new: ast.AST) -> None:
        self.old, self.new = old, new

    def visit(self, node: ast.AST) -> Any:
        if node is self.old:
            return self.new
        return super().visit(node)


def mutants(name: str) -> list[tuple[Mutant, str]]:
    """Every mutant of a target, with the mutated module source."""
    target = TARGETS[name]
    source = (ROOT / target.path).read_text()
    base = ast.parse(source)
    sites = [(fname, i) for fname, func in _functions(base, target.functions)
             for i, _ in enumerate(_sites(func))]
    found = {f for f, _ in _functions(base, target.functions)}
    missing = set(target.functions) - found
    if missing:
        raise SystemExit(f"{target.path}: no function {sorted(missing)} (renamed? update TARGETS)")
    out: list[tuple[Mutant, str]] = []
    seen: dict[str, int] = {}
    for number, (fname, index) in enumerate(sites):
        tree = ast.parse(source)
        func = dict(_functions(tree, target.functions))[fname]
        node, operator, arg = list(_sites(func))[index]
        stmt_line = getattr(node, "lineno", 0)
        if operator == "remove":
            field, i = arg
            victim = getattr(node, field)[i]
            before, stmt_line = ast.unparse(victim), victim.lineno
        elif operator == "negate":
            before = ast.unparse(getattr(node, "test"))  # noqa: B009 (an If, While or IfExp)
        else:
            before = ast.unparse(node)
        replacement = _apply(node, operator, arg)
        mutated: ast.AST = tree
        if replacement is not None:
            mutated = _Replace(node, replacement).visit(tree)
            after = ast.unparse(replacement)
        elif operator == "remove":
            after = "pass"
        elif operator == "negate":
            after = f"not ({before})"
        else:
            after = ast.unparse(node)
        ident = f"{fname}: {operator}: {before} -> {after}"
        seen[ident] = seen.get(ident, 0) + 1
        key = f"{name}/{ident} #{seen[ident]}"
        text = ast.unparse(ast.fix_missing_locations(mutated)) + "\n"
        out.append((Mutant(name, number, fname, stmt_line, operator, before, after, key), text))
    return out


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    for rel in files:
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _pytest(work: Path, tests: tuple[str, ...], timeout_s: float) -> tuple[str, str, float]:
    """('passed' | 'failed' | 'timeout', output tail, seconds) of the tests in ``work``."""
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p",
           "no:cacheprovider", "-p", "no:xdist", *tests]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return "timeout", "", time.perf_counter() - start
    status = "passed" if proc.returncode == 0 else "failed"
    return status, (proc.stdout + proc.stderr)[-3000:], time.perf_counter() - start


def run(names: list[str], only: int | None, verbose: bool) -> dict[str, dict[str, object]]:
    report: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="ascend-tune-mutation-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        for name in names:
            target = TARGETS[name]
            status, tail, base_s = _pytest(work, target.tests, 600)
            if status != "passed":
                raise SystemExit(f"{name}: the tests fail without any mutant:\n{tail}")
            timeout_s = 3 * base_s + 20
            original = (work / target.path).read_text()
            killed, survivors, equivalent, timeouts = 0, [], [], 0
            todo = mutants(name)
            if only is not None:
                todo = [m for m in todo if m[0].number == only]
            start = time.perf_counter()
            for mutant, text in todo:
                (work / target.path).write_text(text)
                try:
                    status, tail, _s = _pytest(work, target.tests, timeout_s)
                finally:
                    (work / target.path).write_text(original)
                if verbose or only is not None:
                    shown = f"\n{tail}" if only is not None else ""
                    print(f"  #{mutant.number} {status}: {mutant.key}{shown}", flush=True)
                if status == "passed":
                    if mutant.key in EQUIVALENT:
                        equivalent.append(mutant)
                    else:
                        survivors.append(mutant)
                else:
                    killed += 1
                    timeouts += status == "timeout"
            counted = len(todo) - len(equivalent)
            rate = killed / counted if counted else 1.0
            report[name] = {"module": target.path, "mutants": len(todo), "killed": killed,
                            "timeouts": timeouts, "equivalent": len(equivalent),
                            "survived": len(survivors), "kill_rate": round(rate, 4),
                            "seconds": round(time.perf_counter() - start, 1),
                            "tests": " ".join(target.tests),
                            "survivors": [m.__dict__ for m in survivors]}
            print(f"{name:20s} {target.path:42s} {len(todo):4d} mutants  {killed:4d} killed "
                  f"({timeouts} by timeout)  {len(equivalent):3d} equivalent  "
                  f"{len(survivors):3d} survived  {rate:6.1%}  "
                  f"{time.perf_counter() - start:6.0f} s", flush=True)
            for m in survivors:
                print(f"    survivor #{m.number} {target.path}:{m.line} {m.key}", flush=True)
    return report


def main() -> None:
    # A stopped run still removes its copy of the work tree (TemporaryDirectory's cleanup).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", choices=sorted(TARGETS),
                    help="a module of TARGETS (repeatable; default: all)")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--only", type=int, help="run one mutant (by number) and show its output")
    ap.add_argument("--json", type=Path, help="also write the report here")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per mutant")
    args = ap.parse_args()
    every = {m.key for name in TARGETS for m, _text in mutants(name)}
    stale = sorted(k for k in EQUIVALENT if k not in every)
    if stale:
        raise SystemExit("EQUIVALENT names mutants that no longer exist (the code changed: "
                         "look again):\n  " + "\n  ".join(stale))
    names = args.module or list(TARGETS)
    if args.list:
        for name in names:
            for mutant, _text in mutants(name):
                print(f"{name} #{mutant.number} line {mutant.line}: {mutant.key}")
        return
    report = run(names, args.only, args.verbose)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
