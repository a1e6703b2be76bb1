"""Opening a Zenoh session from our settings (``zenoh.Config.insert_json5``, key by key), over
the user's own Zenoh configuration file when ``[zenoh] config`` names one."""

from __future__ import annotations

import json
import os
import re

import zenoh

from gizmo_core import ConfigError
from gizmo_host.zenoh.config import ZenohConfig, session_settings

_RUST_SOURCE = re.compile(r" at \S+\.rs:\d+\.?$")  # where in zenoh's sources the error arose
_TLS_FILES = tuple(
    f"transport/link/tls/{name}"
    for name in (
        "root_ca_certificate",
        "listen_certificate",
        "listen_private_key",
        "connect_certificate",
        "connect_private_key",
    )
)


def error_detail(exc: Exception) -> str:
    """A Zenoh error's message on one line, without where in Zenoh's sources it arose."""
    return _RUST_SOURCE.sub("", " ".join(str(exc).split()))


def load_file(path: str) -> zenoh.Config:
    """A Zenoh configuration file (json5, json or yaml by its suffix), or a one-line
    ``ConfigError`` naming ``zenoh.config``: a file that is missing, does not parse, has a
    key Zenoh does not know, or names a TLS certificate or key that cannot be read (Zenoh
    finds out only when it opens a link: a client then reads as if the router were down, and
    a host publishes nothing for good)."""
    try:
        config: zenoh.Config = zenoh.Config.from_file(path)  # Any in zenoh's stubs on 3.10
    except zenoh.ZError as exc:
        detail = error_detail(exc)
        raise ConfigError(f"zenoh.config: cannot use {path!r}: {detail}", "zenoh.config") from None
    for key in _TLS_FILES:
        named = json.loads(config.get_json(key))
        if isinstance(named, str) and not (os.path.isfile(named) and os.access(named, os.R_OK)):
            raise ConfigError(
                f"zenoh.config: cannot use {path!r}: {key} names {named!r}, not a readable file",
                "zenoh.config",
            )
    return config


def open_settings(pairs: list[tuple[str, str]], base_file: str | None = None) -> zenoh.Session:
    """A session for ``(path, json5)`` pairs (``config.session_settings``) over ``base_file``;
    ``zenoh.ZError`` when a client finds no router, ``ValueError``-like ``ZError`` for a bad
    endpoint, ``ConfigError`` for a file that cannot be used."""
    settings = zenoh.Config() if base_file is None else load_file(base_file)
    for path, value in pairs:
        settings.insert_json5(path, value)
    return zenoh.open(settings)


def open_session(config: ZenohConfig) -> zenoh.Session:
    return open_settings(config.session_settings(), config.config)


# A router's queue towards each peer, in 64 KiB batches (Zenoh's default 2, its maximum 16):
# about 0.6 s of a 40-vehicle fleet's world lines, so a fleet view that stalls for a moment
# (a busy machine) loses nothing; beyond that, congestion control DROP drops rather than
# blocks the router.
ROUTER_TX_BATCHES = 16


def open_router(endpoint: str, config_file: str | None = None) -> zenoh.Session:
    """A session in router mode listening on ``endpoint``, multicast scouting off, over
    ``config_file`` (TLS, access control): what the demo (and the tests) route through, as
    there is no ``zenohd`` on the package index."""
    pairs = session_settings("router", (), (endpoint,), False)
    pairs.append(("transport/link/tx/queue/size/data", str(ROUTER_TX_BATCHES)))
    return open_settings(pairs, config_file)
