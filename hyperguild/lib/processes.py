"""Process facts read from this machine's kernel, and freed memory given back by the C allocator (no app knowledge)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Literal


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


def _libc() -> ctypes.CDLL | None:
    global _libc_handle
    if _libc_handle is None:
        try:
            handle = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc_handle = handle if hasattr(handle, "malloc_trim") else False
        except OSError:
            _libc_handle = False
    return _libc_handle or None


_libc_handle: ctypes.CDLL | Literal[False] | None = None  # None: not looked up yet; False: no usable libc


def give_back_freed_memory() -> bool:
    """Ask the C allocator to return freed heap pages to the kernel; False where it cannot (not glibc).

    numpy frees a large array back to the allocator, and glibc keeps much of it (it raises its
    mmap threshold after a big free, so later arrays of tens of MiB come from its heaps, which
    shrink only from the top): after a BM25 base is built in memory and swapped for its shared
    memory-mapped copy, the builder stays that much bigger than the processes that only mapped it.
    """
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
