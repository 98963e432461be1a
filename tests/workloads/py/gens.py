# SPDX-License-Identifier: MIT
# A generator and asyncio coroutines doing the work: consume_gen runs a for loop over
# the generator produce_items, which computes every item; run_tasks (an async def run
# by asyncio.run) awaits crunch_coro, which computes and yields to the event loop now
# and then. About half of the CPU each.
# Usage: gens.py [SCALE]  (SCALE 1: about 1 s of CPU on Debian 12's python3.11)
import asyncio
import sys

UNIT = 1000


def produce_items(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
        if i % 64 == 0:
            yield x


def consume_gen(n):
    total = 0
    for v in produce_items(n):
        total ^= v
    return total


async def crunch_coro(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
        if i % 4096 == 0:
            await asyncio.sleep(0)
    return x


async def run_tasks(rounds, n):
    total = 0
    for _ in range(rounds):
        total ^= await crunch_coro(n)
    return total


scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
consume_gen(int(8000 * UNIT * scale))
asyncio.run(run_tasks(10, int(800 * UNIT * scale)))
