"""Whether a process still runs: how files and folders a killed writer left behind (named by
its pid) are told from those of a live one."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (or cannot be tested: another user's process counts as running,
    so nothing of it is removed)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, OSError):
        return True  # another user's process, or a pid the OS cannot test: keep its file
    return True
