"""Opening a Zenoh session from our settings (``zenoh.Config.insert_json5``, key by key)."""

from __future__ import annotations

import zenoh

from gizmo_host.zenoh.config import ZenohConfig, session_settings


def open_settings(pairs: list[tuple[str, str]]) -> zenoh.Session:
    """A session for ``(path, json5)`` pairs (``config.session_settings``); ``zenoh.ZError``
    when a client finds no router, ``ValueError``-like ``ZError`` for a bad endpoint."""
    settings = zenoh.Config()
    for path, value in pairs:
        settings.insert_json5(path, value)
    return zenoh.open(settings)


def open_session(config: ZenohConfig) -> zenoh.Session:
    return open_settings(config.session_settings())


# A router's queue towards each peer, in 64 KiB batches (Zenoh's default 2, its maximum 16):
# about 0.6 s of a 40-vehicle fleet's world lines, so a fleet view that stalls for a moment
# (a busy machine) loses nothing; beyond that, congestion control DROP drops rather than
# blocks the router.
ROUTER_TX_BATCHES = 16


def open_router(endpoint: str) -> zenoh.Session:
    """A session in router mode listening on ``endpoint``, multicast scouting off: what the
    demo (and the tests) route through, as there is no ``zenohd`` on the package index."""
    pairs = session_settings("router", (), (endpoint,), False)
    pairs.append(("transport/link/tx/queue/size/data", str(ROUTER_TX_BATCHES)))
    return open_settings(pairs)
