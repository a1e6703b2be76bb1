"""``gizmo-host run`` as a real process: its JSON lines collected as they come."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_S = 10.0


@dataclass
class Run:
    proc: asyncio.subprocess.Process
    messages: list[dict] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None

    async def wait_for(self, predicate, timeout: float = TIMEOUT_S) -> dict:
        """The first message (already read or still to come) that matches."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for message in self.messages[seen:]:
                if predicate(message):
                    return message
            seen = len(self.messages)
            if self.reader is not None and self.reader.done() and seen == len(self.messages):
                raise AssertionError("no such message: the process closed its stdout")
            if time.monotonic() > deadline:
                raise AssertionError("no such message in time")
            await asyncio.sleep(0.01)  # poll the reader task's list with a deadline


async def spawn_run(
    link_path: str,
    config: Path,
    *args: str,
    ready: Callable[[dict], bool] = lambda m: m["type"] == "link" and m["state"] == "SYNCING",
    stderr: int = asyncio.subprocess.DEVNULL,
) -> Run:
    """``gizmo-host run`` on ``link_path`` with ``config``, its JSON lines collected, returned
    once a line satisfies ``ready``."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link_path),
        *("--config", str(config), "--transport-delay-ms", "0"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        limit=1 << 22,
    )
    run = Run(proc)

    async def read() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            run.messages.append(json.loads(line))

    run.reader = asyncio.create_task(read())
    try:
        await run.wait_for(ready)
    except AssertionError:
        if proc.returncode is None and not run.reader.done():
            raise
        rc = await proc.wait()  # it ended before it was ready: say why
        err = b"" if proc.stderr is None else await proc.stderr.read()
        raise AssertionError(f"gizmo-host run exited {rc} before it was ready: {err!r}") from None
    return run
