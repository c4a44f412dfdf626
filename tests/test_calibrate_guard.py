"""The refusal of a calibration that predicts unseen rows worse than its start (issue 45)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from ascend_tune.calibrate.guard import worse_than_sourced


def _result(before: float | None, after: float | None, selection: dict[str, Any]) -> Any:
    def errors(mape: float | None) -> Any:
        return None if mape is None else SimpleNamespace(mape=mape, n=5)
    return cast(Any, SimpleNamespace(held_out_before=errors(before),
                                     held_out_after=errors(after), selection=selection))


def test_held_out_worse_than_the_start_is_refused() -> None:
    problems = worse_than_sourced(_result(0.10, 0.12, {}))
    assert len(problems) == 1 and "held-out MAPE 12.0%" in problems[0], problems
    assert worse_than_sourced(_result(0.10, 0.08, {})) == []


def test_held_out_rows_decide_before_the_selection_rows() -> None:
    worse_selection = {"check_mape_chosen": 0.2, "check_mape_sourced": 0.1, "check_rows": 4}
    assert worse_than_sourced(_result(0.10, 0.05, worse_selection)) == []


def test_without_held_out_rows_the_selection_rows_judge() -> None:
    worse = {"check_mape_chosen": 0.2, "check_mape_sourced": 0.1, "check_rows": 4}
    better = {"check_mape_chosen": 0.05, "check_mape_sourced": 0.1, "check_rows": 4}
    problems = worse_than_sourced(_result(None, None, worse))
    assert len(problems) == 1 and "4 selection rows" in problems[0], problems
    assert worse_than_sourced(_result(None, None, better)) == []
    assert worse_than_sourced(_result(None, None, {})) == []
