"""A Zenoh router for the tests (``open_router``: a zenoh-python session in router mode on a
loopback port, multicast scouting off; no zenohd on the package index), and client sessions."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import zenoh

from gizmo_host.rigs.free_ports import free_ports
from gizmo_host.zenoh.session import open_router

DEADLINE_S = 10.0


def session(
    mode: str,
    *,
    listen: str | None = None,
    connect: str | None = None,
    config_file: str | None = None,
) -> zenoh.Session:
    """A session of ``mode``, multicast scouting off, over ``config_file`` if given."""
    config = zenoh.Config() if config_file is None else zenoh.Config.from_file(config_file)
    config.insert_json5("mode", json.dumps(mode))
    config.insert_json5("scouting/multicast/enabled", "false")
    if listen:
        config.insert_json5("listen/endpoints", json.dumps([listen]))
    if connect:
        config.insert_json5("connect/endpoints", json.dumps([connect]))
    return zenoh.open(config)


@contextlib.contextmanager
def router(protocol: str = "tcp", config_file: str | None = None) -> Iterator[str]:
    """A router (over ``config_file``: TLS, access control); yields its endpoint."""
    endpoint = f"{protocol}/127.0.0.1:{free_ports(1, 'tcp')[0]}"
    routing = open_router(endpoint, config_file)
    try:
        yield endpoint
    finally:
        routing.close()


def wait_until(predicate: Callable[[], Any], timeout_s: float = DEADLINE_S) -> Any:
    """``predicate()``'s first true value, polled until a deadline (an event on another
    thread or process: no callback to await)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def collect(viewer: zenoh.Session) -> tuple[list[tuple[str, bytes, bytes | None]], Any]:
    """Every sample ``viewer`` hears, as (key, payload, attachment), appended by Zenoh's
    thread; and the subscriber, to undeclare."""
    got: list[tuple[str, bytes, bytes | None]] = []
    lock = threading.Lock()

    def keep(sample: zenoh.Sample) -> None:
        attachment = sample.attachment
        with lock:
            got.append(
                (
                    str(sample.key_expr),
                    sample.payload.to_bytes(),
                    None if attachment is None else attachment.to_bytes(),
                )
            )

    return got, viewer.declare_subscriber("**", keep)
