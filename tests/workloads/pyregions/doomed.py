# SPDX-License-Identifier: MIT
# Records "before" and opens the region "doomed", prints "ready", then waits to be
# killed inside it (at most a minute).
import sys
import time

import proftool

with proftool.region("before"):
    pass
proftool.begin("doomed")
print("ready", flush=True)
time.sleep(60)
sys.exit("not killed")
