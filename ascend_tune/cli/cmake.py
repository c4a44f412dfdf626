"""`ascend-tune cmake-dir`: the folder of the CMake package (docs/build.md)."""

from __future__ import annotations

from ascend_tune.api import build
from ascend_tune.cli import console
from ascend_tune.cli.app import app


@app.command("cmake-dir")
def cmake_dir() -> None:
    """Print the folder of AscendTuneConfig.cmake, for CMAKE_PREFIX_PATH or include()."""
    console.line(str(build.cmake_dir()))
