# SPDX-License-Identifier: MIT
# A target for proftool dump: the main thread waits in os.read on FIFO (under serve ->
# wait_for_request) while a thread sleeps in time.sleep (under nap_loop). It creates
# READYFILE (holding its pid) once the thread runs; a line written into FIFO releases it:
# it prints "released" and exits 0.
# Usage: blocked.py READYFILE FIFO
import os
import sys
import threading
import time


def nap_loop(started):
    started.set()
    while True:
        time.sleep(3600)


def wait_for_request(fd):
    return os.read(fd, 1)


def serve(fifo):
    # read and write: opening does not wait for a writer, and reading waits for one
    fd = os.open(fifo, os.O_RDWR)
    try:
        return wait_for_request(fd)
    finally:
        os.close(fd)


ready, fifo = sys.argv[1], sys.argv[2]
started = threading.Event()
threading.Thread(target=nap_loop, args=(started,), daemon=True).start()
started.wait()
with open(ready + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(ready + ".tmp", ready)
if serve(fifo):
    print("released", flush=True)
