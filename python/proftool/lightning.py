# SPDX-License-Identifier: MIT
"""A Lightning profiler whose actions are proftool regions.

    import lightning.pytorch as pl
    import proftool.lightning

    trainer = pl.Trainer(profiler=proftool.lightning.Profiler())

Lightning calls a profiler's start(action_name) and stop(action_name) around each of its
actions ("run_training_epoch", "[Strategy]SingleDeviceStrategy.training_step",
"[Callback]...on_train_batch_end", ...); this one opens and closes the proftool region of
that name, in the domain "lightning" (domain= names another), so `proftool record` counts
and times them and shows the functions sampled inside each. Its summary() is empty:
the report is proftool's.

The base class is lightning.pytorch.profilers.Profiler (the `lightning` package), else
pytorch_lightning.profilers.Profiler (the older `pytorch_lightning` one, 1.8 and later);
without either, importing this module raises ImportError. When proftool is not
recording, start() and stop() do nothing.
"""

import proftool

DOMAIN = "lightning"


def _base():
    """Lightning's Profiler class, from whichever package is installed."""
    try:
        from lightning.pytorch.profilers import Profiler as base
    except ImportError:
        try:
            from pytorch_lightning.profilers import Profiler as base
        except ImportError:
            raise ImportError(
                "proftool.lightning needs Lightning: neither lightning.pytorch.profilers "
                "nor pytorch_lightning.profilers can be imported (pip install lightning)"
            ) from None
    return base


class Profiler(_base()):
    """Lightning's actions as proftool regions of their name, in DOMAIN."""

    def __init__(self, dirpath=None, filename=None, domain=DOMAIN):
        super().__init__(dirpath=dirpath, filename=filename)
        self.domain = domain

    def start(self, action_name):
        proftool.begin(action_name, self.domain)

    def stop(self, action_name):
        proftool.end(action_name, self.domain)

    def summary(self):
        return ""
