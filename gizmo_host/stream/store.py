"""Latest result per (source_id, result_type, id), freshness on the host clock, and verdicts.

A verdict answers "may the robot act on this target now?": ``PROCEED`` only when a matching
result is fresh (younger than its TTL on the host clock), tracked and not flagged lost, the
link is UP and the device clock is locked; otherwise ``HOLD`` with every reason that applies.
A lost or stale result is never presented as current (spec, "receiver flow": do not keep using
an old target position). Sans-I/O: the shell passes ``now_ns`` in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gizmo_core import Decision, HoldReason, LinkState, Selector
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import ReceivedResult, ResultKey
from gizmo_host.stream.tracker import SequenceConflicts, SequenceEvent
from gizmo_host.wire.protocol import ResultFlags, VisionResult
from gizmo_host.wire.result_checks import invalid_field, is_target
from gizmo_host.wire.results import ResultType

DEFAULT_TTL_MS: Final = 250.0
DEFAULT_RESET_HOLD_MS: Final = 0.0  # see the [store] reset_hold_ms row: a camera's warm-up
DEFAULT_MAX_ENTRIES: Final = 1024
_LOCKED: Final = ClockStatus.LOCKED
_TRACKED: Final = ResultFlags.TRACKED.value
_TRACKED_OR_LOST: Final = (ResultFlags.TRACKED | ResultFlags.LOST).value
_TYPE_NONE: Final = int(ResultType.NONE)


_LINK_REASONS: Final = {
    LinkState.DOWN: HoldReason.LINK_DOWN,
    LinkState.CONNECTING: HoldReason.LINK_DOWN,
    LinkState.SYNCING: HoldReason.LINK_DOWN,
    LinkState.SILENT: HoldReason.LINK_SILENT,
}


def reports_nothing(result: VisionResult) -> bool:
    """The board's "nothing tracked" frame: lost, untracked, or result_type NONE whatever its
    flags. It ends the currency of every earlier result of its source (``update``)."""
    return result.flags & _TRACKED_OR_LOST != _TRACKED or result.result_type == _TYPE_NONE


def invalid(result: VisionResult) -> str | None:
    """The field of a result that cannot be trusted, if any: ``result_sequence`` when it is
    not the header's ``sequence`` (v1 says they are equal: a frame that disagrees with itself
    was not made by the board's encoder), else ``result_checks.invalid_field``'s field off the
    protocol's scale. (Unpacked, not read by name: compiled, a NamedTuple's fields by name are
    Python lookups, and this runs for every frame.)"""
    (_, _, _, sequence, _, _, result_type, result_sequence, _, confidence, flags, _,
     x, y, w, h, ident, _) = result  # fmt: skip
    if result_sequence != sequence:
        return "result_sequence"
    return invalid_field(result_type, ident, confidence, flags, x, y, w, h)


def selects(selector: Selector, key: ResultKey) -> bool:
    """Whether ``selector`` picks the result ``key``. With ``result_type=None`` only results
    that locate a target match (``result_checks.is_target``: colour blobs, QR codes, motion, bright
    spots, detections): the default selector means "any detection", never brightness
    statistics, a line, a reserved tag or an unknown value (the world model only ever holds
    such targets, so there the field match alone is the same rule)."""
    source_id, result_type, result_id = key
    if selector.result_type is None and not is_target(result_type, result_id):
        return False
    return selector.matches(source_id, result_type, result_id)


def parse_selector(text: str) -> Selector:
    """``any`` or comma-separated ``source=N``, ``type=N|NAME``, ``id=N``, each at most once.
    Nothing (an empty shell variable, say) is a mistake, not ``any``: watching every target
    must be asked for."""
    text = text.strip()
    if text == "any":
        return Selector()
    values: dict[str, int] = {}
    for part in text.split(","):
        name, sep, raw = part.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or name not in ("source", "type", "id"):
            raise ValueError(f"selector: expected 'any' or source=N,type=N|NAME,id=N, got {text!r}")
        if name in values:
            raise ValueError(f"selector {name}: given twice in {text!r}")
        if name == "type" and raw.upper() in ResultType.__members__:
            values[name] = int(ResultType[raw.upper()])
            continue
        try:
            values[name] = int(raw, 0)
        except ValueError:
            raise ValueError(f"selector {name}: expected an integer, got {raw!r}") from None
    return Selector(values.get("source"), values.get("type"), values.get("id"))


@dataclass(frozen=True, slots=True)
class LinkVerdict:
    """``valid_until_ns``: the host time after which, with no newer verdict, this one is void.
    PROCEED: the moment its target goes stale (its capture time plus its TTL), unless a fresher
    result renews it. HOLD: the moment the host re-evaluates it at the latest (its next
    steady re-publication): a consumer still holds, but knows the host is late."""

    decision: Decision
    reasons: tuple[HoldReason, ...]
    selector: Selector
    host_ns: int
    valid_until_ns: int
    result: ReceivedResult | None = field(default=None, compare=False)  # the one to act on

    @property
    def proceed(self) -> bool:
        return self.decision is Decision.PROCEED

    def same_as(self, other: LinkVerdict | None) -> bool:
        """Same decision, reasons and target key: nothing new to publish. A change of target
        is news, so a consumer never keeps acting on the previous target's line."""
        if other is None or self.decision is not other.decision or self.reasons != other.reasons:
            return False
        mine, theirs = self.result, other.result
        if mine is None or theirs is None:
            return mine is theirs
        return mine.key == theirs.key

    def to_json_line(self) -> bytes:
        """``to_dict()`` as the compact JSON line the JSON encoder makes of it, byte for byte
        (the tests check), from templates: a steady stream publishes one every half TTL."""
        result = self.result
        target = (
            "null"
            if result is None
            else _TARGET_JSON
            % (*result.key, result.age_us(self.host_ns) / 1000, result.result.sequence)
        )
        selector = self.selector
        return (
            _VERDICT_LINE
            % (
                self.decision._value_,
                ",".join([_QUOTED_REASONS[reason] for reason in self.reasons]),
                _json_int(selector.source_id),
                _json_int(selector.result_type),
                _json_int(selector.id),
                self.host_ns,
                self.valid_until_ns,
                target,
            )
        ).encode()

    def to_dict(self) -> dict[str, Any]:
        result = self.result
        return {
            "type": "verdict",
            "decision": self.decision.value,
            "reasons": [r.value for r in self.reasons],
            "selector": self.selector.to_dict(),
            "host_ns": self.host_ns,
            "valid_until_ns": self.valid_until_ns,
            "target": None
            if result is None
            else {
                "source_id": result.key[0],
                "result_type": result.key[1],
                "id": result.key[2],
                "age_ms": result.age_us(self.host_ns) / 1000,
                "sequence": result.result.sequence,
            },
        }


_VERDICT_LINE: Final = (
    '{"type":"verdict","decision":"%s","reasons":[%s],'
    '"selector":{"source_id":%s,"result_type":%s,"id":%s},'
    '"host_ns":%d,"valid_until_ns":%d,"target":%s}\n'
)
# ``%r`` of a float is its ``repr``: what the JSON encoder writes for it.
_TARGET_JSON: Final = '{"source_id":%d,"result_type":%d,"id":%d,"age_ms":%r,"sequence":%d}'
_QUOTED_REASONS: Final = {reason: f'"{reason.value}"' for reason in HoldReason}


def _json_int(value: int | None) -> str:
    return "null" if value is None else f"{value:d}"


class _Watch:
    """A watched selector's index, so a verdict costs O(1) amortised in the number of keys.

    ``candidates`` holds the matching keys that may still be current, in arrival order (a
    plain dict, a key moved to the end by taking it out and putting it back: cheaper than an
    ``OrderedDict``'s ``move_to_end`` on the per-frame path). A
    result that is not current stays so until its key is updated (a TTL only runs out; lost
    flags, later "nothing tracked" frames, link breaks and resets are never undone), and an
    update re-appends the key: so a verdict pops non-current keys off the end for good.
    """

    __slots__ = ("candidates", "newest")

    def __init__(self) -> None:
        self.candidates: dict[ResultKey, None] = {}
        self.newest: ReceivedResult | None = None  # the newest matching result, current or not


class ResultStore:
    """Bounded: at most ``max_entries`` keys (QR hashes alone could make 65,536)."""

    def __init__(
        self,
        *,
        ttl_ms: float = DEFAULT_TTL_MS,
        ttl_ms_by_type: Mapping[int, float] | None = None,
        reset_hold_ms: float = DEFAULT_RESET_HOLD_MS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        if ttl_ms <= 0:
            raise ValueError(f"ttl_ms: expected > 0, got {ttl_ms!r}")
        self._ttl_ns = round(ttl_ms * 1e6)
        self._ttl_ns_by_type = {int(k): round(v * 1e6) for k, v in (ttl_ms_by_type or {}).items()}
        self._reset_hold_ns = round(reset_hold_ms * 1e6)
        self._max_entries = max_entries
        self._latest: dict[ResultKey, ReceivedResult] = {}  # in update order (as candidates)
        self._arrival: dict[ResultKey, int] = {}  # update count when the key was last stored
        self._negative_arrival: dict[int, int] = {}  # per source: newest "nothing tracked"
        self._last_reset_ns: dict[int, int] = {}
        # Sources whose reset no evaluation has judged yet (``judged``): the verdict evaluated
        # after the reset frame's read says ``device_reset`` however late after the read it
        # runs (live: a moment after; offline replay: at the read's time), so both agree.
        self._reset_unjudged: set[int] = set()
        self._break_arrival = 0  # update count at the latest link break: older is never current
        self._watches: dict[Selector, _Watch] = {}
        self._key_watches: dict[ResultKey, tuple[_Watch, ...]] = {}  # per key: watches it matches
        self._evicted = 0
        self._updates = 0
        # Sources whose sequence fell back without a reset lately (a second voice?), and the
        # results held for it or for a field off the protocol's scale (counted, by field).
        self._conflicts = SequenceConflicts()
        self._unsettled = 0
        self._invalid: dict[str, int] = {}

    def ttl_ns(self, result_type: int) -> int:
        return self._ttl_ns_by_type.get(result_type, self._ttl_ns)

    def ttls_ns(self) -> tuple[int, Mapping[int, int]]:
        """The TTL of every result type: the default and the exceptions (not to be changed)."""
        return self._ttl_ns, self._ttl_ns_by_type

    def shortest_ttl_ns(self) -> int:
        """The shortest TTL of any result type (the service paces its stale timer by it)."""
        return min([self._ttl_ns, *self._ttl_ns_by_type.values()])

    def sequence(self, source_id: int, event: SequenceEvent, rx_ns: int) -> bool:
        """Account a frame's sequence event (every frame but a duplicate, a late one too);
        ``True``: its source is in conflict (``SequenceConflicts``). A sign of conflict ends the
        source's earlier results at once: which of them were the board's is unknown."""
        if self._conflicts.observe(source_id, event, rx_ns):
            self._unsettled += 1
            if event is SequenceEvent.DISCONTINUITY or event is SequenceEvent.LATE:
                self._negative_arrival[source_id] = self._updates
            return True
        return False

    def update(
        self, received: ReceivedResult, key: ResultKey | None = None, held: bool = False
    ) -> bool:
        """Record the newest result for its key (arrival order: the board sends in order);
        ``key``: ``received.key``, when the caller has it already (the per-frame path).
        ``False``: the result ended its source's earlier results, and is never current itself.

        A frame that reports nothing tracked (lost, untracked or result_type NONE) may carry
        another key than the target it replaces (the board's "not detected" frame), so it
        also ends the currency of every earlier result from its source. So does a result of a
        source in conflict (``held``: ``sequence`` said so; which voice is the board's is
        unknown) and one with a field off the protocol's scale (it locates nothing the host
        can trust): the verdict says ``sequence_conflict`` and ``invalid_result``.
        """
        result = received.result
        source_id = result.source_id
        if key is None:
            key = (source_id, result.result_type, result.id)
        latest = self._latest
        self._updates = updates = self._updates + 1
        latest.pop(key, None)  # put back: the most recently updated, at the end
        latest[key] = received
        self._arrival[key] = updates
        acts = not reports_nothing(result)
        if held:
            acts = False
        elif acts:
            field_name = invalid(result)
            if field_name is not None:
                self._invalid[field_name] = self._invalid.get(field_name, 0) + 1
                acts = False
        if not acts:
            self._negative_arrival[source_id] = updates
        watches = self._key_watches.get(key)
        if watches is None:
            watches = self._key_watches[key] = tuple(
                w for selector, w in self._watches.items() if selects(selector, key)
            )
        for watch in watches:
            watch.newest = received
            candidates = watch.candidates
            candidates.pop(key, None)
            candidates[key] = None
        while len(latest) > self._max_entries:
            evicted = next(iter(latest))  # the least recently updated
            del latest[evicted]
            del self._arrival[evicted]
            self._forget_key(evicted)
            self._evicted += 1
        return acts

    def watch(self, selector: Selector) -> None:
        """Index ``selector`` so its verdicts cost O(1) however many keys are stored."""
        if selector in self._watches:
            return
        watch = self._watches[selector] = _Watch()
        for key, received in self._latest.items():
            if selects(selector, key):
                watch.candidates[key] = None
                watch.newest = received
        self._key_watches.clear()

    def link_break(self) -> None:
        """The link went down (or silent): nothing received so far may justify a PROCEED
        again; the board may have rebooted, moved or lost its target meanwhile."""
        self._break_arrival = self._updates

    def _forget_key(self, key: ResultKey) -> None:
        """``key`` left the store: drop it from the indexes."""
        self._key_watches.pop(key, None)
        for selector, watch in self._watches.items():
            watch.candidates.pop(key, None)
            if watch.newest is not None and watch.newest.key == key:
                # The newest remaining match, current or not (rare: a reset, or an eviction
                # of the least recently updated key).
                watch.newest = next(
                    (rr for k, rr in reversed(self._latest.items()) if selects(selector, k)), None
                )

    def device_reset(self, source_id: int, host_ns: int) -> None:
        """Forget a source's results: they belong to the board's previous life."""
        for key in [k for k in self._latest if k[0] == source_id]:
            del self._latest[key]
            del self._arrival[key]
            self._forget_key(key)
        self._negative_arrival.pop(source_id, None)
        self._last_reset_ns[source_id] = host_ns
        self._reset_unjudged.add(source_id)

    def judged(self) -> None:
        """Every watched verdict was evaluated: a reset's ``device_reset`` lasts its
        ``reset_hold_ms`` from here on."""
        self._reset_unjudged.clear()

    def is_current(self, received: ReceivedResult, now_ns: int) -> bool:
        """Tracked, not lost, younger than its TTL, mapped by a locked clock, received since
        the latest link break, and not followed by a frame from the same source that reported
        nothing tracked. A capture time mapped while the clock settled is the settling
        mapping's guess: a backlog read at once after a stall and a reset once made one 2.2 s
        old look 0.2 s old after the lock (red team, rt8)."""
        r = received.result
        arrival = self._arrival.get(received.key, 0)
        return (
            r.flags & _TRACKED_OR_LOST == _TRACKED
            and received.clock_status is _LOCKED
            and now_ns - received.reference_ns() <= self.ttl_ns(r.result_type)
            and arrival > self._negative_arrival.get(r.source_id, 0)
            and arrival > self._break_arrival
        )

    def _current_but_unlocked(self, received: ReceivedResult, now_ns: int) -> bool:
        """``is_current`` but for its clock: mapped while the clock was not locked."""
        if received.clock_status is _LOCKED:
            return False
        relabelled = received._replace(clock_status=_LOCKED)
        return self.is_current(relabelled, now_ns)

    def current(self, selector: Selector, now_ns: int) -> list[ReceivedResult]:
        """Matching results that may be acted on now, newest first."""
        return [
            rr
            for key, rr in reversed(self._latest.items())
            if selects(selector, key) and self.is_current(rr, now_ns)
        ]

    def latest(self) -> list[ReceivedResult]:
        return list(self._latest.values())

    def verdict(
        self,
        selector: Selector,
        now_ns: int,
        *,
        link_state: LinkState,
        clock_status: ClockStatus,
        hold_until_ns: int | None = None,
    ) -> LinkVerdict:
        """``hold_until_ns``: a HOLD's ``valid_until_ns`` (when the caller re-evaluates at the
        latest; default ``now_ns``). A PROCEED's is its target's stale time."""
        reasons: list[HoldReason] = []
        link_reason = _LINK_REASONS.get(link_state)
        if link_reason is not None:
            reasons.append(link_reason)
        if clock_status is ClockStatus.JUMPED or clock_status is ClockStatus.OUTLIER:
            reasons.append(HoldReason.CLOCK_JUMP)
        elif clock_status is not ClockStatus.LOCKED:
            reasons.append(HoldReason.CLOCK_NOT_LOCKED)
        if any(
            now_ns - t <= self._reset_hold_ns or s in self._reset_unjudged
            for s, t in self._last_reset_ns.items()
            if selector.source_id is None or s == selector.source_id
        ):
            reasons.append(HoldReason.DEVICE_RESET)
        if self._conflicts.active(selector.source_id, now_ns):
            reasons.append(HoldReason.SEQUENCE_CONFLICT)
        newest, target = self._newest_and_target(selector, now_ns)
        if newest is None:
            reasons.append(HoldReason.NO_DATA)
        elif target is None and self._current_but_unlocked(newest, now_ns):
            if HoldReason.CLOCK_NOT_LOCKED not in reasons and HoldReason.CLOCK_JUMP not in reasons:
                reasons.append(HoldReason.CLOCK_NOT_LOCKED)  # mapped before the lock
        elif (
            target is None
            and not reports_nothing(newest.result)
            and invalid(newest.result) is not None
        ):
            reasons.append(HoldReason.INVALID_RESULT)
        elif target is None:
            fresh = (
                now_ns - newest.reference_ns() <= self.ttl_ns(newest.result.result_type)
                and self._arrival.get(newest.key, 0) > self._break_arrival
            )
            reasons.append(HoldReason.LOST if fresh else HoldReason.STALE)
        if reasons or target is None:
            return LinkVerdict(
                Decision.HOLD,
                tuple(reasons),
                selector,
                now_ns,
                now_ns if hold_until_ns is None else max(now_ns, hold_until_ns),
            )
        stale_at_ns = target.reference_ns() + self.ttl_ns(target.result.result_type)
        return LinkVerdict(Decision.PROCEED, (), selector, now_ns, stale_at_ns, target)

    def _newest_and_target(
        self, selector: Selector, now_ns: int
    ) -> tuple[ReceivedResult | None, ReceivedResult | None]:
        """The newest matching result, and the newest current one (the target)."""
        watch = self._watches.get(selector)
        if watch is None:  # not watched: a walk over every key
            matching = [rr for key, rr in reversed(self._latest.items()) if selects(selector, key)]
            target = next((rr for rr in matching if self.is_current(rr, now_ns)), None)
            return (matching[0] if matching else None), target
        candidates, latest = watch.candidates, self._latest
        while candidates:
            key = next(reversed(candidates))
            received = latest[key]
            if self.is_current(received, now_ns):
                return watch.newest, received
            del candidates[key]  # not current now means not current until updated
        return watch.newest, None

    def stats(self) -> dict[str, Any]:
        return {
            "entries": len(self._latest),
            "updates": self._updates,
            "evicted": self._evicted,
            "unsettled": self._unsettled,
            "invalid": dict(self._invalid),
        }
