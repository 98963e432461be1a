# SPDX-License-Identifier: MIT
"""Stand-in for pytorch_lightning.profilers (the older `pytorch_lightning` package)."""
from standin_profiler import StandInProfiler


class Profiler(StandInProfiler):
    """pytorch_lightning.profilers.Profiler"""
