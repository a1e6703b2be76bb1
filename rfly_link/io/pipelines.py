"""Sans-I/O processing of one received datagram into :class:`Event` values.

A :class:`UdpReceiver <rfly_link.io.UdpReceiver>` runs its pipeline in its reader thread:
:class:`MessagePipeline` decodes CopterSim / RflySim3D datagrams by port, and
:class:`SensorPipeline` reassembles vision-sensor fragments (in place where it can: the kernel
copies each expected fragment straight into the frame buffer) and decodes the frame. Nothing a
peer sends escapes as an exception: every rejection is a drop counted by cause.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

from rfly_link import dispatch
from rfly_link.config_json import VisionSensorConfig
from rfly_link.errors import DecodeError, DropCause
from rfly_link.pool import ArrayPool
from rfly_link.reassembly import Reassembler, SensorFrame
from rfly_link.sensors import decode_sensor

DEFAULT_IN_FLIGHT: Final = 64 * 1024 * 1024  # Reassembler's default max_bytes_in_flight


class Event(NamedTuple):
    """One decoded value with where and when it arrived (``rx_ns``: host monotonic clock)."""

    value: Any
    sender: tuple[str, int]
    port: int
    rx_ns: int
    frame: SensorFrame | None = None
    sensor: VisionSensorConfig | None = None

    def to_dict(self) -> dict[str, Any]:
        to_dict = getattr(self.value, "to_dict", None)
        return {
            "type": "Event",
            "value": to_dict() if to_dict is not None else repr(self.value),
            "sender": list(self.sender),
            "port": self.port,
            "rx_ns": self.rx_ns,
            "frame": self.frame.to_dict() if self.frame is not None else None,
            "seq_id": self.sensor.seq_id if self.sensor is not None else None,
        }


class Pipeline(Protocol):
    """Sans-I/O processing of one datagram; runs in the reader thread.

    Optional extras used when present: ``urgent = True`` (hand each event over at once),
    and ``receive_slot()`` / ``process_in_place()`` / ``cancel_in_place()`` to receive
    straight into the consumer's buffer (see :class:`SensorPipeline`).
    """

    def process(self, data: memoryview, sender: tuple[str, int], now_ns: int) -> list[Event]: ...

    def drop_counts(self) -> dict[str, int]: ...


@runtime_checkable
class InPlacePipeline(Pipeline, Protocol):
    """A pipeline that offers where the next datagram may land (see :class:`SensorPipeline`)."""

    def receive_slot(self) -> memoryview | None: ...

    def process_in_place(
        self, nbytes: int, overflow: memoryview, sender: tuple[str, int], now_ns: int
    ) -> list[Event]: ...

    def cancel_in_place(self) -> None: ...


def _zero_drops() -> dict[str, int]:
    # Every key exists up front: the loop thread may read while the reader thread counts.
    return dict.fromkeys((cause.value for cause in DropCause), 0)


class MessagePipeline:
    """CopterSim / RflySim3D datagrams, disambiguated by the port's role in RflySim's map."""

    def __init__(self, logical_port: int) -> None:
        self.logical_port = logical_port
        self._decode = dispatch.PortDecoder(logical_port)
        self._drops = _zero_drops()

    def process(self, data: memoryview, sender: tuple[str, int], now_ns: int) -> list[Event]:
        try:
            value = self._decode(data)
        except DecodeError as exc:
            self._drops[exc.cause.value] += 1
            return []
        return [Event(value, sender, self.logical_port, now_ns)]

    def drop_counts(self) -> dict[str, int]:
        return {cause: n for cause, n in self._drops.items() if n}


def sensor_reassembler(sensor: VisionSensorConfig) -> Reassembler:
    """A :class:`Reassembler` whose frame size limit comes from the sensor's Config.json entry.

    Without sizes in the configuration the defaults apply (32 MiB a frame, 64 MiB in flight).
    """
    bound = sensor.max_frame_bytes()
    if bound is None:
        return Reassembler()
    return Reassembler(max_frame_bytes=bound, max_bytes_in_flight=max(DEFAULT_IN_FLIGHT, 2 * bound))


class SensorPipeline:
    """One vision sensor: fragments -> :class:`Reassembler` -> :func:`decode_sensor`."""

    urgent = True  # hand each frame to the loop as soon as it is complete

    def __init__(self, sensor: VisionSensorConfig, reassembler: Reassembler | None = None) -> None:
        self.sensor = sensor
        self.destination_ip = sensor.receiver_ip  # where Config.json has RflySim3D send data
        self.reassembler = reassembler or sensor_reassembler(sensor)
        self.arrays = ArrayPool()
        self._params = replace(sensor.decode_params(), allocate=self.arrays.take)
        self._drops = _zero_drops()
        # Bound once: these run for every fragment (27 per 1.6 MB LiDAR frame).
        self._feed = self.reassembler.feed
        self._feed_in_place = self.reassembler.feed_in_place
        self._receive_slot = self.reassembler.receive_slot

    def receive_slot(self) -> memoryview | None:
        return self._receive_slot()

    def cancel_in_place(self) -> None:
        self.reassembler.cancel_in_place()

    def process_in_place(
        self, nbytes: int, overflow: memoryview, sender: tuple[str, int], now_ns: int
    ) -> list[Event]:
        frames = self._feed_in_place(nbytes, overflow, sender, now_ns)
        return self._decode(frames, sender, now_ns) if frames else []

    def process(self, data: memoryview, sender: tuple[str, int], now_ns: int) -> list[Event]:
        frames = self._feed(data, sender, now_ns)
        return self._decode(frames, sender, now_ns) if frames else []

    def _decode(
        self, frames: list[SensorFrame], sender: tuple[str, int], now_ns: int
    ) -> list[Event]:
        out = []
        for frame in frames:
            try:
                value = decode_sensor(self.sensor.type_id, frame.payload, self._params)
            except DecodeError as exc:
                self._drops[exc.cause.value] += 1
                continue
            out.append(Event(value, sender, self.sensor.port, now_ns, frame, self.sensor))
        return out

    def drop_counts(self) -> dict[str, int]:
        counts = dict(self.reassembler.stats.drops)
        for cause, n in self._drops.items():
            if n:
                counts[cause] = counts.get(cause, 0) + n
        return counts
