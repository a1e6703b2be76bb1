"""Raw (mode 2) camera images in several fragments, through a real receiver over loopback UDP.

The SDK's sender cuts an image into 60,000-byte pieces behind the 24-byte header and sends
``len // 60000 + 1`` of them, so an exact multiple ends with an empty fragment
(docs/protocol-decisions.md: accept it). The raw frame limit is exactly W x H x bytes per
pixel, so it must be compared with the data actually possible, not with ``count x first
fragment size``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfly_link import config_json as config
from rfly_link import io as rio
from rfly_link import sensors
from rfly_link.reassembly import FRAGMENT_SIZE, fragment_payload

WAIT_S = 10.0

CAMERA = config.VisionSensorConfig(
    index=0,
    seq_id=1,
    type_id=1,
    target_copter=1,
    target_mount_type=0,
    data_width=640,
    data_height=480,
    data_check_freq=30,
    camera_fov_deg=90.0,
    send_protocol=(2, 127, 0, 0, 1, 0, 0, 0),  # raw pixels; port 0: ephemeral for the test
    sensor_pos_xyz_m=(0.0, 0.0, 0.0),
    has_eular_or_quat=True,
    eular_or_quat=0.0,
    sensor_ang_eular=(0.0, 0.0, 0.0),
    sensor_ang_quat=(1.0, 0.0, 0.0, 0.0),
    other_params=(0.0,) * 16,
)


def camera(type_id: int, width: int, height: int) -> config.VisionSensorConfig:
    return dataclasses.replace(CAMERA, type_id=type_id, data_width=width, data_height=height)


def pixels_for(sensor: config.VisionSensorConfig, seed: int) -> bytes:
    size = sensors.raw_image_bytes(sensor.type_id, sensor.data_width, sensor.data_height)
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


async def receive(
    sensor: config.VisionSensorConfig, frames: list[list[bytes]]
) -> tuple[list[rio.Event], dict[str, int]]:
    """Send each frame's datagrams to a fresh receiver for ``sensor``; return events and drops.

    A final 3-byte datagram (a ``short`` drop) marks the end: once it is counted, the reader
    thread has processed everything sent before it.
    """
    (receiver,) = rio.vision_sensor_receivers([sensor])
    async with receiver:
        target = ("127.0.0.1", receiver.bound_port)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            for datagrams in frames:
                for d in datagrams:
                    tx.sendto(d, target)
            tx.sendto(b"end", target)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        while not receiver.stats.drops.get("short") and loop.time() < deadline:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0)  # hand-overs queued before the marker have run
        events = []
        while True:
            try:
                events.append(receiver.get_nowait())
            except asyncio.QueueEmpty:
                break
        drops = receiver.stats.drops
    assert drops.pop("short", 0) == 1, "the end marker never arrived"
    return events, drops


def check_images(
    sensor: config.VisionSensorConfig, frames: list[list[bytes]], payloads: list[bytes]
) -> None:
    async def main() -> None:
        events, drops = await receive(sensor, frames)
        assert drops == {}
        assert len(events) == len(payloads)
        for event, payload in zip(events, payloads, strict=True):
            image = event.value
            assert isinstance(image, sensors.Image) and image.pixels is not None
            assert image.pixels.shape[:2] == (sensor.data_height, sensor.data_width)
            assert image.data == payload

    asyncio.run(asyncio.wait_for(main(), 30))


def sdk_fragments(payload: bytes, frame_timestamp_s: float) -> list[bytes]:
    """The SDK sender's layout: 24-byte header, 60,000-byte pieces, ``len // 60000 + 1`` of them."""
    return fragment_payload(
        payload,
        header_size=24,
        timestamp_s=frame_timestamp_s,
        fragment_size=FRAGMENT_SIZE,
        sdk_empty_last=True,
    )


def test_a_640x480_bgr_image_in_16_fragments_comes_out() -> None:
    payload = pixels_for(CAMERA, 1)
    datagrams = sdk_fragments(payload, 0.5)
    assert len(payload) == 921_600 and len(datagrams) == 16
    check_images(CAMERA, [datagrams, sdk_fragments(payload[::-1], 0.6)], [payload, payload[::-1]])


def test_a_62400_byte_image_in_two_fragments_comes_out() -> None:
    sensor = camera(1, 208, 100)  # 208 x 100 x 3 = 62,400 B
    payload = pixels_for(sensor, 2)
    datagrams = sdk_fragments(payload, 1.0)
    assert [len(d) for d in datagrams] == [60_024, 2_424]
    check_images(sensor, [datagrams], [payload])


def test_an_exact_60000_byte_image_with_the_sdks_empty_last_fragment_comes_out() -> None:
    sensor = camera(3, 300, 200)  # grey: 300 x 200 x 1 = 60,000 B
    payload = pixels_for(sensor, 3)
    datagrams = sdk_fragments(payload, 2.0)
    assert [len(d) for d in datagrams] == [60_024, 24]
    check_images(sensor, [datagrams, list(reversed(sdk_fragments(payload, 2.5)))], [payload] * 2)


def test_an_image_one_byte_too_large_is_still_refused() -> None:
    sensor = camera(3, 300, 200)

    async def main() -> None:
        too_big = fragment_payload(bytes(60_001), header_size=24, timestamp_s=1.0)
        good = sdk_fragments(bytes(60_000), 2.0)
        events, drops = await receive(sensor, [too_big + good])
        assert drops == {"frame_too_large": 1}
        assert [e.value.data for e in events] == [bytes(60_000)]

    asyncio.run(asyncio.wait_for(main(), 30))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    type_id=st.sampled_from([1, 2, 3]),  # 3, 2 and 1 bytes per pixel
    width=st.integers(1, 640),
    height=st.integers(1, 480),
    fragment_size=st.one_of(st.integers(1000, 60_000), st.just(60_000)),
    header_size=st.sampled_from([24, 32]),
    sdk_empty_last=st.booleans(),
    backwards=st.booleans(),
)
def test_raw_images_of_any_size_and_fragment_size_come_out(
    type_id: int,
    width: int,
    height: int,
    fragment_size: int,
    header_size: int,
    sdk_empty_last: bool,
    backwards: bool,
) -> None:
    sensor = camera(type_id, width, height)
    payload = pixels_for(sensor, width * height)
    datagrams = fragment_payload(
        payload,
        header_size=header_size,
        frame_id=1,
        timestamp_s=1.0,
        fragment_size=fragment_size,
        sdk_empty_last=sdk_empty_last,
    )
    check_images(sensor, [datagrams[::-1] if backwards else datagrams], [payload])
