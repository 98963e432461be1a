# SPDX-License-Identifier: MIT
"""PyTorch's record_function scopes as proftool regions.

    import proftool.torch_ops
    proftool.torch_ops.install()

From then on every `with torch.autograd.profiler.record_function("name"):` (the same
class as torch.profiler.record_function; also used as a decorator) is also a proftool
region of that name, in the domain "PyTorch" (domain= names another), whether or not
torch's own profiler is running: the scopes a program marks itself, and those PyTorch
marks, such as each optimizer's step ("Optimizer.step#SGD.step") and each DataLoader
batch ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"). It does what
torch's emit_itt would do through proftool's ITT collector, for the builds that lack ITT
(Debian's python3-torch). install() wraps record_function.__enter__ and __exit__;
uninstall() puts them back. (The module is not called "torch", so that it can never be
taken for PyTorch itself.)
"""

import functools

import proftool
from proftool import _patch

DOMAIN = "PyTorch"  # the domain of PyTorch's own ITT ranges


def _record_function():
    try:
        from torch.autograd.profiler import record_function
    except ImportError:
        raise ImportError("proftool.torch_ops needs PyTorch: torch.autograd.profiler "
                          "cannot be imported") from None
    return record_function


def install(record_function=None, domain=DOMAIN):
    """Wraps __enter__ and __exit__ of the class RECORD_FUNCTION (default:
    torch.autograd.profiler.record_function, imported; ImportError without it), whose
    objects have the scope's name in .name, so that each scope is also a region in
    DOMAIN. Returns whether it did: not when proftool is not recording (PyTorch is left
    alone), nor when they are wrapped already."""
    if not proftool.enabled():
        return False
    if record_function is None:
        record_function = _record_function()
    enter, exit_ = record_function.__enter__, record_function.__exit__
    if _patch.wrapped(enter):
        return False

    @functools.wraps(enter)
    def enter_region(self):
        proftool.begin(self.name, domain)
        try:
            return enter(self)
        except BaseException:
            proftool.end(self.name, domain)
            raise

    @functools.wraps(exit_)
    def exit_region(self, exc_type, exc, tb):
        try:
            return exit_(self, exc_type, exc, tb)
        finally:
            proftool.end(self.name, domain)

    _patch.wrap(record_function, "__enter__", enter_region, enter)
    _patch.wrap(record_function, "__exit__", exit_region, exit_)
    return True


def uninstall(record_function=None):
    """Puts back the __enter__ and __exit__ that install() wrapped (same default)."""
    if record_function is None:
        record_function = _record_function()
    _patch.unwrap(record_function, ("__enter__", "__exit__"))
