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


def open_router(endpoint: str) -> zenoh.Session:
    """A session in router mode listening on ``endpoint``, multicast scouting off: what the
    demo (and the tests) route through, as there is no ``zenohd`` on the package index."""
    return open_settings(session_settings("router", (), (endpoint,), False))
