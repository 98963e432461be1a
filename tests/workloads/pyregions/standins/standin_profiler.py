# SPDX-License-Identifier: MIT
"""The part of Lightning's Profiler base class that proftool.lightning relies on: an
abstract start/stop, summary(), and profile(), which calls start and stop around a block."""
from abc import ABC, abstractmethod
from contextlib import contextmanager


class StandInProfiler(ABC):
    def __init__(self, dirpath=None, filename=None):
        self.dirpath = dirpath
        self.filename = filename

    @abstractmethod
    def start(self, action_name):
        """Starts timing ACTION_NAME."""

    @abstractmethod
    def stop(self, action_name):
        """Stops timing ACTION_NAME."""

    def summary(self):
        return ""

    @contextmanager
    def profile(self, action_name):
        try:
            self.start(action_name)
            yield action_name
        finally:
            self.stop(action_name)
