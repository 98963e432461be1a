# SPDX-License-Identifier: MIT
# Fills the names area (1 MiB): 17 names of 70000 letters, each cut to 65535 bytes (the
# most a name may have), so 65544 bytes an entry: 15 fit, the 16th and 17th find no room.
# Each is entered and left once; then a short name, "short", still fits. Prints "ok".
import proftool

for k in range(17):
    name = chr(ord("a") + k) * 70000  # cut to 65535 bytes
    with proftool.region(name):
        pass
with proftool.region("short"):
    pass
print("ok")
