# SPDX-License-Identifier: MIT
"""Sample Factory's timings as proftool regions.

    import proftool.sample_factory
    proftool.sample_factory.install()

From then on every `with timing.timeit("forward"):`, `with timing.add_time("env_step"):`
and `with timing.time_avg("update"):` on a sample_factory.utils.timing.Timing is also a
proftool region of the key's name, in the domain "sample_factory" (domain= names
another). install() wraps those three methods of Timing so that the context manager
they return runs inside the region; uninstall() puts them back.
"""

import functools

import proftool
from proftool import _patch

DOMAIN = "sample_factory"
METHODS = ("timeit", "add_time", "time_avg")


def _timing():
    try:
        from sample_factory.utils.timing import Timing
    except ImportError:
        raise ImportError("proftool.sample_factory needs Sample Factory: "
                          "sample_factory.utils.timing cannot be imported "
                          "(pip install sample-factory)") from None
    return Timing


class _Scope:
    """The context manager a Timing method returned, inside a proftool region: the region
    opens before it is entered and closes after it is left. Other attributes are its."""

    __slots__ = ("_inner", "_region")

    def __init__(self, inner, region):
        self._inner = inner
        self._region = region

    def __enter__(self):
        self._region.__enter__()
        try:
            return self._inner.__enter__()
        except BaseException:
            self._region.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            return self._inner.__exit__(exc_type, exc, tb)
        finally:
            self._region.__exit__(exc_type, exc, tb)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _wrap(method, domain):
    @functools.wraps(method)
    def in_region(self, key, *args, **kwargs):
        return _Scope(method(self, key, *args, **kwargs), proftool.region(key, domain))

    return in_region


def install(timing=None, domain=DOMAIN):
    """Wraps timeit, add_time and time_avg (those it has) of the class TIMING (default:
    sample_factory.utils.timing.Timing, imported; ImportError without it) so that each
    timing is also a region in DOMAIN. Returns whether it did: not when proftool is
    not recording (Timing is left alone), nor when they are wrapped already."""
    if not proftool.enabled():
        return False
    if timing is None:
        timing = _timing()
    wrapped = False
    for name in METHODS:
        method = getattr(timing, name, None)
        if method is not None and not _patch.wrapped(method):
            _patch.wrap(timing, name, _wrap(method, domain), method)
            wrapped = True
    return wrapped


def uninstall(timing=None):
    """Puts back the methods that install() wrapped in TIMING (same default)."""
    if timing is None:
        timing = _timing()
    _patch.unwrap(timing, METHODS)
