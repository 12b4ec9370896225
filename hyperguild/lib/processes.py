"""Process facts read from this machine's kernel, and the C allocator's settings for long-lived processes (no app knowledge)."""

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


M_ARENA_MAX = -8  # a mallopt() parameter (glibc's malloc.h)
HEAP_ARENAS = 2


def limit_heap_arenas() -> bool:
    """Let glibc keep HEAP_ARENAS heaps for the process's threads, not 8 per core; False where it cannot.

    A web process lends each request a thread of its own (up to 64 idle ones are kept); each
    thread that allocates gets one of glibc's arenas, and every arena keeps freed memory up to
    its trim threshold — which glibc raises to tens of MiB once a large block is freed, as after
    a BM25 base is built in memory. The interpreter lock runs one thread's Python at a time, so
    two arenas are enough for the threads to rarely wait on one.
    """
    libc = _libc()
    return libc is not None and bool(libc.mallopt(M_ARENA_MAX, HEAP_ARENAS))


def _libc():
    global _libc_handle
    if _libc_handle is None:
        try:
            handle = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc_handle = handle if hasattr(handle, "malloc_trim") and hasattr(handle, "mallopt") else False
        except OSError:
            _libc_handle = False
    return _libc_handle or None


_libc_handle = None


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
