"""A web process lets glibc keep two heaps (arenas) for its request threads instead of eight per core: each heap
holds on to freed memory, so fewer heaps is a smaller process (`bench_load` prints the figures).

Each case runs in a fresh interpreter: the limit is process-wide and must be set before the threads allocate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import ctypes, ctypes.util, re, sys, tempfile, threading
from hyperguild.lib.processes import limit_heap_arenas

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
if sys.argv[1] == "limited":
    assert limit_heap_arenas() is True
together = threading.Barrier(7)

def request_thread():
    libc.malloc(1000)  # a thread's first allocation takes an arena of its own while the limit allows
    together.wait()  # all alive at once, so none hands its arena on to another
    together.wait()

threads = [threading.Thread(target=request_thread) for _ in range(6)]
for thread in threads:
    thread.start()
together.wait()
with tempfile.NamedTemporaryFile("r", suffix=".xml") as out:
    handle = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(handle))
    libc.fclose(ctypes.c_void_p(handle))
    heaps = len(re.findall(r'<heap nr="', out.read()))
together.wait()
for thread in threads:
    thread.join()
print(heaps)
"""


def heaps_with_six_request_threads(mode: str) -> int:
    completed = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True,
                               timeout=60)  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    return int(completed.stdout.strip())


def test_by_default_each_request_thread_gets_a_heap_of_its_own():
    assert heaps_with_six_request_threads("default") == 7  # the main heap and one per thread


def test_a_web_process_keeps_two_heaps_however_many_threads_it_runs():
    assert heaps_with_six_request_threads("limited") == 2
