"""Open a serial port with serialx as ``gizmo-host run`` does; print ``opened`` or the diagnosis.

Run as a separate process so the tests can drop privileges (root bypasses file permissions).
"""

from __future__ import annotations

import asyncio
import sys

import serialx

from gizmo_host.deploy.diagnostics import explain_open_error


async def main(path: str) -> int:
    try:
        transport, _ = await serialx.create_serial_connection(
            asyncio.get_running_loop(), asyncio.Protocol, path, 115200
        )
    except OSError as exc:
        print(explain_open_error(path, exc))
        return 1
    transport.close()
    print("opened")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
