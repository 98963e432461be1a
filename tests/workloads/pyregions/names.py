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
# the names that found no room are not kept either: a program making up names without
# end does not grow the table without end
from proftool import _writer  # noqa: E402

assert len(_writer._regions) == 16, len(_writer._regions)
print("ok")
