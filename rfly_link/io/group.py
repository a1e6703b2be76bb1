"""Receivers that start all or none, each drained by its own task into one handler.

Three owners used to start their receivers one by one (the world service, the emulator's
sources, ``gizmo-host rfly``), and one of them left the receivers it had started running when a
later bind failed. A group binds every socket first; if one fails it closes those it opened
and re-raises the ``OSError`` (which names the port), so a failed start leaves nothing behind.

A handler that returns an awaitable is awaited before the pump takes the receiver's next
event: back-pressure for a slow consumer (``gizmo-host rfly`` hands events to a one-slot queue
in front of stdout), so events wait in the receiver's own bounded queue, which drops the
oldest and counts them, and never pile up in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from rfly_link.io.pipelines import Event
from rfly_link.io.receiver import UdpReceiver

Handler = Callable[[Event], Awaitable[None] | None]


class ReceiverGroup:
    """``async with ReceiverGroup(receivers, handle):`` runs every receiver into ``handle``.

    ``handle`` is called in the loop for each event (and awaited when it returns an
    awaitable: the pump waits for a slow consumer); an exception it raises goes to
    ``on_error(receiver, exc)`` and the pump goes on (without ``on_error`` it ends the pump,
    whose task then carries it: see ``task_done``). ``task_done`` is added to every pump task
    as a done callback, so an owner can notice a pump that died.
    """

    def __init__(
        self,
        receivers: Iterable[UdpReceiver],
        handle: Handler,
        *,
        on_error: Callable[[UdpReceiver, Exception], None] | None = None,
        task_done: Callable[[asyncio.Task[None]], None] | None = None,
    ) -> None:
        self.receivers = list(receivers)
        self._handle = handle
        self._on_error = on_error
        self._task_done = task_done
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> ReceiverGroup:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Bind every receiver, then start draining them; all or none."""
        if self._tasks:
            raise RuntimeError("ReceiverGroup is already running")
        started: list[UdpReceiver] = []
        try:
            for receiver in self.receivers:
                await receiver.start()
                started.append(receiver)
        except BaseException:
            for receiver in started:
                await receiver.close()
            raise
        for receiver in self.receivers:
            task = asyncio.create_task(self._pump(receiver), name=f"pump {receiver.name}")
            if self._task_done is not None:
                task.add_done_callback(self._task_done)
            self._tasks.append(task)

    async def _pump(self, receiver: UdpReceiver) -> None:
        handle, on_error = self._handle, self._on_error
        async for event in receiver:
            if on_error is None:
                pending = handle(event)
                if pending is not None:
                    await pending
                continue
            try:
                pending = handle(event)
                if pending is not None:
                    await pending
            except Exception as exc:  # one bad event must not end the stream
                on_error(receiver, exc)

    async def close(self) -> None:
        """Stop the pumps and close every receiver; safe to call twice."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for receiver in self.receivers:
            await receiver.close()

    def stats(self) -> list[dict[str, Any]]:
        return [
            {
                "name": r.name,
                "port": r.bound_port,
                "datagrams": r.stats.datagrams,
                "drops": r.stats.drops,
            }
            for r in self.receivers
        ]
