# SPDX-License-Identifier: MIT
# The adapters of python/proftool against the stand-ins in standins/ (on PYTHONPATH) or,
# for torch-real, Debian's python3-torch. Runs one CASE, checking on the way what the
# adapter must leave as it was; prints "ok" (and for lightning-missing, the ImportError).
# The regions each case records are in its comments, as DOMAIN/NAME.
# Usage: adapters.py CASE
#   lightning          proftool.lightning.Profiler on lightning.pytorch.profilers
#   lightning-pl       ... on pytorch_lightning.profilers (lightning made unimportable)
#   lightning-missing  neither importable: the ImportError
#   mlagents           proftool.mlagents on mlagents_envs.timers, and on a class of its own
#   sample_factory     proftool.sample_factory on sample_factory.utils.timing.Timing
#   torch-standin      proftool.torch_ops on a record_function-like class of its own
#   torch-real         proftool.torch_ops on torch.autograd.profiler.record_function
#   torch-dataloader   a DataLoader with 2 worker processes (forked), each item read in
#                      a region "getitem": prints "worker PID" for each, "parent PID"
#   disabled           every install() when not recording: nothing patched
import os
import pickle
import sys

import proftool


def lightning(expect_base):
    import proftool.lightning

    assert proftool.lightning.Profiler.__mro__[1].__module__.startswith(expect_base)
    p = proftool.lightning.Profiler()
    with p.profile("run_training_epoch"):           # lightning/run_training_epoch
        with p.profile("training_step"):            #   lightning/training_step
            pass
        p.start("optimizer_step")                   #   lightning/optimizer_step
        p.stop("optimizer_step")
    assert p.summary() == ""
    q = pickle.loads(pickle.dumps(proftool.lightning.Profiler(domain="trainer")))
    q.start("fit")                                  # trainer/fit
    q.stop("fit")


def mlagents():
    import proftool.mlagents
    from mlagents_envs import timers

    assert proftool.mlagents.install() is True
    assert proftool.mlagents.install() is False     # wrapped already
    with timers.hierarchical_timer("env_step"):     # mlagents/env_step
        with timers.hierarchical_timer("policy"):   #   mlagents/policy
            pass

    @timers.timed
    def update():
        pass

    update()                                        # mlagents/mlagents.<locals>.update
    node = timers._global_timer_stack.root.children["env_step"]
    assert node.count == 1 and node.children["policy"].count == 1
    assert len(timers._global_timer_stack.stack) == 1
    proftool.mlagents.uninstall()
    assert not hasattr(timers.TimerStack.push, "_proftool_original")
    with timers.hierarchical_timer("after-uninstall"):  # (none)
        pass

    class Stack:
        def __init__(self):
            self.names = []

        def push(self, name):
            self.names.append(name)
            return len(self.names)

        def pop(self):
            self.names.pop()

    assert proftool.mlagents.install(Stack, domain="rl") is True
    s = Stack()
    assert s.push("outer") == 1                     # rl/outer
    assert s.push("inner") == 2                     #   rl/inner
    s.pop()
    s.pop()
    assert s.names == []


def sample_factory():
    import proftool.sample_factory
    from sample_factory.utils.timing import Timing

    assert proftool.sample_factory.install() is True
    assert proftool.sample_factory.install() is False
    t = Timing()
    with t.timeit("rollout"):                       # sample_factory/rollout
        for _ in range(2):
            with t.add_time("env_step"):            #   sample_factory/env_step x2
                pass
        with t.time_avg("inference"):               #   sample_factory/inference
            pass
    assert {"rollout", "env_step", "inference"} <= set(t) and t["env_step"] > 0
    try:
        with t.timeit("fails"):                     # sample_factory/fails
            raise ValueError("passes through")
    except ValueError:
        pass
    ctx = t.timeit("attr")
    assert ctx._key == "attr"                       # the wrapper passes attributes on
    proftool.sample_factory.uninstall()
    with t.timeit("after-uninstall"):               # (none)
        pass


class RecordFunction:
    """Like torch.autograd.profiler.record_function: the name in .name."""

    def __init__(self, name, args=None):
        self.name = name
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        return None


def torch_standin():
    import proftool.torch_ops

    assert proftool.torch_ops.install(RecordFunction) is True
    assert proftool.torch_ops.install(RecordFunction) is False
    with RecordFunction("forward") as rf:            # PyTorch/forward
        assert rf.entered == 1
        with RecordFunction("linear"):              #   PyTorch/linear
            pass
    try:
        with RecordFunction("fails"):               # PyTorch/fails
            raise KeyError("passes through")
    except KeyError:
        pass
    proftool.torch_ops.uninstall(RecordFunction)
    with RecordFunction("after-uninstall"):         # (none)
        pass
    assert proftool.torch_ops.install(RecordFunction, domain="ops") is True
    with RecordFunction("custom"):                  # ops/custom
        pass


def torch_real():
    import torch
    from torch.autograd.profiler import record_function

    import proftool.torch_ops

    assert proftool.torch_ops.install() is True
    with record_function("my-scope"):               # PyTorch/my-scope
        torch.ones(4).sum()

    @record_function("decorated")                   # PyTorch/decorated
    def f():
        return torch.ones(2) * 2

    f()
    p = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=0.1)
    p.sum().backward()
    opt.step()                                      # PyTorch/Optimizer.step#SGD.step
    for _ in torch.utils.data.DataLoader([1, 2, 3]):  # PyTorch/enumerate(DataLoader)#... x4
        pass
    proftool.torch_ops.uninstall()
    with record_function("after-uninstall"):        # (none)
        pass


def torch_dataloader():
    import torch

    import proftool.torch_ops

    assert proftool.torch_ops.install() is True

    class Items(torch.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            with proftool.region("getitem"):        # getitem x4 in each worker
                return os.getpid()

    pids = set()
    # 4 batches, 2 to each worker; PyTorch/enumerate(DataLoader)#... x5 in the parent
    for batch in torch.utils.data.DataLoader(Items(), batch_size=2, num_workers=2):
        pids.update(batch.tolist())
    for pid in sorted(pids):
        print("worker", pid)
    print("parent", os.getpid())


def disabled():
    import proftool.lightning
    import proftool.mlagents
    import proftool.sample_factory
    import proftool.torch_ops
    from mlagents_envs.timers import TimerStack
    from sample_factory.utils.timing import Timing

    assert not proftool.enabled()
    push, timeit = TimerStack.push, Timing.timeit
    assert proftool.mlagents.install() is False
    assert proftool.sample_factory.install() is False
    assert proftool.torch_ops.install(RecordFunction) is False
    assert (TimerStack.push, Timing.timeit) == (push, timeit)
    assert "_proftool_original" not in vars(RecordFunction.__enter__)
    p = proftool.lightning.Profiler()
    with p.profile("step"):
        pass


case = sys.argv[1]
if case == "lightning":
    lightning("lightning.pytorch.profilers")
elif case == "lightning-pl":
    sys.modules["lightning"] = None  # import lightning raises ImportError
    lightning("pytorch_lightning.profilers")
elif case == "lightning-missing":
    try:
        import proftool.lightning  # noqa: F401
    except ImportError as e:
        print(e)
    else:
        raise AssertionError("proftool.lightning imported without Lightning")
elif case == "mlagents":
    mlagents()
elif case == "sample_factory":
    sample_factory()
elif case == "torch-standin":
    torch_standin()
elif case == "torch-real":
    torch_real()
elif case == "torch-dataloader":
    torch_dataloader()
elif case == "disabled":
    disabled()
else:
    sys.exit("adapters.py: unknown case %r" % case)
print("ok")
