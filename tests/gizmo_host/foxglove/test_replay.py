"""A capture in Foxglove without a live host: ``replay --offline --foxglove-out`` and
``replay --foxglove`` on a golden capture (``tests/captures/clean.mcap``: the board and
CopterSim with the world model), checked as a viewer would read them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from gizmo_host.app.foxglove_replay import replay_to_mcap, serve_capture
from gizmo_host.capture.reader import CaptureReader
from gizmo_host.foxglove.layout import layout, named_topics
from tests.support.foxglove_checks import (
    SCHEMAS,
    arrived_whole,
    check_capture,
    check_decoded,
    check_scene_against_world,
)
from tests.support.foxglove_client import connect

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "clean.mcap"


def test_a_capture_recomputed_into_a_new_mcap_opens_with_the_layout(tmp_path: Path) -> None:
    out = tmp_path / "view.mcap"
    lines = tmp_path / "lines.jsonl"
    with open(lines, "wb") as stream:
        assert replay_to_mcap(CaptureReader(str(CAPTURE)), str(out), stream) == 0
    counts = check_capture(str(out), named_topics(layout()))
    world_lines = [x for x in lines.read_bytes().splitlines() if b'"type":"world"' in x]
    assert counts["/gizmo/world"] == len(world_lines) > 0  # the same lines as --offline prints


@pytest.mark.realtime
def test_a_capture_served_live_at_its_pace() -> None:
    topics = ["/gizmo/tf", "/gizmo/scene", "/gizmo/world", "/gizmo/result"]
    received = {}

    async def main() -> None:
        clients: list[asyncio.Task[None]] = []

        async def view(url: str) -> None:
            async with connect(url) as viewer:
                await viewer.read_advertisements(set(SCHEMAS), timeout_s=2.0)
                await viewer.subscribe(topics)
                try:
                    while True:
                        await viewer.read_one(2.0)
                except (AssertionError, ConnectionClosed):  # the replay is over
                    pass
                received.update(viewer.messages)
                received["decode"] = viewer.decode  # type: ignore[assignment]

        def serving(server) -> None:
            clients.append(asyncio.create_task(view(server.address)))

        await serve_capture(CaptureReader(str(CAPTURE)), "127.0.0.1:0", 2.0, serving)
        await asyncio.gather(*clients)

    asyncio.run(main())
    decode = received.pop("decode")
    for topic in topics:
        assert received[topic], topic
        check_decoded(topic, decode(topic, received[topic][0]))  # type: ignore[operator]
    worlds = [(r.log_ns, decode("/gizmo/world", r)) for r in received["/gizmo/world"]]  # type: ignore[operator]
    scenes = [(r.log_ns, decode("/gizmo/scene", r)) for r in received["/gizmo/scene"]]  # type: ignore[operator]
    points, _ = check_scene_against_world(*arrived_whole(worlds, scenes))
    assert points > 0
