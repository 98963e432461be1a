# SPDX-License-Identifier: MIT
"""ML-Agents' hierarchical timers as proftool regions.

    import proftool.mlagents
    proftool.mlagents.install()

From then on every timer of mlagents_envs.timers -- `with hierarchical_timer("env_step"):`,
functions decorated @timed, anything that calls TimerStack.push(name) and pop() -- is
also a proftool region of the timer's name, in the domain "mlagents" (domain= names
another); nested timers are nested regions. install() wraps TimerStack.push and
TimerStack.pop; uninstall() puts them back.
"""

import functools
import threading

import proftool
from proftool import _patch

DOMAIN = "mlagents"

# Per thread, the names of the timers pushed and not yet popped: pop() takes no name.
_pushed = threading.local()


def _timer_stack():
    try:
        from mlagents_envs.timers import TimerStack
    except ImportError:
        raise ImportError("proftool.mlagents needs ML-Agents: mlagents_envs.timers cannot "
                          "be imported (pip install mlagents-envs)") from None
    return TimerStack


def _names():
    try:
        return _pushed.names
    except AttributeError:
        _pushed.names = []
        return _pushed.names


def install(timer_stack=None, domain=DOMAIN):
    """Wraps the push and pop methods of TIMER_STACK (default: mlagents_envs.timers.
    TimerStack, imported; ImportError without it) so that each timer is also a region
    in DOMAIN. Returns whether it did: not when proftool is not recording (the timers
    are left alone), nor when they are wrapped already."""
    if not proftool.enabled():
        return False
    if timer_stack is None:
        timer_stack = _timer_stack()
    push, pop = timer_stack.push, timer_stack.pop
    if _patch.wrapped(push):
        return False

    @functools.wraps(push)
    def push_region(self, name):
        proftool.begin(name, domain)
        _names().append(name)
        return push(self, name)

    @functools.wraps(pop)
    def pop_region(self):
        result = pop(self)
        names = _names()
        if names:  # else pushed before install()
            proftool.end(names.pop(), domain)
        return result

    _patch.wrap(timer_stack, "push", push_region, push)
    _patch.wrap(timer_stack, "pop", pop_region, pop)
    return True


def uninstall(timer_stack=None):
    """Puts back the push and pop that install() wrapped in TIMER_STACK (same default)."""
    if timer_stack is None:
        timer_stack = _timer_stack()
    _patch.unwrap(timer_stack, ("push", "pop"))
