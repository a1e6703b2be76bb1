"""A real process that notifies systemd the way ``gizmo-host run`` does, driven over stdin.

Commands, one per line: ``block`` blocks the event loop until the next line arrives (announced
with STATUS=blocking, then STATUS=unblocked), ``stop`` sends STOPPING=1 and exits.
"""

from __future__ import annotations

import asyncio
import sys

from gizmo_host.deploy.sd_notify import SdNotifier, watchdog_loop


async def main() -> int:
    notifier = SdNotifier.from_environment()
    if notifier is None:
        print("NOTIFY_SOCKET is not set", file=sys.stderr)
        return 2
    pinger = asyncio.create_task(watchdog_loop(notifier))
    notifier.ready(status="listening")
    loop = asyncio.get_running_loop()
    while True:
        command = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if command == "block":
            notifier.status("blocking")
            sys.stdin.readline()  # deliberately blocks the event loop, as a hung handler would
            notifier.status("unblocked")
        elif command in ("stop", ""):
            notifier.stopping()
            pinger.cancel()
            return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
