# SPDX-License-Identifier: MIT
"""Stand-in for lightning.pytorch.profilers (the `lightning` package)."""
from standin_profiler import StandInProfiler


class Profiler(StandInProfiler):
    """lightning.pytorch.profilers.Profiler"""
