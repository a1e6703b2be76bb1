"""What the host's Zenoh output puts when its turn comes late (red team rt23): never a line or a
ROS 2 snapshot whose validity has run out, ROS 2 samples stamped with the data's own time, and
a session's retries paced by their backoff, not by the lines. Through a real router; the
host's clock is the test's own (a list it sets), so no test waits for a validity to run out."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time

import pytest
import zenoh
import zenoh.ext

from gizmo_host.publish.lines import encode_line
from gizmo_host.rigs.free_ports import free_ports
from gizmo_host.zenoh.config import ZenohConfig
from gizmo_host.zenoh.sink import ZenohOutput, says_hold, valid_until_ns
from tests.support.ros2_snapshot import HOST_NS, WALL_NS, snapshot
from tests.support.zenoh_router import collect, router, session, wait_until

pytestmark = pytest.mark.realtime
MS = 1_000_000


def world(seq: int, valid_until: int, verdict: str = "PROCEED") -> bytes:
    """A PROCEED world line, with a nested ``valid_until_ns`` after the top level's (the one
    that counts)."""
    return encode_line(
        {
            "type": "world",
            "seq": seq,
            "host_ns": valid_until - 200 * MS,
            "valid_until_ns": valid_until,
            "verdict": verdict,
            "targets": [{"key": "0:5:11", "valid_until_ns": 10**18}],
        }
    )


def test_the_validity_and_the_hold_read_are_the_top_levels() -> None:
    assert valid_until_ns(world(1, 123)) == 123
    assert valid_until_ns(b'{"type":"link","state":"UP","host_ns":5}\n') is None
    proceed = world(1, 123)
    assert not says_hold(proceed)
    assert says_hold(world(1, 123, "HOLD"))
    target_holds = proceed.replace(b'"key":"0:5:11"', b'"key":"0:5:11","verdict":"HOLD"')
    assert not says_hold(target_holds)
    assert says_hold(b'{"type":"verdict","decision":"HOLD","reasons":[]}\n')
    assert not says_hold(b'{"type":"verdict","decision":"PROCEED","reasons":[]}\n')
    assert not says_hold(b'{"type":"result","verdict":"HOLD"}\n')


def test_lines_and_snapshots_past_their_turn_are_not_put_and_are_counted() -> None:
    """Lines queued while the session was not open (handed before it starts, the router up
    all along): those whose validity ran out while they waited, and those that waited longer
    than ``MAX_WAIT_NS``, are not put; nor is one whose validity had run out before it was
    handed (red team rt26: a result line of a frame 5 s old read as just made); a HOLD is put
    whatever its validity (rt27: one dropped left an older PROCEED the last word); the others
    are, in order; a ROS 2 snapshot likewise, and the one put
    carries its own wall time as its source timestamp."""
    t0 = HOST_NS + 100 * MS
    now = [t0]  # the host's clock

    async def main(endpoint: str) -> None:
        viewer = session("client", connect=endpoint)
        got, subscriber = collect(viewer)
        config = ZenohConfig(
            enabled=True, mode="client", connect=(endpoint,), vehicle="uav1", ros2="rmw_zenoh"
        )
        output = ZenohOutput(config, clock_ns=lambda: now[0])
        output.send(world(1, t0 + 50 * MS))  # its validity runs out while it waits
        output.on_message(snapshot())  # valid until t0 + 100 ms: runs out too
        output.send(world(2, t0 + 10_000 * MS))  # waits 250 ms: too long
        output.send(world(3, t0, "HOLD"))  # valid for no time; waits 250 ms
        now[0] = t0 + 150 * MS
        output.send(b'{"type":"link","state":"UP","host_ns":1}\n')  # no validity: put
        output.send(world(4, t0 + 450 * MS))
        output.send(world(8, t0 + 165 * MS, "HOLD"))  # runs out while it waits: still put
        now[0] = t0 + 250 * MS
        await output.start()
        try:
            wait_until(lambda: output.connected)
            output.send(world(6, now[0] - 5_000 * MS))  # expired before it was handed (rt26)
            output.send(world(7, now[0] - 1, "HOLD"))  # a HOLD valid for no time: put
            output.send(world(5, now[0] + 200 * MS))
            output.on_message(dataclasses.replace(snapshot(), valid_until_ns=now[0] + 200 * MS))
            wait_until(lambda: sum(k.endswith("/world") for k, _, _ in got) >= 4)
            wait_until(lambda: output.stats()["ros2_samples"] >= 2)
            wait_until(lambda: len(got) >= 7)
        finally:
            await output.close()
            subscriber.undeclare()
            viewer.close()
        seqs = [json.loads(p)["seq"] for k, p, _ in got if k == "gizmo/uav1/world"]
        assert seqs == [4, 8, 7, 5]  # the HOLD after the PROCEED revokes it
        assert any(k == "gizmo/uav1/link" for k, _, _ in got)
        stats = output.stats()
        assert stats["expired"] == 5 and stats["sent"] == 5 and stats["ros2_samples"] == 2
        detections = [a for k, _, a in got if "/detections/" in k]
        assert len(detections) == 1  # the expired snapshot's array never went out
        ext = zenoh.ext
        _, source_ns, _ = ext.z_deserialize(
            tuple[ext.Int64, ext.Int64, list[ext.UInt8]], zenoh.ZBytes(detections[0])
        )
        assert source_ns == WALL_NS  # the snapshot's own time, not the put's

    with router() as endpoint:
        asyncio.run(main(endpoint))


def verdict(decision: str, host_ns: int, valid_until: int) -> bytes:
    return encode_line(
        {"type": "verdict", "decision": decision, "reasons": [], "host_ns": host_ns,
         "valid_until_ns": valid_until, "target": None}
    )  # fmt: skip


def test_a_verdict_hold_is_put_however_long_it_waited() -> None:
    """Red team rt60: a PROCEED put, then the thread stalled while the host handed the HOLD
    that revokes it; at its turn, 210 ms later, the HOLD had waited past ``MAX_WAIT_NS`` and
    was dropped, and the subscriber's last word was the PROCEED, valid for 760 ms more at
    ``ttl_ms`` 1000 (the next HOLD came a second later). A ``verdict`` HOLD has no position to
    read as fresh: it is put; a PROCEED that waited as long is not, nor a world HOLD."""
    t0 = HOST_NS
    now = [t0]

    async def main(endpoint: str) -> None:
        viewer = session("client", connect=endpoint)
        got, subscriber = collect(viewer)
        config = ZenohConfig(enabled=True, mode="client", connect=(endpoint,), vehicle="uav1")
        output = ZenohOutput(config, clock_ns=lambda: now[0])
        output.send(verdict("PROCEED", t0, t0 + 1_000 * MS))  # waits 250 ms: too long
        output.send(verdict("HOLD", t0 + 20 * MS, t0 + 20 * MS))  # waits 230 ms: still put
        output.send(world(1, t0 + 1_000 * MS, "HOLD"))  # waits 250 ms: a world line, not put
        now[0] = t0 + 250 * MS
        await output.start()
        try:
            wait_until(lambda: output.connected)
            output.send(b'{"type":"link","state":"UP","host_ns":1}\n')  # the last, to wait for
            wait_until(lambda: any(k.endswith("/link") for k, _, _ in got))
        finally:
            await output.close()
            subscriber.undeclare()
            viewer.close()
        verdicts = [json.loads(p)["decision"] for k, p, _ in got if k == "gizmo/uav1/verdict"]
        assert verdicts == ["HOLD"]
        assert not any(k.endswith("/world") for k, _, _ in got)
        assert output.stats()["expired"] == 2

    with router() as endpoint:
        asyncio.run(main(endpoint))


def test_a_router_that_is_not_there_is_retried_at_the_backoff_whatever_the_lines() -> None:
    """Before: every line sent woke the retry at once (150 attempts and 150 warnings in 3 s
    at 50 lines/s). Backoff 0.2 s doubling: attempts at about 0, 0.2, 0.6 and 1.4 s."""
    port = free_ports(1, "tcp")[0]
    config = ZenohConfig(
        enabled=True, mode="client", connect=(f"tcp/127.0.0.1:{port}",), vehicle="v"
    )
    output = ZenohOutput(config)

    async def main() -> None:
        await output.start()
        started = time.monotonic()
        try:
            while time.monotonic() - started < 1.0:  # 100 lines a second for 1 s
                output.send(world(1, time.monotonic_ns() + 10**9))
                await asyncio.sleep(0.01)
        finally:
            await output.close()

    asyncio.run(main())
    assert 2 <= output.stats()["open_failures"] <= 4, output.stats()
    assert not output.connected
