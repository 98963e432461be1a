# SPDX-License-Identifier: MIT
"""What the adapters share: wrapping a framework's methods, and putting them back."""


def wrapped(method):
    """Whether METHOD is one of our wrappers."""
    return hasattr(method, "_proftool_original")


def wrap(cls, name, wrapper, original):
    """Puts WRAPPER in place of CLS.NAME, remembering ORIGINAL for unwrap()."""
    wrapper._proftool_original = original
    setattr(cls, name, wrapper)


def unwrap(cls, names):
    """Puts back the methods NAMES of CLS that wrap() replaced; the others stay."""
    for name in names:
        original = getattr(getattr(cls, name, None), "_proftool_original", None)
        if original is not None:
            setattr(cls, name, original)
