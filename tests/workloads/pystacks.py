# SPDX-License-Identifier: MIT
# Python threads parked at known lines for tests/python_reader.bats: nested
# functions and a method, a 900-deep recursion, a generator, a coroutine and
# a Python -> C -> Python callback. The lines marked "# @name" are what the
# test expects the reader to report; each parks in time.sleep, a C call, so
# the Python line stays put. Prints "ready" when every thread is parked.
import asyncio
import sys
import threading
import time

FOREVER = 3600
started = threading.Semaphore(0)


class Klass:
    def method(self, depth):
        return nested(depth)  # @method


def nested(depth):
    def inner():
        time.sleep(FOREVER)  # @inner
    return inner()  # @nested


def outer():
    return Klass().method(3)  # @outer


def recurse(n):
    if n == 0:
        started.release(); time.sleep(FOREVER)  # @recurse-leaf
    return recurse(n - 1)  # @recurse


def gen():
    yield 1
    started.release(); time.sleep(FOREVER)  # @gen
    yield 2


def consume_gen():
    for _ in gen():  # @consume
        pass


async def coro_leaf():
    started.release(); time.sleep(FOREVER)  # @coro-leaf


async def coro():
    await coro_leaf()  # @coro


def key(x):
    if x == 2:
        started.release(); time.sleep(FOREVER)  # @key
    return x


def sorter():
    return sorted([3, 2, 1], key=key)  # @sorter


def spin():
    started.release()
    while True:
        pass  # @spin


targets = [(recurse, (900,)), (consume_gen, ()), (asyncio.run, (coro(),)), (sorter, ())]
if len(sys.argv) > 1 and sys.argv[1] == "spin":
    targets.append((spin, ()))
for target, args in targets:
    threading.Thread(target=target, args=args, daemon=True).start()
for _ in targets:
    started.acquire()
print("ready", flush=True)
outer()  # @main
