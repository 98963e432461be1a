# SPDX-License-Identifier: MIT
# A small PyTorch CPU training job, the shape our users run: a model, an
# optimizer, and a DataLoader whose worker processes (forked from a parent
# with libtorch mapped) build every batch. Used by make bench and the
# closing figures of the Python and real-jobs issues.
#   python3 bench/torchjob.py [--workers N] [--epochs N] [--batches N] [--regions]
# --regions marks epochs, steps and their phases, and each item a worker loads, as named
# regions (the proftool module from python/: PYTHONPATH=python).
import argparse
import contextlib
import math

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


def no_region(_name):
    return contextlib.nullcontext()


region = no_region


class Synthetic(Dataset):
    """Batches computed in the worker: some Python, some tensor work."""

    def __init__(self, n, dim):
        self.n, self.dim = n, dim

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with region("load_item"):
            return self.item(i)

    def item(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(self.dim, generator=g)
        # a little pure-Python feature engineering, as real loaders do
        s = 0.0
        for k in range(200):
            s += math.sin(k * 0.01 + i)
        x[0] = s
        y = int(x.sum() > 0)
        return x, y


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, 256),
                                  nn.ReLU(), nn.Linear(256, 2))

    def forward(self, x):
        return self.body(x)


def train_step(model, opt, loss_fn, x, y):
    with region("step"):
        opt.zero_grad()
        with region("forward"):
            loss = loss_fn(model(x), y)
        with region("backward"):
            loss.backward()
        with region("optimizer"):
            opt.step()
        return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--regions", action="store_true")
    a = ap.parse_args()
    if a.regions:
        import proftool

        global region
        region = proftool.region
    torch.set_num_threads(1)
    data = Synthetic(a.batches * 64, a.dim)
    loader = DataLoader(data, batch_size=64, num_workers=a.workers, shuffle=True)
    model = Net(a.dim)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(a.epochs):
        total = 0.0
        with region("epoch"):
            batches = iter(loader)
            while True:
                with region("next_batch"):
                    batch = next(batches, None)
                if batch is None:
                    break
                total += train_step(model, opt, loss_fn, *batch)
        print(f"epoch {epoch}: loss {total / a.batches:.4f}", flush=True)


if __name__ == "__main__":
    main()
