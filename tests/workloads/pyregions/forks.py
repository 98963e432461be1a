# SPDX-License-Identifier: MIT
# os.fork: the parent records "parent-before", then, inside the region "around", forks a
# child that records "child" 3 times and forks a grandchild (from a process with a file
# of its own now) that marks "grandchild"; then the parent records "parent-after".
# The child and the grandchild leave "around" open (it was open in the parent when they
# were forked): the child's file holds no "around" at all. Prints "parent PID", "child
# PID", "grandchild PID".
import os

import proftool


def wait(pid):
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise SystemExit("child %d: status %#x" % (pid, status))


with proftool.region("parent-before"):
    pass
with proftool.region("around"):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        for _ in range(3):
            with proftool.region("child"):
                pass
        # a grandchild, forked by a process whose file exists
        gpid = os.fork()
        if gpid == 0:
            proftool.mark("grandchild")
            os._exit(0)
        wait(gpid)
        os.write(w, b"%d\n" % gpid)
        os._exit(0)
    os.close(w)
    wait(pid)
    gpid = int(os.read(r, 100))
with proftool.region("parent-after"):
    pass
print("parent", os.getpid())
print("child", pid)
print("grandchild", gpid)
