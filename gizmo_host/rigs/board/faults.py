"""The fault timeline: which fault, when, how hard; from a TOML file or a one-line flag.

A timeline is a seed and a list of faults, each at ``at_s`` seconds after the emulation starts.
The file form::

    seed = 7
    [[fault]]
    kind = "bit_errors"
    at_s = 2.0
    duration_s = 1.0
    ber = 1e-3

    [[fault]]
    kind = "reset"
    at_s = 4.0

The flag form is one fault, ``KIND,key=value,...``: ``--fault bit_errors,at_s=2,ber=1e-3``.

Frame faults hit frames produced in ``[at_s, at_s + duration_s)``, each with ``probability``,
at most ``count`` of them (without a duration: the first frame at or after ``at_s``). Board
faults happen once at ``at_s``; ``silence`` and ``hangup`` last ``duration_s``. What each kind
does is in :class:`FaultKind`; the injector (``injector.py``) applies them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.setting import Setting, check_keys, fail
from gizmo_host.tomlfile import read_toml


class FaultKind(Enum):
    BIT_ERRORS = "bit_errors"  # each bit of a frame flips with probability ``ber``
    DROP_BYTES = "drop_bytes"  # ``bytes`` bytes of a frame are left out
    GARBAGE = "garbage"  # a burst of ``bytes`` random bytes goes out before a frame
    TRUNCATE = "truncate"  # only the first ``keep_bytes`` bytes of a frame go out
    DUPLICATE = "duplicate"  # a frame goes out twice
    WRAP = "wrap"  # the sequence jumps to ``sequence`` (near 65535) and wraps
    RESET = "reset"  # the board restarts: silent ``down_s``, then sequence and clock from 0
    SILENCE = "silence"  # no frame for ``duration_s`` (the recognition loop stalls)
    HANGUP = "hangup"  # the port closes for ``duration_s`` and reopens behind the same link
    CLOCK_SKEW = "clock_skew"  # the device clock runs ``ppm`` fast (negative: slow) from now
    CLOCK_JUMP = "clock_jump"  # the device clock steps by ``delta_ms``
    DELAY = "delay"  # the line delivers every frame ``delta_ms`` late (``duration_s``; 0: for good)


FRAME_FAULTS = frozenset(
    {
        FaultKind.BIT_ERRORS,
        FaultKind.DROP_BYTES,
        FaultKind.GARBAGE,
        FaultKind.TRUNCATE,
        FaultKind.DUPLICATE,
    }
)
# Faults that destroy the frame they hit, in the order the injector tries them: one frame is
# destroyed by one fault at most, so every lost frame is counted once.
DESTRUCTIVE = (FaultKind.TRUNCATE, FaultKind.DROP_BYTES, FaultKind.BIT_ERRORS)

_REQUIRED = {
    FaultKind.BIT_ERRORS: ("ber",),
    FaultKind.SILENCE: ("duration_s",),
    FaultKind.HANGUP: ("duration_s",),
    FaultKind.CLOCK_SKEW: ("ppm",),
    FaultKind.CLOCK_JUMP: ("delta_ms",),
    FaultKind.DELAY: ("delta_ms",),
}


@dataclass(frozen=True, slots=True)
class Fault:
    """One scheduled fault; only the keys of its kind are meaningful (see ``_KEYS``)."""

    kind: FaultKind
    at_s: float = 0.0
    duration_s: float = 0.0
    count: int | None = None  # frame faults: at most this many frames (default: 1 w/o window)
    probability: float = 1.0
    ber: float = 0.0
    bytes: int = 1  # drop_bytes: per frame; garbage: per burst
    keep_bytes: int | None = None  # truncate: None draws 1..34 per frame
    sequence: int = 65530
    down_s: float = 0.5
    reset: bool = False  # hangup: the board loses power too (sequence and clock restart)
    ppm: float = 0.0
    delta_ms: int = 0

    @property
    def end_s(self) -> float:
        return self.at_s + self.duration_s

    @property
    def max_frames(self) -> int | None:
        """How many frames a frame fault may hit (None: every frame in its window)."""
        if self.count is not None:
            return self.count
        return None if self.duration_s > 0 else 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value, "at_s": self.at_s}
        for key in _KEYS[self.kind]:
            out[key] = getattr(self, key)
        return out


DAY_S = 86_400.0


def _row(
    name: str, kind: str, low: float | None, high: float | None, unit: str = "", **kw: Any
) -> Setting:
    """A fault key's row (its default is the ``Fault`` field's); booleans have no range."""
    default = Fault.__dataclass_fields__[name].default
    return Setting("fault", name, kind, default, name, low, high, unit, **kw)


_TIME = _row("at_s", "float", 0.0, DAY_S, "s")
_WINDOW = {
    "duration_s": _row("duration_s", "float", 0.0, DAY_S, "s"),
    "count": _row("count", "int", 1, 1_000_000_000, optional=True),
    "probability": _row("probability", "float", 0.0, 1.0, open_low=True),
}
_LENGTH = _row("duration_s", "float", 0.0, DAY_S, "s", open_low=True)
_FRAME_BYTES = 34  # a VISION_RESULT v1 frame
# kind -> its keys (besides ``kind`` and ``at_s``), each checked by its row of settings.
_KEYS: dict[FaultKind, dict[str, Setting]] = {
    FaultKind.BIT_ERRORS: {**_WINDOW, "ber": _row("ber", "float", 0.0, 0.5, open_low=True)},
    FaultKind.DROP_BYTES: {**_WINDOW, "bytes": _row("bytes", "int", 1, _FRAME_BYTES)},
    FaultKind.GARBAGE: {**_WINDOW, "bytes": _row("bytes", "int", 1, 4096)},
    FaultKind.TRUNCATE: {
        **_WINDOW,
        "keep_bytes": _row("keep_bytes", "int", 1, _FRAME_BYTES, optional=True),
    },
    FaultKind.DUPLICATE: dict(_WINDOW),
    FaultKind.WRAP: {"sequence": _row("sequence", "int", 0, 65535)},
    FaultKind.RESET: {"down_s": _row("down_s", "float", 0.0, DAY_S, "s")},
    FaultKind.SILENCE: {"duration_s": _LENGTH},
    FaultKind.HANGUP: {"duration_s": _LENGTH, "reset": _row("reset", "bool", None, None)},
    FaultKind.CLOCK_SKEW: {"ppm": _row("ppm", "float", -100_000.0, 100_000.0, "ppm")},
    FaultKind.CLOCK_JUMP: {"delta_ms": _row("delta_ms", "int", -(2**31), 2**31, "ms")},
    FaultKind.DELAY: {
        "delta_ms": _row("delta_ms", "int", 0, 60_000, "ms"),
        "duration_s": _row("duration_s", "float", 0.0, DAY_S, "s"),
    },
}
_SEED = Setting("fault", "seed", "int", 0, "the fault and latency seed", 0, 2**63 - 1)


@dataclass(frozen=True, slots=True)
class FaultTimeline:
    """A seed and faults sorted by time: the same timeline and seed inject the same bytes."""

    faults: tuple[Fault, ...] = ()
    seed: int = 0
    by_kind: Mapping[FaultKind, tuple[Fault, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.faults, key=lambda f: f.at_s))
        object.__setattr__(self, "faults", ordered)
        grouped = {kind: tuple(f for f in ordered if f.kind is kind) for kind in FaultKind}
        object.__setattr__(self, "by_kind", grouped)

    def with_faults(self, extra: Sequence[Fault]) -> FaultTimeline:
        return FaultTimeline((*self.faults, *extra), self.seed)

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "faults": [f.to_dict() for f in self.faults]}


def parse_fault(values: Mapping[str, Any], where: str) -> Fault:
    """One fault from a TOML table or parsed flag; errors name ``where`` and the key."""
    raw_kind = values.get("kind")
    kinds = {k.value: k for k in FaultKind}
    if raw_kind not in kinds:
        raise ConfigError(
            f"{where}.kind: expected one of {', '.join(sorted(kinds))}, got {raw_kind!r}"
        )
    kind = kinds[raw_kind]
    allowed = _KEYS[kind]
    check_keys(where, values, {"kind", "at_s", *allowed})
    for key in _REQUIRED.get(kind, ()):
        if key not in values:
            raise ConfigError(f"{where}.{key}: {kind.value} needs it, got nothing")
    fields: dict[str, Any] = {"kind": kind}
    if "at_s" in values:
        fields["at_s"] = _TIME.check(values["at_s"], f"{where}.at_s", text=True)
    for key, row in allowed.items():
        if key in values:
            fields[key] = row.check(values[key], f"{where}.{key}", text=True)
    if kind is FaultKind.CLOCK_JUMP and fields["delta_ms"] == 0:
        raise ConfigError(f"{where}.delta_ms: expected a non-zero step, got 0")
    return Fault(**fields)


def parse_fault_flag(spec: str) -> Fault:
    """``KIND,key=value,...`` (the ``--fault`` flag) as a :class:`Fault`."""
    kind, _, rest = spec.partition(",")
    values: dict[str, Any] = {"kind": kind.strip()}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--fault {spec}: expected key=value, got {item!r}")
        values[key.strip()] = value.strip()
    return parse_fault(values, f"--fault {kind.strip()}")


def timeline_from_mapping(data: Mapping[str, Any], where: str) -> FaultTimeline:
    check_keys(where, data, {"seed", "fault"})
    seed = _SEED.check(data.get("seed", 0), f"{where}: seed")
    raw = data.get("fault", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: fault: expected an array of tables ([[fault]]), got {raw!r}")
    faults = [
        parse_fault(_table(f"{where}: fault[{i}]", item), f"{where}: fault[{i}]")
        for i, item in enumerate(raw)
    ]
    return FaultTimeline(tuple(faults), seed)


def _table(key: str, value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise fail(key, "a table", value)


def load_timeline(path: str | Path) -> FaultTimeline:
    """Read a ``--faults`` TOML file; every problem is one ConfigError naming the file."""
    return timeline_from_mapping(read_toml(path), str(path))


def validate_for_port(timeline: FaultTimeline, *, can_hang_up: bool) -> None:
    """A hang-up needs a port that can be re-plugged behind a stable name (a pty with a link)."""
    if timeline.by_kind[FaultKind.HANGUP] and not can_hang_up:
        raise ConfigError("fault hangup: needs a pty with --link PATH (a name to reopen)")


def geometric_gap(u: float, p: float) -> int:
    """Trials before the next success of probability ``p``, from a uniform ``u`` in [0, 1)."""
    if p >= 1.0:
        return 0
    return int(math.log1p(-u) / math.log1p(-p))
