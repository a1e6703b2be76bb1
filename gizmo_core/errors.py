"""``ConfigError``: the one error for a setting that cannot be used, wherever it was made.

A settings file, a flag, a Config.json, a ``[camera]`` table handed to fusion: the message is
one line naming the key and the value expected (``serial.baudrate: expected an integer, got
'fast'``), and a command exits with status 2 (``gizmo_host.cli.common``). It is the
operator's error, not the peer's (a bad frame or datagram is counted, never raised).
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A setting is missing, unknown or out of range; the message names the key.

    ``key`` is the ``section.key`` at fault, when there is one (a command line maps it back to
    the flag that set it)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class MissingExtra(ConfigError):
    """A setting, flag or input needs an optional extra that is not installed: every command
    and layer says so in these same words, naming the extra to install."""

    def __init__(self, extra: str, what: str, key: str | None = None) -> None:
        super().__init__(f"{what} needs the {extra} extra: pip install 'gizmo-host[{extra}]'", key)
        self.extra = extra
