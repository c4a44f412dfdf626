from __future__ import annotations

import os
import shutil
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.spec import OperatorSpec, load_spec
from tests import postgres_server

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
STUB = Path(__file__).resolve().parent / "cann_stub"


def pytest_configure(config: pytest.Config) -> None:
    # No test may touch the user's real tuning database (the per-user data folder, or one an
    # exported ASCEND_TUNE_DB names): fixtures wider than a test run without one; each test
    # gets a fresh one of its own (_tuning_database below).
    os.environ["ASCEND_TUNE_DB"] = "off"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                        pytest.TestReport]:
    """With ASCEND_TUNE_NO_SKIPS=1 (what .ci/run sets) a skipped test fails, naming why it
    was skipped: CI installs g++ and Chromium, so everything runs there or the run fails."""
    report = yield
    if report.skipped and os.environ.get("ASCEND_TUNE_NO_SKIPS") == "1":
        report.outcome = "failed"
        report.longrepr = (f"skipped, and ASCEND_TUNE_NO_SKIPS=1 (CI) runs every test: "
                           f"{report.longrepr}")
    return report


def _xdist_group(item: pytest.Item) -> str | None:
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    return "_".join(names) if names else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep ``--dist=loadgroup`` working: pytest-xdist (3.8) sends the tests of one
    ``xdist_group`` to one worker by tagging their node ids ``<id>@<group>`` on the worker,
    writing ``item._nodeid``; pytest 9 keeps the id in ``item._id`` instead, so the write was
    lost and every group was spread over all workers, each building the group's expensive
    module fixture again (the compiled project twice, 63 s each). Write the tag where this
    pytest keeps it, and fail the run rather than lose the grouping silently."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist workers only
        return
    for item in items:
        group = _xdist_group(item)
        if group is None or item.nodeid.endswith(f"@{group}"):
            continue
        from _pytest.nodeid import coerce_node_id  # pytest >= 9, where xdist's write is lost

        item._id = coerce_node_id(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]
        if not item.nodeid.endswith(f"@{group}"):
            raise pytest.UsageError(f"cannot tag {item.nodeid} with its xdist group {group}: "
                                    "this pytest / pytest-xdist pair would run the group's "
                                    "tests on every worker")


@pytest.fixture(autouse=True)
def _tuning_database(tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty tuning database (a SQLite file in a temp folder): the
    suite never writes the user's real data folder, and no test sees another's experience.
    The commands a test runs (forked or spawned) inherit it through the environment."""
    path = tmp_path_factory.mktemp("db") / "tuning.sqlite"
    monkeypatch.setenv("ASCEND_TUNE_DB", str(path))
    monkeypatch.delenv("ASCEND_TUNE_HOST", raising=False)
    return path


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

# The second tier: the whole-project build, the sanitizer runs, the per-operator compile
# matrix and compiled selection beyond the operators that stand for the rest (add: vector,
# matmul: cube; rmsnorm for the row-wise kernels). README's test command leaves them out so
# that it runs in a few minutes; ``python -m pytest -n auto -m slow`` runs them, and .ci/run
# runs both tiers.
slow = pytest.mark.slow


def slow_unless(name: str, fast: set[str]) -> list[pytest.MarkDecorator]:
    """The marks of a per-operator parameter: ``slow`` unless ``name`` is one of ``fast``."""
    return [] if name in fast else [slow]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    # Say that the second tier was left out, and how to run it: never silently. (Under xdist
    # the workers deselect, so the controller cannot count what was left out.)
    if "not slow" in " ".join(str(config.getoption("markexpr", "") or "").split()):
        terminalreporter.write_line(
            "not run: the slow tier (whole-project, sanitizer and per-operator compile "
            "builds); python -m pytest -n auto -m slow runs it, .ci/run runs both tiers")


@pytest.fixture(scope="session")
def pg() -> Iterator[postgres_server.Server]:
    """One real PostgreSQL server per test process (each test makes its own database)."""
    if postgres_server.server_bin() is None:  # CI installs it (ASCEND_TUNE_NO_SKIPS fails this)
        pytest.skip("PostgreSQL server not installed (apt-get install postgresql)")
    with postgres_server.running() as server:
        yield server
