from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.spec import OperatorSpec, load_spec

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
STUB = Path(__file__).resolve().parent / "cann_stub"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def hw() -> HardwareProfile:
    return load_profile("ascend910b3")


@pytest.fixture(scope="session")
def add_spec() -> OperatorSpec:
    return load_spec("add")


@pytest.fixture(scope="session")
def matmul_spec() -> OperatorSpec:
    return load_spec("matmul")


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
