"""The built-in operator specs, and spec references: a name (``add``) or a file, either with
``:variant``."""

from __future__ import annotations

from pathlib import Path

from ascend_tune.base import resources
from ascend_tune.base.errors import SpecError, did_you_mean
from ascend_tune.base.yamlio import read_text
from ascend_tune.spec.compile import load_spec_text
from ascend_tune.spec.model import OperatorSpec


def split_variant(ref: str) -> tuple[str, str | None]:
    """``add:float32`` -> (``add``, ``float32``); a plain name or path has no variant."""
    head, sep, tail = ref.rpartition(":")
    if sep and head and tail and "/" not in tail and "\\" not in tail:
        return head, tail
    return ref, None


def load_spec(ref: str | Path) -> OperatorSpec:
    """Load a built-in spec by name (``add``), a spec file, either with ``:variant``."""
    name, variant = split_variant(str(ref))
    path = resources.resolve("operator_specs", name)
    if not path.exists():
        known = resources.builtin_names("operator_specs")
        raise SpecError(f"operator spec '{ref}' not found{did_you_mean(str(ref), known)}; "
                        f"built-in: {', '.join(known)}")
    return load_spec_text(read_text(path, "operator spec"), str(path), variant)


def spec_paths() -> list[Path]:
    return sorted(resources.data_dir("operator_specs").glob("*.yaml"))
