# SPDX-License-Identifier: MIT
# A Python function calling a native hash over a large buffer, again and again:
# hash_buffers spends its time in hashlib.sha256 (OpenSSL's libcrypto on Debian).
# Usage: hashing.py [SCALE]  (SCALE 1: about 1 s of CPU on this kind of machine)
import hashlib
import sys


def hash_buffers(rounds):
    data = bytes(range(256)) * (16 << 12)  # 16 MiB
    h = b""
    for _ in range(rounds):
        h = hashlib.sha256(data).digest()
    return h


scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
hash_buffers(max(1, int(100 * scale)))
