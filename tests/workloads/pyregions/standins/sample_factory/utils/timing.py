# SPDX-License-Identifier: MIT
"""Stand-in for sample_factory.utils.timing: a Timing is a dict of times by key, kept by
the context managers its timeit, add_time and time_avg return."""
import time


class TimingContext:
    def __init__(self, timing, key, additive=False):
        self._timing = timing
        self._key = key
        self._additive = additive
        self._start = None

    def __enter__(self):
        self._start = time.time()

    def __exit__(self, exc_type, exc, tb):
        passed = max(time.time() - self._start, 1e-9)
        if self._additive:
            self._timing[self._key] = self._timing.get(self._key, 0.0) + passed
        else:
            self._timing[self._key] = passed


class Timing(dict):
    def timeit(self, key):
        return TimingContext(self, key)

    def add_time(self, key):
        return TimingContext(self, key, additive=True)

    def time_avg(self, key, average=10):
        return TimingContext(self, key)
