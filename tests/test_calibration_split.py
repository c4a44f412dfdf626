"""The held-out split of calibration rows (docs/model.md "Calibration", rule 1), on rows made
here: groups are a source file and a shape; whole groups are held out when there are at least
four, single rows otherwise; fewer than 8 rows hold nothing out. The expected sizes are
counted by hand from those rules."""

from __future__ import annotations

import numpy as np
import pytest

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate import split
from ascend_tune.calibrate.measurements import Measurement


def _rows(groups: list[int], files: int = 1) -> list[Measurement]:
    """``groups[g]`` rows (one tiling sweep: same file, same shape) per group g; the groups
    are spread over ``files`` files round-robin, shapes totalLength = 1000 * (g + 1)."""
    out = []
    line = 1
    for g, size in enumerate(groups):
        for c in range(size):
            line += 1
            out.append(Measurement(f"dir:x/run{g % files}.csv:{line}",
                                   {"totalLength": 1000 * (g + 1)}, {"blockDim": c + 1}, (),
                                   10.0 + c))
    return out


def _group_of(rows: list[Measurement]) -> list[int]:
    return [m.shape["totalLength"] // 1000 - 1 for m in rows]


def test_group_keys_are_file_and_shape() -> None:
    rows = _rows([2, 1], files=2)
    # The line number goes, the rest of the origin (with its own colon) stays.
    assert split.group_keys(rows) == ["dir:x/run0.csv|totalLength=1000"] * 2 + [
        "dir:x/run1.csv|totalLength=2000"]
    same_shape_other_file = Measurement("y.csv:9", {"totalLength": 1000}, {}, (), 1.0)
    assert split.group_keys([same_shape_other_file]) == ["y.csv|totalLength=1000"]


def test_groups_collect_members_in_row_order() -> None:
    rows = _rows([2, 3])
    rows = [rows[0], rows[2], rows[1], rows[3], rows[4]]  # interleaved
    assert [g.tolist() for g in split._groups(rows)] == [[0, 2], [1, 3, 4]]


@pytest.mark.parametrize("share", [-0.1, 1.0, 1.5])
def test_holdout_share_out_of_range(share: float) -> None:
    with pytest.raises(AscendTuneError, match=r"--holdout must be at least 0 and below 1"):
        split.holdout(_rows([3] * 8), share, 0)


def test_holdout_zero_and_too_few_rows() -> None:
    s = split.holdout(_rows([3] * 8), 0.0, 0)
    assert (s.fit.tolist(), s.held_out.tolist(), s.method) == (list(range(24)), [],
                                                               "none (--holdout 0)")
    s = split.holdout(_rows([7]), 0.25, 0)  # 7 rows: one fewer than the minimum
    assert s.held_out.size == 0 and s.fit.tolist() == list(range(7))
    assert s.method == "none (only 7 row(s); at least 8 to hold any out)"
    s = split.holdout(_rows([8]), 0.25, 0)  # 8 rows, one group: by row, round(2.0) = 2
    assert s.held_out.size == 2 and s.method == "by row: 2 of 8, seed 0"


def test_holdout_whole_groups() -> None:
    # 8 groups of 3 rows; 25 %: round(0.25 * 24) = 6 rows, i.e. two whole groups.
    rows = _rows([3] * 8)
    s = split.holdout(rows, 0.25, 0)
    assert s.method == "by source and shape: 2 of 8 group(s), seed 0"
    assert s.held_out.size == 6 and s.fit.size == 18
    assert sorted([*s.fit.tolist(), *s.held_out.tolist()]) == list(range(24))
    assert list(s.fit) == sorted(s.fit) and list(s.held_out) == sorted(s.held_out)
    held = {_group_of(rows)[i] for i in s.held_out}
    fit = {_group_of(rows)[i] for i in s.fit}
    assert len(held) == 2 and not held & fit
    assert s == split.holdout(rows, 0.25, 0), "deterministic for a seed"
    assert s != split.holdout(rows, 0.25, 3)
    assert s.as_dict() == {"method": s.method, "fit_rows": 18, "held_out_rows": 6}


def test_holdout_groups_need_four_groups() -> None:
    # Exactly 4 groups of 3 (2 * MIN_GROUPS_PER_SET): whole groups, round(3.0) = 3 rows,
    # one group.
    s = split.holdout(_rows([3] * 4), 0.25, 0)
    assert s.method == "by source and shape: 1 of 4 group(s), seed 0"
    assert s.held_out.size == 3
    # 3 groups of 4: by row, round(0.25 * 12) = 3 rows.
    s = split.holdout(_rows([4] * 3), 0.25, 0)
    assert s.method == "by row: 3 of 12, seed 0" and s.held_out.size == 3


def test_holdout_keeps_at_least_one_group_to_fit() -> None:
    # 4 groups of 2, share 0.9: round(7.2) = 7 rows wanted, but never every group: 3 groups
    # (6 rows) held out, one group (2 rows) fitted.
    s = split.holdout(_rows([2] * 4), 0.9, 0)
    assert s.method == "by source and shape: 3 of 4 group(s), seed 0"
    assert (s.held_out.size, s.fit.size) == (6, 2)


def test_holdout_stops_at_the_target() -> None:
    # 8 groups of 1 row each: 0.5 of 8 rows = 4 groups exactly.
    s = split.holdout(_rows([1] * 8), 0.5, 1)
    assert s.method == "by source and shape: 4 of 8 group(s), seed 1"
    assert s.held_out.size == 4


def test_holdout_splits_by_row_when_groups_are_few() -> None:
    rows = _rows([5, 5])
    s = split.holdout(rows, 0.3, 2)  # round(3.0) = 3 rows
    assert s.method == "by row: 3 of 10, seed 2"
    assert s.held_out.size == 3 and sorted([*s.fit, *s.held_out]) == list(range(10))


@pytest.mark.parametrize("k", [1, 11])
def test_kfold_needs_two_to_n_folds(k: int) -> None:
    with pytest.raises(AscendTuneError, match=r"--kfold must be between 2 and the 10 rows"):
        split.kfold(_rows([5, 5]), k, 0)


def test_kfold_by_groups_balances_folds() -> None:
    # 6 groups (>= 2 folds * 2) of 5, 3, 3, 2, 2, 1 rows, dealt largest first to the smallest
    # fold: 5 -> A; 3 -> B (3); 3 -> B (6); 2 -> A (7); 2 -> B (8); 1 -> A (8).
    rows = _rows([5, 3, 3, 2, 2, 1])
    method, folds = split.kfold(rows, 2, 0)
    assert method == "by source and shape: 6 group(s) in 2 folds, seed 0"
    assert sorted(len(f) for f in folds) == [8, 8]
    assert sorted(np.concatenate(folds).tolist()) == list(range(16))
    groups = _group_of(rows)
    owner = {}
    for f, fold in enumerate(folds):
        assert fold.tolist() == sorted(fold.tolist())
        for i in fold:
            assert owner.setdefault(groups[i], f) == f, "a group stays in one fold"
    assert {groups[i] for i in folds[0]} in ({0, 3, 5}, {0, 4, 5})


def test_kfold_by_rows_when_groups_are_few() -> None:
    # 3 groups, fewer than 3 folds * 2: by row, 10 rows in folds of 4, 3 and 3.
    method, folds = split.kfold(_rows([4, 3, 3]), 3, 0)
    assert method == "by row: 10 rows in 3 folds, seed 0"
    assert [len(f) for f in folds] == [4, 3, 3]
    assert sorted(np.concatenate(folds).tolist()) == list(range(10))
    again = split.kfold(_rows([4, 3, 3]), 3, 0)[1]
    assert [f.tolist() for f in again] == [f.tolist() for f in folds], "deterministic"


def test_holdout_holds_at_least_one_row() -> None:
    # 8 rows, 5 %: round(0.4) = 0, but at least one row is held out.
    s = split.holdout(_rows([8]), 0.05, 0)
    assert s.method == "by row: 1 of 8, seed 0" and s.held_out.size == 1


def test_kfold_edges() -> None:
    # Exactly 2 folds * 2 groups: whole groups, two per fold (sizes 3 + 1 and 2 + 2 -> 4, 4:
    # 3 -> A, 2 -> B, 2 -> B, 1 -> A).
    method, folds = split.kfold(_rows([3, 2, 2, 1]), 2, 0)
    assert method == "by source and shape: 4 group(s) in 2 folds, seed 0"
    assert sorted(len(f) for f in folds) == [4, 4]
    # As many folds as rows: one row each.
    method, folds = split.kfold(_rows([5, 5]), 10, 0)
    assert method == "by row: 10 rows in 10 folds, seed 0"
    assert sorted(f.tolist() for f in folds) == [[i] for i in range(10)]
