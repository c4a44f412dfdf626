"""How the process's allocator treats the arrays a batched search makes and frees."""

from __future__ import annotations

import ctypes
import functools
import platform
import sys

# glibc's malloc options (mallopt): arrays of a batch (a few MB) are taken from and given
# back to the heap instead of mapped afresh, and the heap is not trimmed after each batch.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


@functools.cache
def keep_batch_memory() -> bool:
    """Let the process reuse the memory of one batch's arrays for the next (glibc only).
    By default glibc maps every array of more than 128 kB anew and unmaps it when freed, so
    each batch paid a page fault per 4 kB it touched: 10 s of system time on 100 000 add
    shapes (benchmarks/many_shapes.py). Arrays up to 32 MB now come from the heap, which
    keeps up to 256 MB free at its top. True where the options were set.

    A process-wide setting, so only the command line and the search's own worker processes
    make it (``cli.main``, ``tune.run._worker_init``): a program that imports the API keeps
    its allocator as it configured it."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
                    and libc.mallopt(_M_TRIM_THRESHOLD, 256 << 20))
    except (OSError, AttributeError):
        return False
