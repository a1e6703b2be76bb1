"""A UDP junk flood, as its own process: ``python -m tests.support.flood PORT RATE SECONDS``.

Per 100 datagrams: 94 random (20-300 bytes), 3 MAVLink frames cut to 10 bytes (claiming the
autopilot's ids 1/1), 2 whole frames from another system (2/1) and 1 of 60 KB. Paced in 5 ms
batches on its own clock; prints the number sent as JSON at the end.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
import time

from pymavlink.dialects.v20 import common as mavlink


def datagrams() -> list[bytes]:
    rng = random.Random(28)
    ours = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    other = mavlink.MAVLink(None, srcSystem=2, srcComponent=1)
    cut = ours.heartbeat_encode(2, 12, 0, 0, 4).pack(ours)[:10]
    whole = other.local_position_ned_encode(1, 9.0, 9.0, 9.0, 0, 0, 0).pack(other)
    pool = [os.urandom(rng.randint(20, 300)) for _ in range(94)]
    pool += [cut] * 3 + [whole] * 2 + [os.urandom(60_000)]
    rng.shuffle(pool)
    return pool


def main(port: int, rate: float, seconds: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    pool = datagrams()
    address = ("127.0.0.1", port)
    batch = max(1, round(rate * 0.005))
    start = time.monotonic()
    sent = errors = 0
    while (elapsed := time.monotonic() - start) < seconds:
        due = round(elapsed * rate)
        while sent + errors < due:
            for _ in range(batch):
                try:
                    sock.sendto(pool[(sent + errors) % len(pool)], address)
                    sent += 1
                except OSError:  # ENOBUFS: the kernel's queue is full
                    errors += 1
        time.sleep(0.005)
    print(json.dumps({"sent": sent, "errors": errors, "seconds": time.monotonic() - start}))


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]))
