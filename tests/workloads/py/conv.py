# SPDX-License-Identifier: MIT
# A small convolutional training loop on one thread, the shape of a PyTorch CPU job: two
# Conv2d layers, forward and backward. oneDNN (through libtorch) runs the convolutions in
# kernels it generates at run time (JIT code without unwind information).
# Usage: conv.py [SCALE]  (SCALE 1: about 1 s of CPU on this kind of machine)
import sys

import torch
from torch import nn


def train_step(model, x):
    loss = model(x).square().mean()
    loss.backward()
    return loss.item()


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(16, 64, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(64, 64, 3, padding=1))
    x = torch.randn(8, 16, 32, 32)
    for _ in range(max(1, int(30 * scale))):
        model.zero_grad()
        train_step(model, x)


main()
