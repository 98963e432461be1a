# SPDX-License-Identifier: MIT
# Records "before-exec", then execs itself with the argument "after", in which it records
# "after-exec": the same pid, two files ("PID-py-0.rgn", "PID-py-1.rgn"). Prints "pid PID"
# from both.
import os
import sys

import proftool

print("pid", os.getpid(), flush=True)
if sys.argv[1:] == ["after"]:
    proftool.mark("after-exec")
else:
    proftool.mark("before-exec")
    os.execv(sys.executable, [sys.executable, __file__, "after"])
