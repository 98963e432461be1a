# SPDX-License-Identifier: MIT
# A thread that never ran Python in a Python process: libcspin.so (loaded with ctypes)
# starts a pthread spinning in the C function spin_in_c while the main thread runs the
# Python function python_side. Prints "c TID" and "python TID" (native thread ids).
# Usage: cthread.py LIBCSPIN [SCALE]  (SCALE 1: about 0.5 s of CPU in each thread)
import ctypes
import sys
import threading

UNIT = 1000


def python_side(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


lib = ctypes.CDLL(sys.argv[1])
lib.cspin_start.argtypes = [ctypes.c_uint64]
lib.cspin_start.restype = ctypes.c_long
scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
tid = lib.cspin_start(int(300000 * UNIT * scale))
if tid < 0:
    sys.exit("cspin_start failed")
python_side(int(15000 * UNIT * scale))
if lib.cspin_join() != 0:
    sys.exit("cspin_join failed")
print("c", tid)
print("python", threading.get_native_id())
