"""The CMake package (cmake/AscendTuneConfig.cmake) in real CMake + ninja builds of stand-in
operator projects laid out like the two msOpGen templates and a CATLASS-style project
(tests/cmake_projects), compiled with g++ against tests/cann_stub. The files a team writes
(build.sh, op_host/CMakeLists.txt, the top-level CMakeLists.txt, the CI jobs) are copied out
of docs/build.md, so the page is what is built.

Each project is configured and built once per module (a module fixture; its tests run on one
xdist worker) and the tests then change one thing each and rebuild: nothing changed does no
work, a touched results file re-runs the configure and rebuilds nothing, a changed tuned table
rebuilds only the sources of that operator, an invalid results file fails the configure with
the tool's one line and leaves the headers as they were."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from ascend_tune.results import format as results_format
from tests.cli_process import run as run_cli
from tests.conftest import ROOT, STUB, needs_gxx, slow

DOC = ROOT / "docs" / "build.md"
PROJECTS = Path(__file__).resolve().parent / "cmake_projects"
BIN = Path(sys.executable).parent
SEARCH_PATH = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
CMAKE = shutil.which("cmake", path=SEARCH_PATH)
NINJA = shutil.which("ninja", path=SEARCH_PATH)
needs_cmake = pytest.mark.skipif(CMAKE is None or NINJA is None,
                                 reason="cmake and ninja not installed (pip install '.[test]')")
pytestmark = [needs_cmake, needs_gxx]
OLD = pytest.mark.xdist_group("cmake_msopgen_old")
NEW = pytest.mark.xdist_group("cmake_msopgen_new")
CATLASS = pytest.mark.xdist_group("cmake_catlass")
OPS = {"add_custom": "add", "mul_custom": "mul"}


def recipe(name: str) -> str:
    """The fenced block after ``<!-- recipe: NAME -->`` in docs/build.md."""
    m = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```[a-z]*\n(.*?)\n```\n",
                  DOC.read_text(), re.S)
    assert m, f"docs/build.md has no recipe {name}"
    return m.group(1) + "\n"


@dataclass
class Tree:
    root: Path
    build: Path
    env: dict[str, str]
    configure_log: str

    def ninja(self, *, ok: bool = True) -> str:
        done = subprocess.run([str(NINJA), "-C", str(self.build)], env=self.env,
                              capture_output=True, text=True, check=False)
        out = done.stdout + done.stderr
        assert (done.returncode == 0) == ok, out
        return out

    def results(self, op: str) -> Path:
        return self.root / "tuning" / f"{op}.results.json"


def _env(tmp: Path) -> dict[str, str]:
    """The shell of a developer with the project's venv active: python3 and ninja from it, the
    stand-in CANN headers where ASCEND_CANN_PACKAGE_PATH says."""
    cann = tmp / "cann"
    cann.mkdir(exist_ok=True)
    if not (cann / "include").exists():
        (cann / "include").symlink_to(STUB)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CMAKE_", "ASCEND_"))}
    env.update(PATH=SEARCH_PATH, ASCEND_CANN_PACKAGE_PATH=str(cann), CMAKE_GENERATOR="Ninja")
    return env


def _tuning(root: Path, ops: dict[str, str]) -> None:
    tuning = root / "tuning"
    tuning.mkdir(parents=True, exist_ok=True)
    for op, example in ops.items():
        shutil.copy(ROOT / "examples" / example / "results.json", tuning / f"{op}.results.json")
        shutil.copy(ROOT / "operator_specs" / f"{example}.yaml", tuning / f"{op}.yaml")
        shutil.copy(ROOT / "examples" / example / "shapes.yaml", tuning / f"{op}.shapes.yaml")


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _without_one_shape(path: Path) -> None:
    """The results file with its last tuned shape dropped: still valid, another tuned table
    (so other headers)."""
    doc = results_format.read_all(path)
    doc["shapes"] = doc["shapes"][:-1]
    path.write_text(results_format.to_text(doc))


def _broken(path: Path) -> None:
    doc = json.loads(path.read_text())
    param = next(iter(doc["shapes"][0]["best"]))
    doc["shapes"][0]["best"][param] = "many"
    path.write_text(json.dumps(doc))


def _emit_error(results: Path) -> str:
    """What ``ascend-tune emit`` says of ``results`` on stderr (one line)."""
    done = run_cli(["emit", str(results), "-o", str(results.parent / "scratch"), "--quiet"])
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    return done.stderr.strip()


def _compiled(out: str) -> list[str]:
    """The sources ninja compiled, by file name."""
    return sorted(re.findall(r"Building CXX object \S*?([\w.]+)\.o\b", out))


def _snapshot(files: list[Path]) -> dict[Path, tuple[bytes, int]]:
    return {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in files}


def _generated(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("op_*/*") if p.read_text().startswith("// Generated"))


# ---- the old msOpGen template ---------------------------------------------------------------


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    tmp = tmp_path_factory.mktemp("cmake_old")
    root = tmp / "AddCustom"
    shutil.copytree(PROJECTS / "msopgen_old", root)
    (root / "build.sh").write_text(recipe("msopgen_old/build.sh"))
    # op_host/ holds only what the recipe and emit write: git keeps no empty folder.
    (root / "op_host").mkdir(exist_ok=True)
    (root / "op_host" / "CMakeLists.txt").write_text(recipe("msopgen_old/op_host/CMakeLists.txt"))
    _tuning(root, OPS)
    env = _env(tmp)
    log = _run(["bash", "build.sh"], root, env)
    yield Tree(root, root / "build_out", env, log)


@OLD
def test_old_template_builds_from_a_clean_tree(old: Tree) -> None:
    for op in ("AddCustom", "MulCustom"):
        assert re.search(rf"AscendTune: {op}: wrote \d+ tiling file\(s\)", old.configure_log)
    assert (old.build / "custom_opp.tar").stat().st_size > 0
    # opbuild's line-by-line parser read the emitted header: the kernel-side struct.
    kernel = (old.build / "autogen" / "add_custom_tiling_data.h").read_text()
    assert "struct AddCustomTilingData {\n    uint32_t totalLength;" in kernel
    names = {p.name for p in _generated(old.root)}
    assert {f"{op}{suffix}" for op in OPS for suffix in ("_tiling.h", ".cpp")} <= names
    assert all(name.startswith(tuple(OPS)) for name in names)


@OLD
def test_old_template_second_build_does_no_work(old: Tree) -> None:
    old.ninja()
    assert "ninja: no work to do." in old.ninja()


@OLD
def test_old_template_touched_results_reconfigure_and_rebuild_nothing(old: Tree) -> None:
    old.ninja()
    headers = _snapshot(_generated(old.root))
    os.utime(old.results("add_custom"))
    out = old.ninja()
    assert "Re-running CMake" in out and "tiling files up to date" in out, out
    assert _compiled(out) == [], out
    assert _snapshot(_generated(old.root)) == headers
    assert "ninja: no work to do." in old.ninja()


@OLD
def test_old_template_changed_results_rebuild_only_that_operator(old: Tree) -> None:
    old.ninja()
    original = old.results("add_custom").read_bytes()
    mul = _snapshot([p for p in _generated(old.root) if p.name.startswith("mul_")])
    try:
        _without_one_shape(old.results("add_custom"))
        out = old.ninja()
        assert "AscendTune: AddCustom: wrote" in out and "MulCustom: tiling files up to date" in out
        # The host file and the kernel of AddCustom, not MulCustom's.
        assert _compiled(out) == ["add_custom.cpp", "add_custom.cpp"], out
        assert _snapshot([p for p in _generated(old.root) if p.name.startswith("mul_")]) == mul
        assert "ninja: no work to do." in old.ninja()
    finally:
        old.results("add_custom").write_bytes(original)


@OLD
def test_old_template_invalid_results_fail_the_configure_in_one_line(old: Tree) -> None:
    headers = _snapshot(_generated(old.root))
    results = old.results("add_custom")
    original = results.read_bytes()
    try:
        _broken(results)
        message = _emit_error(results)
        out = old.ninja(ok=False)
        # The tool's line whole (CMake re-wraps messages; not this one), and nothing else of
        # the tool's: no listing of the command.
        lines = [line.strip() for line in out.splitlines() if "ascend_tune_tiling(OP" in line]
        assert lines == [f"ascend_tune_tiling(OP AddCustom): {message}"], out
        assert _snapshot(_generated(old.root)) == headers
    finally:
        results.write_bytes(original)  # the next build re-runs the configure


@slow
@OLD
def test_old_template_edited_spec_fails_the_configure_naming_the_rerun(old: Tree) -> None:
    old.ninja()
    spec = old.root / "tuning" / "add_custom.yaml"
    original = spec.read_text()
    try:
        # A comment changes nothing a search reads: the results still answer the spec.
        spec.write_text(original + "# reviewed\n")
        assert _compiled(old.ninja()) == []
        # A changed constraint does: the configure fails, naming the rerun.
        spec.write_text(original.replace("bufferNum: {values: [1, 2]", "bufferNum: {values: [2]"))
        out = old.ninja(ok=False)
        assert "was tuned from another version of" in out and "rerun `ascend-tune search" in out
    finally:
        spec.write_text(original)
    old.ninja()


@slow
@OLD
def test_ci_recipes_check_the_results_and_headers(old: Tree) -> None:
    """The ascend-tune steps of both CI jobs, as docs/build.md writes them, pass in the built
    project; the package step (build.sh) is the fixture's build (again in the slow tier)."""
    old.ninja()
    github = yaml.safe_load(recipe("ci/github.yml"))
    steps = [s["run"] for s in github["jobs"]["package"]["steps"] if "run" in s]
    github_lines = [line for s in steps for line in s.splitlines()]
    gitlab_lines = yaml.safe_load(recipe("ci/gitlab.yml"))["operators"]["script"]
    assert github_lines == gitlab_lines
    tool = [line for line in github_lines if line.startswith("ascend-tune ")]
    assert [t.split()[1] for t in tool] == ["search", "search", "emit", "emit"]
    assert github_lines[-1] == "bash build.sh"
    for line in tool:
        _run(["bash", "-c", line], old.root, old.env)
    # And they catch what they are there for: a stale header.
    header = old.root / "op_host" / "add_custom_tiling.h"
    original = header.read_text()
    try:
        header.write_text(original.replace("tileNum", "tileCount"))
        done = subprocess.run(["bash", "-c", tool[2]], cwd=old.root, env=old.env,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 1 and "stale:" in done.stdout, done.stdout
    finally:
        header.write_text(original)


# ---- the new msOpGen template ---------------------------------------------------------------


@pytest.fixture(scope="module")
def new(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    tmp = tmp_path_factory.mktemp("cmake_new")
    root = tmp / "AddCustom"
    shutil.copytree(PROJECTS / "msopgen_new", root)
    (root / "CMakeLists.txt").write_text(recipe("msopgen_new/CMakeLists.txt"))
    _tuning(root, OPS)
    env = _env(tmp)
    # As a developer would: the package folder from the tool, the project's Python found by
    # find_package(Python3) (the venv of this test run).
    cmake_dir = run_cli(["cmake-dir"], env=env).stdout.strip()
    env["VIRTUAL_ENV"] = sys.prefix
    log = _run([str(CMAKE), "-S", ".", "-B", "build", "-G", "Ninja",
                f"-DCMAKE_PREFIX_PATH={cmake_dir}"], root, env)
    tree = Tree(root, root / "build", env, log)
    tree.ninja()
    yield tree


@NEW
def test_new_template_builds_the_struct_header_into_host_and_kernel(new: Tree) -> None:
    assert re.search(r"AscendTune: AddCustom: wrote \d+ tiling file\(s\)", new.configure_log)
    header = (new.root / "op_kernel" / "add_custom_tiling.h").read_text()
    assert "struct AddCustomTilingData {" in header
    assert '#include "../op_kernel/add_custom_tiling.h"' in (
        new.root / "op_host" / "add_custom.cpp").read_text()
    assert list(new.build.glob("libcust_optiling.*"))
    assert "ninja: no work to do." in new.ninja()


@NEW
def test_new_template_changed_results_rebuild_only_that_operator(new: Tree) -> None:
    original = new.results("mul_custom").read_bytes()
    try:
        _without_one_shape(new.results("mul_custom"))
        out = new.ninja()
        assert _compiled(out) == ["mul_custom.cpp", "mul_custom.cpp"], out
        assert "ninja: no work to do." in new.ninja()
    finally:
        new.results("mul_custom").write_bytes(original)


@NEW
def test_new_template_invalid_results_leave_the_headers(new: Tree) -> None:
    headers = _snapshot(_generated(new.root))
    results = new.results("add_custom")
    original = results.read_bytes()
    try:
        _broken(results)
        out = new.ninja(ok=False)
        message = f"ascend_tune_tiling(OP AddCustom): {_emit_error(results)}"
        assert message in [line.strip() for line in out.splitlines()], out
        assert _snapshot(_generated(new.root)) == headers
    finally:
        results.write_bytes(original)


# ---- a CATLASS-style project, headers at build time ------------------------------------------


@pytest.fixture(scope="module")
def catlass(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    tmp = tmp_path_factory.mktemp("cmake_catlass")
    root = tmp / "catlass"
    shutil.copytree(PROJECTS / "catlass", root)
    (root / "CMakeLists.txt").write_text(recipe("catlass/CMakeLists.txt"))
    (root / "tuning").mkdir()
    shutil.copy(ROOT / "examples" / "catlass_matmul" / "results.json",
                root / "tuning" / "catlass_matmul.results.json")
    env = _env(tmp)
    cmake_dir = run_cli(["cmake-dir"], env=env).stdout.strip()
    log = _run([str(CMAKE), "-S", ".", "-B", "build", "-G", "Ninja",
                f"-DCMAKE_PREFIX_PATH={cmake_dir}", f"-DPython3_EXECUTABLE={sys.executable}"],
               root, env)
    yield Tree(root, root / "build", env, log)


@CATLASS
def test_build_time_headers_exist_before_the_example_compiles(catlass: Tree) -> None:
    tuned = catlass.build / "tuned"
    assert not tuned.exists()  # the configure wrote nothing
    out = catlass.ninja()
    assert out.index("emitting the CatlassMatmulCustom tiling files") < out.index(
        "Building CXX object")
    assert (tuned / "op_kernel" / "catlass_matmul_custom_tiling.h").is_file()
    run = subprocess.run([str(catlass.build / "basic_matmul")], capture_output=True, text=True,
                         check=True)
    assert run.stdout == "4096 4096 4096 40 8\n"
    assert "ninja: no work to do." in catlass.ninja()


@CATLASS
def test_build_time_touched_results_re_emit_and_compile_nothing(catlass: Tree) -> None:
    catlass.ninja()
    os.utime(catlass.results("catlass_matmul"))
    out = catlass.ninja()
    assert "emitting the CatlassMatmulCustom tiling files" in out and "Re-running" not in out
    assert _compiled(out) == [], out
    assert "ninja: no work to do." in catlass.ninja()


@slow
@CATLASS
def test_build_time_changed_results_recompile_the_example(catlass: Tree) -> None:
    catlass.ninja()
    original = catlass.results("catlass_matmul").read_bytes()
    try:
        _without_one_shape(catlass.results("catlass_matmul"))
        assert _compiled(catlass.ninja()) == ["basic_matmul.cpp"]
    finally:
        catlass.results("catlass_matmul").write_bytes(original)
    catlass.ninja()


def test_ci_recipes_run_the_same_steps_in_both_jobs() -> None:
    github = yaml.safe_load(recipe("ci/github.yml"))
    steps = [s["run"] for s in github["jobs"]["package"]["steps"] if "run" in s]
    github_lines = [line for s in steps for line in s.splitlines()]
    assert github_lines == yaml.safe_load(recipe("ci/gitlab.yml"))["operators"]["script"]
    assert [line.split()[1] for line in github_lines if line.startswith("ascend-tune ")] == [
        "search", "search", "emit", "emit"]
    assert all("--locked" in line for line in github_lines if " search " in line)
    assert all("--check" in line for line in github_lines if " emit " in line)


def test_emit_spec_names_a_results_file_tuned_from_another_spec(tmp_path: Path) -> None:
    spec = tmp_path / "add.yaml"
    text = (ROOT / "operator_specs" / "add.yaml").read_text()
    results = ROOT / "examples" / "add" / "results.json"
    out = ["emit", str(results), "-o", str(tmp_path / "out"), "--quiet", "--spec", str(spec)]
    spec.write_text(text + "# a comment changes no meaning\n")
    assert run_cli(out).returncode == 0
    spec.write_text(text.replace("bufferNum: {values: [1, 2]", "bufferNum: {values: [2]"))
    done = run_cli(out)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {results} was tuned from another version of {spec}")
    done = run_cli(["emit", str(results), "-o", str(tmp_path / "out"), "--spec",
                    str(ROOT / "operator_specs" / "mul.yaml")])
    assert done.returncode == 2
    assert "holds tilings of operator 'AddCustom', not MulCustom" in done.stderr


# ---- finding the tool -----------------------------------------------------------------------

MINIMAL = """cmake_minimum_required(VERSION 3.19)
project(probe LANGUAGES NONE)
find_package(AscendTune 0.1 CONFIG REQUIRED)
ascend_tune_tiling(OP AddCustom RESULTS add.results.json OUT ${CMAKE_CURRENT_SOURCE_DIR}/out)
message(STATUS "files: ${AddCustom_TILING_FILES}")
"""


def _minimal(tmp: Path) -> tuple[Path, dict[str, str], list[str]]:
    root = tmp / "probe"
    root.mkdir()
    (root / "CMakeLists.txt").write_text(MINIMAL)
    shutil.copy(ROOT / "examples" / "add" / "results.json", root / "add.results.json")
    env = _env(tmp)
    env["PATH"] = os.environ.get("PATH", "")  # no venv on PATH: the tool must be named
    args = [str(CMAKE), "-S", str(root), "-B", str(root / "build"), "-G", "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={NINJA}", f"-DCMAKE_PREFIX_PATH={ROOT / 'cmake'}"]
    return root, env, args


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_ascend_tune_executable_overrides_the_search(tmp_path: Path) -> None:
    root, env, args = _minimal(tmp_path)
    log = tmp_path / "calls.log"
    wrapper = _script(tmp_path / "my-ascend-tune",
                      f'echo "$@" >> {log}\nexec {sys.executable} -m ascend_tune "$@"')
    env["ASCEND_TUNE_EXECUTABLE"] = str(wrapper)
    out = _run(args, root, env)
    assert f"files: {root}/out/op_host/add_custom_tiling.h;" in out
    calls = log.read_text().splitlines()
    assert calls[0] == "--version" and calls[1].startswith("emit ") and len(calls) == 2


def test_the_project_python_runs_the_tool_and_a_python_without_it_is_named(
        tmp_path: Path) -> None:
    root, env, args = _minimal(tmp_path)
    # A file an earlier emit wrote that these options do not: named, as emit names it.
    stray = root / "out" / "op_host" / "add_custom_old.h"
    stray.parent.mkdir(parents=True)
    stray.write_text("// Generated by ascend-tune 0.0.9 - do not edit\n")
    out = _run([*args, f"-DPython3_EXECUTABLE={sys.executable}"], root, env)
    assert re.search(r"AscendTune: AddCustom: wrote \d+ tiling file\(s\)", out), out
    assert (f"AscendTune: AddCustom: {stray} was generated earlier and is not written by these "
            "options" in " ".join(out.split())), out
    bare = _script(tmp_path / "python3", "exit 1")  # a Python without ascend_tune
    shutil.rmtree(root / "build")
    done = subprocess.run([*args, f"-DPython3_EXECUTABLE={bare}"], env=env, capture_output=True,
                          text=True, check=False)
    if shutil.which("ascend-tune", path=env["PATH"]) is None:
        assert done.returncode != 0
        assert (f"{bare} cannot import ascend_tune; no ascend-tune on PATH"
                in " ".join(done.stderr.split())), done.stderr


def test_cmake_dir_is_the_package_folder_with_its_version() -> None:
    done = subprocess.run([sys.executable, "-m", "ascend_tune", "cmake-dir"],
                          capture_output=True, text=True, check=True)
    folder = Path(done.stdout.strip())
    assert (folder / "AscendTuneConfig.cmake").is_file()
    from ascend_tune import __version__

    probe = folder / "AscendTuneConfigVersion.cmake"
    # The version file reads the package's version (what find_package compares).
    show = subprocess.run([str(CMAKE), "-P", "/dev/stdin"], input=(
        f'set(PACKAGE_FIND_VERSION 0.1)\nset(PACKAGE_FIND_VERSION_MAJOR 0)\n'
        f'include("{probe}")\nmessage(STATUS "v=${{PACKAGE_VERSION}} '
        'ok=${PACKAGE_VERSION_COMPATIBLE}")\n'), capture_output=True, text=True, check=True)
    assert f"v={__version__} ok=TRUE" in show.stdout


@slow
def test_the_wheel_carries_the_cmake_package(tmp_path: Path) -> None:
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("ascend_tune-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"ascend_tune/_data/cmake/AscendTuneConfig.cmake",
            "ascend_tune/_data/cmake/AscendTuneConfigVersion.cmake"} <= names


@slow
@OLD
def test_ci_package_step_builds_from_scratch(old: Tree) -> None:
    out = _run(["bash", "build.sh"], old.root, old.env)
    assert "AscendTune: AddCustom: tiling files up to date" in out
    assert (old.build / "custom_opp.tar").stat().st_size > 0
