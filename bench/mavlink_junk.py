"""Benchmark: what one datagram on the MAVLink port costs the event loop, by kind.

Run: ``.venv/bin/python bench/mavlink_junk.py [--n N]``

The host reads the board's UART on the same loop that reads the MAVLink port (issue 28, finding
8), so junk must cost next to nothing. Measured in the same run, per datagram:

* ``stream parse`` (the baseline): pymavlink's robust parser fed the datagram as a byte stream,
  as the session did before (one parser for every sender; a 60 KB datagram cost ~4-6 ms);
* ``session``: ``AutopilotSession.feed(data, now, source)`` as the host runs it now: each
  datagram framed alone by its headers, junk dropped at the first byte that frames nothing,
  then the binding's verdict (a datagram over 2 KB never gets here: the transport drops it).

The verdict is the ratio session / baseline per kind (lower is better) and the session's cost
of a 20,000 datagrams/s mix, as a share of one core.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from pymavlink.dialects.v20 import common as mavlink

from gizmo_host.mavlink.codec import Codec
from gizmo_host.mavlink.session import AutopilotSession
from gizmo_host.timing import ManualScheduler

SOURCE = ("127.0.0.1", 14999)


def kinds() -> dict[str, bytes]:
    rng = random.Random(8)
    ours = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    other = mavlink.MAVLink(None, srcSystem=2, srcComponent=1)
    return {
        "random 160 B": bytes(rng.getrandbits(8) for _ in range(160)),
        "random 2 KB": os.urandom(2048),
        "cut frame 10 B": ours.heartbeat_encode(2, 12, 0, 0, 4).pack(ours)[:10],
        "foreign frame": other.local_position_ned_encode(1, 1, 2, 3, 0, 0, 0).pack(other),
    }


def per_datagram_us(feed, data: bytes, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        feed(data)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    n = parser.parse_args().n
    clock = ManualScheduler()
    session = AutopilotSession(lambda data, to: True, clock)
    baseline = Codec(1, 191)
    mix = 0.0
    print(f"{'datagram':<16} {'stream parse':>14} {'session':>10} {'ratio':>7}")
    for name, data in kinds().items():
        old = per_datagram_us(baseline.decode, data, n)
        new = per_datagram_us(lambda d: session.feed(d, clock.now_ns(), SOURCE), data, n)
        mix += new / 4
        print(f"{name:<16} {old:>11.1f} us {new:>7.1f} us {new / old:>7.2f}")
    print(f"session, 20,000/s of this mix: {mix * 20_000 / 1e4:.1f} % of one core")


if __name__ == "__main__":
    main()
