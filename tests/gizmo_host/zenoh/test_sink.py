"""``ZenohOutput``: lines to their type's key, a bounded queue, the queryable, and ROS 2
messages with rmw_zenoh's keys and attachment decoded from the bytes on the wire."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
import zenoh
import zenoh.ext
from rosbags.typesys import Stores, get_typestore

from fusion import WorldSnapshot
from gizmo_core import ConfigError
from gizmo_host.app.host_config import config_from_mapping
from gizmo_host.publish.lines import encode_line
from gizmo_host.rigs.free_ports import free_ports
from gizmo_host.schemas import load_schema
from gizmo_host.zenoh.config import MESSAGE_TYPES, ZenohConfig, vehicle_of
from gizmo_host.zenoh.sink import ZenohOutput, line_type
from tests.support.ros2_snapshot import HOST_NS, snapshot, vision_store
from tests.support.schemas import validate_schema
from tests.support.zenoh_router import collect, router, session, wait_until

DETECTIONS_HASH = "RIHS01_793f5eab9595ac1c0da07873cc859db42eae51f0ee76056db8562515d830e018"


def test_line_type_reads_the_start_or_parses() -> None:
    assert line_type(b'{"type":"world","seq":1}\n') == "world"
    assert line_type(b'{ "seq": 1, "type": "stats" }\n') == "stats"
    assert line_type(b"[1]\n") is None and line_type(b"nonsense") is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"mode": "router"}, "zenoh.mode: expected 'peer' or 'client'"),
        ({"connect": ["127.0.0.1:7447"]}, "zenoh.connect: expected endpoints"),
        ({"listen": ["foo/bar:1"]}, "zenoh.listen: expected endpoints"),
        ({"connect": "tcp/a:1"}, None),
        ({"mode": "client"}, "zenoh.connect: expected a router's endpoint"),
        ({"vehicle": "a/b"}, "zenoh.vehicle: expected a name without"),
        ({"ros2": "ros1"}, "zenoh.ros2: expected 'off' or 'bridge' or 'rmw_zenoh'"),
        ({"ros2_domain": 233}, "zenoh.ros2_domain: expected an integer from 0 to 232"),
        ({"config": 7}, "zenoh.config: expected a string"),
        ({"config": ""}, "zenoh.config: expected a Zenoh configuration file's path"),
        ({"max_line_bytes": 100}, "zenoh.max_line_bytes: expected a number of bytes from 1024"),
    ],
)
def test_zenoh_settings_are_checked_with_one_line_naming_the_key(table, message) -> None:
    if message is None:
        assert config_from_mapping({"zenoh": table}).zenoh.connect == ("tcp/a:1",)
        return
    with pytest.raises(ConfigError) as exc:
        config_from_mapping({"zenoh": table})
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


def test_a_zenoh_config_file_is_read_at_start_and_a_bad_one_is_one_line(tmp_path) -> None:
    bad = tmp_path / "zenoh.json5"
    bad.write_text("{ transport: { link: { tls: { no_such_key: 1 } } } }")
    for path, detail in (("/nonexistent.json5", "No such file"), (str(bad), "no_such_key")):
        with pytest.raises(ConfigError) as exc:
            ZenohOutput(ZenohConfig(enabled=True, vehicle="v", config=path))
        message = str(exc.value)
        assert message.startswith(f"zenoh.config: cannot use {path!r}: ") and detail in message
        assert "\n" not in message and ".rs:" not in message


def test_a_line_over_the_size_limit_is_not_published_and_is_counted() -> None:
    output = ZenohOutput(ZenohConfig(enabled=True, vehicle="v", max_line_bytes=1024))
    output.send(encode_line({"type": "world", "seq": 1, "pad": "x" * 1000}))
    output.send(encode_line({"type": "world", "seq": 2}))
    stats = output.stats()
    assert (stats["oversized"], stats["queued"], stats["waiting"]) == (1, 1, 1)


def test_the_queue_is_bounded_and_drops_the_oldest_counted() -> None:
    output = ZenohOutput(ZenohConfig(enabled=True, vehicle="v", queue_lines=3))  # not started
    for seq in range(10):
        output.send(encode_line({"type": "world", "seq": seq}))
    output.send(b'{"type":"mystery"}\n')
    stats = output.stats()
    assert (stats["waiting"], stats["queued"], stats["dropped"], stats["untyped"]) == (3, 10, 7, 1)
    validate_schema({"zenoh": stats}, load_schema("stats")["properties"]["publish"])
    assert [json.loads(line)["seq"] for _, line, _ in output._queue] == [7, 8, 9]
    assert vehicle_of("gizmo/v/world") == "v" and vehicle_of("other/v/world") is None


@pytest.mark.realtime
def test_lines_reach_their_keys_the_queryable_answers_and_ros2_decodes_from_the_wire() -> None:
    async def main(endpoint: str) -> None:
        viewer = session("client", connect=endpoint)
        got, subscriber = collect(viewer)
        config = ZenohConfig(
            enabled=True, mode="client", connect=(endpoint,), vehicle="uav1", ros2="rmw_zenoh"
        )
        output = ZenohOutput(config, clock_ns=lambda: HOST_NS)  # the snapshot's time
        await output.start()
        try:
            wait_until(lambda: output.connected)
            assert _latest(viewer) is None  # no world line yet: an error reply
            world: WorldSnapshot = snapshot()
            line = encode_line(world.to_dict())
            output.send(line)
            output.on_message(world)
            output.send(encode_line({"type": "stats", "n": 1}))
            wait_until(lambda: len(got) >= 4)
            assert _latest(viewer) == line
        finally:
            await output.close()
            subscriber.undeclare()
            viewer.close()
        by_key = {key: (payload, attachment) for key, payload, attachment in got}
        assert by_key["gizmo/uav1/world"] == (line, None)
        assert "gizmo/uav1/stats" in by_key
        key = f"0/gizmo/uav1/detections/vision_msgs::msg::dds_::Detection3DArray_/{DETECTIONS_HASH}"
        payload, attachment = by_key[key]
        detections = vision_store().deserialize_cdr(payload, "vision_msgs/msg/Detection3DArray")
        assert [d.id for d in detections.detections] == ["0:5:11"]
        ext = zenoh.ext
        seq, stamp, gid = ext.z_deserialize(
            tuple[ext.Int64, ext.Int64, list[ext.UInt8]], zenoh.ZBytes(attachment)
        )
        assert seq == 1 and stamp > 0 and len(gid) == 16 and len(attachment or b"") == 33
        store = get_typestore(Stores.ROS2_JAZZY)
        assert "geometry_msgs/msg/PoseStamped" in store.types
        pose_key = next(k for k in by_key if "/pose/geometry_msgs::msg::dds_::PoseStamped_/" in k)
        pose = store.deserialize_cdr(by_key[pose_key][0], "geometry_msgs/msg/PoseStamped")
        assert pose.header.frame_id == "map" and pose.pose.position.z == 30.0
        assert output.stats()["ros2_samples"] == 2 and output.stats()["dropped"] == 0

    with router() as endpoint:
        asyncio.run(main(endpoint))


def _latest(viewer: zenoh.Session) -> bytes | None:
    replies = list(viewer.get("gizmo/uav1/world/latest", timeout=5))
    assert len(replies) == 1
    reply = replies[0]
    return None if reply.ok is None else reply.ok.payload.to_bytes()


@pytest.mark.realtime
def test_no_router_never_blocks_the_host_and_its_lines_are_counted_as_dropped() -> None:
    """A client whose router is not there: the host's sends return at once, the queue keeps
    its bound (the oldest dropped, counted), the session is retried, and close returns."""

    async def main() -> None:
        endpoint = f"tcp/127.0.0.1:{free_ports(1, 'tcp')[0]}"  # nobody listens
        config = ZenohConfig(
            enabled=True, mode="client", connect=(endpoint,), vehicle="v", queue_lines=16
        )
        output = ZenohOutput(config)
        await output.start()
        line = encode_line({"type": "world", "seq": 1})
        for _ in range(1000):
            output.send(line)
        wait_until(lambda: output.open_failures >= 1)
        await asyncio.wait_for(output.close(), 5)
        stats = output.stats()
        assert (stats["queued"], stats["dropped"], stats["connected"]) == (1000, 984, 0)

    asyncio.run(main())


def test_a_publishing_thread_that_outlives_the_close_bound_is_logged(monkeypatch, caplog):
    """``close`` waits ``CLOSE_TIMEOUT_S`` for the thread; one still inside Zenoh then is said
    (a process that exits with it there may abort), and ``close`` returns."""
    from gizmo_host.zenoh import sink

    monkeypatch.setattr(sink, "CLOSE_TIMEOUT_S", 0.05)
    output = ZenohOutput(ZenohConfig(enabled=True, vehicle="v"))
    stuck = threading.Event()
    output._thread = threading.Thread(target=stuck.wait, daemon=True)  # a put that hangs
    output._thread.start()
    try:
        with caplog.at_level("WARNING", logger="gizmo_host.zenoh.sink"):
            asyncio.run(output.close())
        assert "has not finished within 0.05 s" in caplog.text
    finally:
        stuck.set()
    output._thread.join(5.0)
    caplog.clear()
    with caplog.at_level("WARNING", logger="gizmo_host.zenoh.sink"):
        asyncio.run(output.close())  # a finished thread: nothing to say
    assert "has not finished" not in caplog.text


class _FailingFirst(ZenohOutput):
    """A publishing thread whose serving raises ``failures`` times before it serves (a bug,
    or a declaration Zenoh refuses): the fault is injected; router, sessions and subscriber
    are real."""

    def __init__(self, config: ZenohConfig, failures: int) -> None:
        super().__init__(config)
        self.failures_left = failures
        self.serves = 0

    def _serve(self, session: zenoh.Session) -> None:
        self.serves += 1
        if self.failures_left > 0:
            self.failures_left -= 1
            raise RuntimeError("injected: the serving failed")
        super()._serve(session)


def test_a_publishing_thread_that_fails_serves_again_and_the_lines_arrive(caplog) -> None:
    """rt26: a failure of the serving used to leave the vehicle silent on Zenoh for the rest
    of the run. It is counted, logged, and served again on a new session after the backoff;
    the lines handed meanwhile (still fresh) and after arrive."""

    async def main(endpoint: str) -> None:
        viewer = session("client", connect=endpoint)
        got, subscriber = collect(viewer)
        config = ZenohConfig(enabled=True, mode="client", connect=(endpoint,), vehicle="uav1")
        output = _FailingFirst(config, failures=1)
        with caplog.at_level("ERROR", logger="gizmo_host.zenoh.sink"):
            await output.start()
            try:
                wait_until(lambda: output.connected)
                assert output.serves == 2  # the first serving failed before it connected
                for n in range(3):
                    output.send(encode_line({"type": "stats", "n": n}))
                wait_until(lambda: len(got) >= 3)
            finally:
                await output.close()
                subscriber.undeclare()
                viewer.close()
        assert [json.loads(payload)["n"] for _key, payload, _att in got] == [0, 1, 2]
        stats = output.stats()
        assert (stats["restarts"], stats["errors"], stats["sent"]) == (1, 1, 3)
        assert "the publishing thread failed; it starts again in 0.2 s" in caplog.text

    with router() as endpoint:
        asyncio.run(main(endpoint))


def test_a_serving_that_always_fails_backs_off_and_close_ends_the_wait() -> None:
    """A fault that comes back at every serving is retried with the open's backoff (0.2 s
    doubling), not in a loop; closing ends the wait at once."""

    async def main(endpoint: str) -> None:
        config = ZenohConfig(enabled=True, mode="client", connect=(endpoint,), vehicle="uav1")
        output = _FailingFirst(config, failures=10**9)
        started_s = time.monotonic()
        await output.start()
        wait_until(lambda: output.restarts >= 3)
        assert time.monotonic() - started_s >= 0.6  # the 0.2 and 0.4 s waits (a lower bound)
        started = output.serves
        await asyncio.wait_for(output.close(), 1.5)  # in the 0.8 s wait, or the 1.6 s one
        assert output._thread is not None and not output._thread.is_alive()
        assert started <= output.serves <= started + 1 and output.connected is False
        assert output.stats()["restarts"] == output.serves

    with router() as endpoint:
        asyncio.run(main(endpoint))


class _WorldPutFails(ZenohOutput):
    """Every ``world`` line's put raises (a bug that recurs on one kind of line); the other
    lines go out through the real publishers."""

    def _declare(self, session, declared):
        publishers, ros2 = super()._declare(session, declared)
        publishers["world"] = _RaisingPublisher()
        return publishers, ros2


class _RaisingPublisher:
    def put(self, *_args, **_kwargs) -> None:
        raise RuntimeError("injected: a world line cannot be put")


def test_a_fault_that_recurs_after_a_line_is_put_still_backs_off() -> None:
    """rt31: the backoff started over whenever a line had been put since the last failure,
    so a fault on every world line, after a stats line each time, restarted the session five
    times a second. It grows while the failures recur: four restarts take 0.2 + 0.4 + 0.8 s
    of waiting at least."""

    async def main(endpoint: str) -> None:
        config = ZenohConfig(enabled=True, mode="client", connect=(endpoint,), vehicle="uav1")
        output = _WorldPutFails(config)
        started_s = time.monotonic()
        await output.start()
        try:
            while output.restarts < 4:
                output.send(encode_line({"type": "stats", "n": 1}))
                output.send(encode_line({"type": "world", "seq": 1, "verdict": "HOLD"}))
                await asyncio.sleep(0.02)
                assert time.monotonic() - started_s < 10, output.stats()
            assert time.monotonic() - started_s >= 1.4, output.stats()
            assert output.sent >= 4  # a stats line was put in each serving
        finally:
            await output.close()

    with router() as endpoint:
        asyncio.run(main(endpoint))


class _CountingSession:
    """A real session, passed in, whose declarations and undeclarations are counted."""

    def __init__(self, real: zenoh.Session) -> None:
        self.real, self.declared, self.undeclared = real, 0, 0

    def _counted(self, entity):
        self.declared += 1
        session = self

        class Counted:
            def __getattr__(self, name):
                return getattr(entity, name)

            def undeclare(self) -> None:
                session.undeclared += 1
                entity.undeclare()

        return Counted()

    def declare_publisher(self, *args, **kwargs):
        return self._counted(self.real.declare_publisher(*args, **kwargs))

    def declare_queryable(self, *args, **kwargs):
        return self._counted(self.real.declare_queryable(*args, **kwargs))

    def __getattr__(self, name):
        return getattr(self.real, name)


class _Ros2Fails:
    def __init__(self, *_args) -> None:
        raise RuntimeError("injected: the ROS 2 publication cannot be made")


def test_a_serving_that_fails_between_declarations_undeclares_what_it_declared() -> None:
    """rt31: the publishers declared before a later declaration failed (here the ROS 2
    publication's) were never undeclared, and a session passed in is never closed: each
    failed serving leaked six."""

    async def main(endpoint: str) -> None:
        real = session("client", connect=endpoint)
        counting = _CountingSession(real)
        config = ZenohConfig(enabled=True, mode="client", connect=(endpoint,), vehicle="uav1")
        output = ZenohOutput(config, session=counting)  # type: ignore[arg-type]
        output._ros2_class = _Ros2Fails  # type: ignore[assignment]
        await output.start()
        try:
            wait_until(lambda: output.restarts >= 2)
        finally:
            await output.close()
            real.close()
        assert counting.declared >= 2 * (len(MESSAGE_TYPES) + 1)  # publishers and queryable
        assert counting.undeclared == counting.declared

    with router() as endpoint:
        asyncio.run(main(endpoint))


@pytest.mark.realtime
def test_a_config_file_gone_at_a_retry_is_retried_not_the_end_of_zenoh(tmp_path) -> None:
    """rt32: the Zenoh configuration file is read again at each open (a renewed certificate
    is then used); missing at one retry, its ``ConfigError`` ended the thread, and the host
    published nothing on Zenoh for the rest of the run. It is an open failure like the
    router's absence: counted, retried, and the lines flow once both are back."""
    from gizmo_host.zenoh.session import open_router

    async def main() -> None:
        config_file = tmp_path / "zenoh.json5"
        config_file.write_text("{}")
        endpoint = f"tcp/127.0.0.1:{free_ports(1, 'tcp')[0]}"  # no router yet
        config = ZenohConfig(
            enabled=True,
            mode="client",
            connect=(endpoint,),
            vehicle="uav1",
            config=str(config_file),
        )
        output = ZenohOutput(config)
        await output.start()
        try:
            wait_until(lambda: output.open_failures >= 1)
            config_file.unlink()
            seen = output.open_failures
            wait_until(lambda: output.open_failures > seen)  # a retry found no file
            assert output._thread is not None and output._thread.is_alive()
            config_file.write_text("{}")
            routing = open_router(endpoint)
            viewer = session("client", connect=endpoint)
            got, subscriber = collect(viewer)
            try:
                while not got:
                    output.send(encode_line({"type": "stats", "n": 1}))
                    await asyncio.sleep(0.05)
                    assert output._thread.is_alive(), output.stats()
            finally:
                subscriber.undeclare()
                viewer.close()
                await output.close()
                routing.close()
        finally:
            await output.close()
        assert output.connected is False and output.sent >= 1

    asyncio.run(main())
