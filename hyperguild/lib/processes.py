"""Process facts read from this machine's kernel (no app knowledge)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os


def pid_alive(pid: int) -> bool:
    """True if `pid` runs on this machine and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
    except OSError:
        return True


def give_back_freed_memory() -> bool:
    """Ask the C allocator to return freed heap pages to the kernel; False where it cannot (not glibc).

    numpy frees a large array back to the allocator, and glibc keeps much of it (it raises its
    mmap threshold after a big free, so later arrays of tens of MiB come from its heaps, which
    shrink only from the top): after a BM25 base is built in memory and swapped for its shared
    memory-mapped copy, the builder stays that much bigger than the processes that only mapped it.
    """
    global _malloc_trim
    if _malloc_trim is None:
        try:
            _malloc_trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if not _malloc_trim:
        return False
    _malloc_trim(0)
    return True


_malloc_trim = None
