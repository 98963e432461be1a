# SPDX-License-Identifier: MIT
# Every call of the proftool module, on the main thread, in a known order (the events
# tests/python_regions.bats expects are in the comments). Checks on the way what the
# calls return and that exceptions pass through; prints "tid TID" (its native id),
# "enabled True|False", and "ok" at the end.
import threading

import proftool

with proftool.region("outer") as r:             # begin outer
    assert r is not None
    proftool.mark("tick")                       # mark tick
    with proftool.region("inner"):              # begin inner
        pass                                    # end inner
    with proftool.region("inner", domain="io"):  # begin io/inner
        pass                                    # end io/inner
                                                # end outer
proftool.pause()                                # pause
proftool.resume()                               # resume
proftool.begin("manual")                        # begin manual
proftool.end("manual")                          # end manual


@proftool.region("fact")
def fact(n):
    """n!"""
    return 1 if n <= 1 else n * fact(n - 1)


assert fact(3) == 6                             # begin fact x3, end fact x3
assert fact.__name__ == "fact" and fact.__doc__ == "n!"


class Model:
    @proftool.region("Model.forward")
    def forward(self, x):
        return x + 1


assert Model().forward(1) == 2                  # begin, end Model.forward

try:
    with proftool.region("raises"):             # begin raises
        raise ValueError("passes through")      # end raises
except ValueError as e:
    assert str(e) == "passes through"


@proftool.region("boom")
def boom():
    raise KeyError("boom")


try:
    boom()                                      # begin boom, end boom
except KeyError:
    pass
else:
    raise AssertionError("the decorator swallowed an exception")

again = proftool.region("again")
with again:                                     # begin again
    with again:                                 # begin again
        pass                                    # end again
                                                # end again
proftool.mark(42)                               # mark "42" (str of a non-str name)
proftool.mark(["un", "hashable"])               # mark "['un', 'hashable']"
assert proftool.region("outer") is proftool.region("outer") or not proftool.enabled()

print("tid", threading.get_native_id())
print("enabled", proftool.enabled())
print("ok")
