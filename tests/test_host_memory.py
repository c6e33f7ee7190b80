"""funcgrad keeps freed host memory in malloc's free lists (cpu/host_memory.py): a step-sized
array comes from the heap, not from a fresh mmap that would page-fault in again every step."""
import ctypes
import os
import platform
import subprocess
import sys

import pytest

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
PROBE = """
import ctypes, numpy as np, funcgrad
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                 "fsmblks", "uordblks", "fordblks", "keepcost")]
mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
before = mallinfo2().hblkhd
a = np.empty(4 << 20, np.uint8)
print(mallinfo2().hblkhd - before, funcgrad.cpu.host_memory.applied)
"""


def _mmapped_bytes_of_a_4mib_array(**env) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, check=True)
    grew, applied = proc.stdout.split()
    return int(grew), applied


@pytest.mark.skipif(not GLIBC or not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc >= 2.33 only")
def test_a_4mib_array_comes_from_the_heap_and_the_opt_out_restores_mmap():
    grew, applied = _mmapped_bytes_of_a_4mib_array()
    assert (grew, applied) == (0, "True")
    grew, applied = _mmapped_bytes_of_a_4mib_array(FUNCGRAD_MALLOC="system")
    assert grew >= 4 << 20 and applied == "False"
