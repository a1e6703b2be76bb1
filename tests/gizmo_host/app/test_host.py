"""``Host``: one composition, its outputs and sinks plugged in one place, its timers on the
injected scheduler."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from gizmo_host.app.host import Host, Receivers, ReplayedLink
from gizmo_host.app.host_config import config_from_mapping
from gizmo_host.timing import ManualScheduler


class Lines:
    name = "lines"

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.started = self.closed = False

    def send(self, line: bytes) -> None:
        self.lines.append(json.loads(line))

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.closed = True

    def stats(self) -> dict[str, Any] | None:
        return {"lines": len(self.lines)}


def host_with(output: Any) -> tuple[Host, ManualScheduler, list[Any]]:
    """A host with stats every second, ``output`` and a sink that keeps every message."""
    config = config_from_mapping(
        {"serial": {"path": "/dev/null"}, "publish": {"stdout": False, "stats_interval_s": 1}}
    )
    scheduler = ManualScheduler(0)
    host = Host(config, link=ReplayedLink(), world=Receivers(), outputs=True, scheduler=scheduler)
    seen: list[Any] = []
    host.add_output(output)
    host.add_sink(seen.append)
    return host, scheduler, seen


def test_stats_come_on_the_scheduler_to_every_sink_and_output() -> None:
    output = Lines()
    host, scheduler, seen = host_with(output)

    async def main() -> None:
        await host.start()
        assert output.started
        scheduler.advance(2_500_000_000)
        with pytest.raises(RuntimeError, match="before start"):
            host.add_sink(seen.append)
        await host.stop()

    asyncio.run(main())
    assert output.closed
    assert output.lines[0]["type"] == "version"  # the outputs' first line, not the sinks'
    stats = [line for line in output.lines if line["type"] == "stats"]
    assert [line["host_ns"] for line in stats] == [1_000_000_000, 2_000_000_000]
    sunk = [m for m in seen if isinstance(m, dict)]
    assert [m["host_ns"] for m in sunk] == [1_000_000_000, 2_000_000_000]
    assert not any(isinstance(m, dict) and m["type"] == "version" for m in seen)
    stats = stats[-1]
    assert set(stats["publish"]) == {"lines"}  # one entry per configured output
    assert stats["publish"]["lines"]["lines"] > 2
    assert stats["link"]["state"] == "DOWN" and "world" not in stats
    assert stats["link"]["state"] == "DOWN" and "world" not in stats


def test_without_a_camera_there_is_no_world_and_the_version_says_so() -> None:
    config = config_from_mapping({"serial": {"path": "/dev/null"}})
    host = Host(
        config, link=ReplayedLink(), world=Receivers(), outputs=True, scheduler=ManualScheduler(0)
    )
    assert host.world is None and "world" not in host.version["types"]


class Viewer(Lines):
    """An output that takes the messages through a sink, not lines (the Foxglove view)."""

    name = "viewer"
    takes_lines = False

    def send(self, line: bytes) -> None:
        raise AssertionError("a line for an output that takes none")


def test_an_output_that_takes_no_lines_costs_the_host_no_line() -> None:
    viewer = Viewer()
    host, scheduler, seen = host_with(viewer)

    async def main() -> None:
        await host.start()
        scheduler.advance(1_500_000_000)
        await host.stop()

    asyncio.run(main())
    assert viewer.started and viewer.closed
    stats = [m for m in seen if isinstance(m, dict) and m.get("type") == "stats"]
    assert stats and "viewer" in stats[0]["publish"]
    assert host.publisher.lines <= 1  # the version line at most: no message encoded
