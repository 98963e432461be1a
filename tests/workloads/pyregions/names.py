# SPDX-License-Identifier: MIT
# Fills the names area (1 MiB): names of 65535 bytes (the most a name may have; a longer
# one is cut), 17 of them, the 17th finding no room; each is entered and left once, then
# a short name "short" still gets recorded. Prints "ok".
import proftool

for k in range(17):
    name = chr(ord("a") + k) * 70000  # cut to 65535 bytes
    with proftool.region(name):
        pass
with proftool.region("short"):
    pass
print("ok")
