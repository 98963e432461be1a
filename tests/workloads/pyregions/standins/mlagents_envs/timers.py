# SPDX-License-Identifier: MIT
"""Stand-in for mlagents_envs.timers: a tree of timers kept by a TimerStack, whose
push(name) enters a child timer and pop() leaves it; hierarchical_timer and @timed use
the global stack."""
import time
from contextlib import contextmanager


class TimerNode:
    __slots__ = ("children", "total", "count")

    def __init__(self):
        self.children = {}
        self.total = 0.0
        self.count = 0


class TimerStack:
    __slots__ = ("root", "stack")

    def __init__(self):
        self.root = TimerNode()
        self.stack = [self.root]

    def push(self, name):
        node = self.stack[-1].children.setdefault(name, TimerNode())
        self.stack.append(node)
        return node

    def pop(self):
        self.stack.pop()


_global_timer_stack = TimerStack()


@contextmanager
def hierarchical_timer(name, timer_stack=None):
    timer_stack = timer_stack or _global_timer_stack
    node = timer_stack.push(name)
    start = time.perf_counter()
    try:
        yield node
    finally:
        node.total += time.perf_counter() - start
        node.count += 1
        timer_stack.pop()


def timed(func):
    def wrapped(*args, **kwargs):
        with hierarchical_timer(func.__qualname__):
            return func(*args, **kwargs)

    return wrapped
