"""A SIGKILLed ``emit`` leaves a temp file beside the header it was writing; the next emit
into that folder removes it (with a note, even with --quiet), and never a live writer's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "examples" / "add" / "results.json"


def _emit(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ascend_tune", "emit", str(RESULTS), "-o",
                           str(out), *extra], cwd=ROOT, capture_output=True, text=True)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temps_of_a_killed_emit_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    out = tmp_path / "AddCustom"
    first = _emit(out, "--quiet")
    assert first.returncode == 0, first.stderr
    header = next(out.rglob("*_tiling.h"))
    dead = header.with_name(f".{header.name}.{_dead_pid()}.k1lled00")
    live = header.with_name(f".{header.name}.{os.getpid()}.wr1t1ng0")  # this test runs
    old = header.with_name(f".{header.name}.n0p1d000")  # a release without the pid: unknown
    for temp in (dead, live, old):
        temp.write_text("half a header")
    second = _emit(out, "--quiet")
    assert second.returncode == 0, second.stderr
    assert second.stderr == f"note: removed {dead}, a temp file left by an emit that was killed\n"
    assert not dead.exists() and live.exists() and old.exists()
    # Nothing else to remove: a third run says nothing.
    live.unlink()
    third = _emit(out, "--quiet")
    assert (third.returncode, third.stderr) == (0, "")


def test_an_emit_leaves_no_temp_files(tmp_path: Path) -> None:
    out = tmp_path / "AddCustom"
    assert _emit(out, "--op-host", "--quiet").returncode == 0
    assert [p for p in out.rglob(".*") if p.is_file()] == []
