"""asyncio at the edges: the serial link, the service, timers, fan-out and publishing."""
