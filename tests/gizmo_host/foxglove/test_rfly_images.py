"""RflySim's camera image for ``run --foxglove``: the Config.json image sensor chosen, and its
frames received over loopback UDP (fragmented as RflySim3D sends them) handed on as they
came, only while a viewer wants them."""

from __future__ import annotations

import asyncio
import copy
import json
import socket
from pathlib import Path

import numpy as np

from gizmo_host.app.foxglove_view import image_sensor
from gizmo_host.app.host_config import config_from_mapping
from gizmo_host.foxglove.rfly_images import RflyImages
from gizmo_host.rigs.free_ports import free_ports
from rfly_link.config_json import parse_config
from rfly_link.reassembly.fragments import fragment_payload
from tests.support.rfly_config import EXAMPLE


def image_config(port: int, width: int = 8, height: int = 6) -> dict:
    document = copy.deepcopy(EXAMPLE)
    rgb = document["VisionSensors"][0]
    rgb.update(DataWidth=width, DataHeight=height, SendProtocol=[2, 127, 0, 0, 1, port, 0, 0])
    document["VisionSensors"][2]["SeqID"] = 3
    document["VisionSensors"][1]["SeqID"] = 2
    return document


def test_the_view_shows_the_vehicle_s_image_sensor(tmp_path: Path) -> None:
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(image_config(30001)))
    camera = {"width_px": 640, "height_px": 480, "hfov_deg": 90.0}
    rflysim = {"copter_id": 1, "config": str(path)}
    config = config_from_mapping({"camera": camera, "rflysim": rflysim})
    sensor = image_sensor(config, config.world_setup())
    assert sensor is not None and (sensor.seq_id, sensor.port) == (1, 30001)
    other = config_from_mapping({"camera": camera, "rflysim": {**rflysim, "copter_id": 2}})
    assert image_sensor(other, other.world_setup()) is None  # no image on that vehicle
    assert image_sensor(config_from_mapping({"camera": camera}), None) is None


def test_raw_frames_arrive_as_they_came_and_only_while_wanted() -> None:
    port = free_ports()[0]
    sensor = parse_config(json.dumps(image_config(port))).sensors[0]
    got: list[tuple[int, np.ndarray, str]] = []
    wanted = [False]
    pixels = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)

    async def main() -> None:
        images = RflyImages(
            sensor,
            "127.0.0.1",
            ["127.0.0.1"],
            lambda t, p, e: got.append((t, p, e)),
            lambda: wanted[0],
        )
        await images.start()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for frame_id, want in enumerate((False, True)):
                wanted[0] = want
                for datagram in fragment_payload(
                    pixels.tobytes(), frame_id=frame_id, fragment_size=50
                ):
                    sock.sendto(datagram, ("127.0.0.1", port))
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 5
                while images.images + images.unwanted < frame_id + 1:
                    assert loop.time() < deadline, images.stats()
                    await asyncio.sleep(0.01)  # the receiver's task drains the socket
        finally:
            sock.close()
            await images.close()
        assert (images.images, images.unwanted) == (1, 1)

    asyncio.run(main())
    ((t_ns, received, encoding),) = got
    assert encoding == "bgr8" and t_ns > 0
    assert (received == pixels).all()
