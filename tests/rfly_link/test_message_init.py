"""Every RflySim message is made by ``WireMessage``'s own ``__init__``, ``__setattr__`` and
``__delattr__`` (``rfly_link.messages.base.message_dataclass``: 22 ms of every command's
start-up saved). The oracle is the dataclass each class is declared as: a twin of it made by
``dataclasses.dataclass(frozen=True, slots=True)`` itself, whose generated methods the
project did not write. Both must take the same arguments, refuse the same ones, keep the same
values and stay as frozen."""

from __future__ import annotations

import copy
import dataclasses
import functools
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfly_link import messages as m
from tests.rfly_link.test_codecs import ALL_MESSAGES, message_strategy

# What a subclass may declare besides its fields, carried over to its twin.
_OWN = ("FIXED", "ANY_CHECKSUM", "__post_init__", "_derived")


@functools.cache
def twin(cls: type[m.WireMessage]) -> type[m.WireMessage]:
    """``cls`` declared again, made by the standard library's dataclass."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    namespace: dict[str, Any] = {
        "__annotations__": {f.name: f.type for f in fields},  # inherited ones too
        "__module__": __name__,
        "__qualname__": f"Twin{cls.__name__}",
    }
    namespace.update((f.name, f.default) for f in fields)
    for declared in reversed(cls.__mro__[: cls.__mro__.index(m.WireMessage)]):
        namespace.update(
            (name, declared.__dict__[name]) for name in _OWN if name in declared.__dict__
        )
    made = dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)(
        type(f"Twin{cls.__name__}", (m.WireMessage,), namespace)
    )
    return m.wire_message(cls.LAYOUT, *cls.CHECKSUMS)(made)


def values(message: m.WireMessage) -> tuple[Any, ...]:
    return tuple(getattr(message, name) for name in message.LAYOUT.names)


def outcome(make: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What a construction gives: its values, or the kind of error it raised."""
    try:
        return ("made", values(make(*args, **kwargs)))
    except (TypeError, ValueError) as exc:
        return ("refused", type(exc))


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_made_as_the_declared_dataclass_would_make_it(
    cls: type[m.WireMessage], data: st.DataObject
) -> None:
    wanted = values(data.draw(message_strategy(cls)))
    names = cls.LAYOUT.names
    split = data.draw(st.integers(0, len(names)))
    named = data.draw(st.sets(st.sampled_from(names[split:]))) if split < len(names) else set()
    args = wanted[:split]
    kwargs = {name: wanted[names.index(name)] for name in named}
    assert outcome(cls, *args, **kwargs) == outcome(twin(cls), *args, **kwargs)
    assert outcome(cls, *args, **kwargs)[0] == "made"
    # Refused alike: a positional argument too many, a name twice, a name not a field, a
    # value the checks refuse (an array one short)
    assert outcome(cls, *wanted, 0) == outcome(twin(cls), *wanted, 0) == ("refused", TypeError)
    if split:
        again = {names[0]: wanted[0]}
        assert outcome(cls, *args, **again) == outcome(twin(cls), *args, **again)
        assert outcome(cls, *args, **again)[0] == "refused"
    assert outcome(cls, not_a_field=1) == outcome(twin(cls), not_a_field=1)
    arrays = [f for f in cls.LAYOUT.fields if f.is_array]
    if arrays:
        short = {arrays[0].name: (0,) * (arrays[0].count - 1)}
        assert outcome(cls, **short) == outcome(twin(cls), **short) == ("refused", ValueError)


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_frozen_copied_pickled_and_replaced_like_the_dataclass(
    cls: type[m.WireMessage], data: st.DataObject
) -> None:
    message = data.draw(message_strategy(cls))
    name = cls.LAYOUT.names[-1]
    for action in (
        lambda x: setattr(x, name, getattr(x, name)),
        lambda x: delattr(x, name),
        lambda x: setattr(x, "not_a_field", 1),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            action(message)
    assert values(message) == values(twin(cls)(*values(message)))
    for copied in (copy.copy(message), copy.deepcopy(message)):
        assert copied == message and type(copied) is cls
    assert pickle.loads(pickle.dumps(message)) == message
    other = data.draw(message_strategy(cls))
    changed = dataclasses.replace(message, **{name: getattr(other, name)})
    assert values(changed) == (*values(message)[:-1], getattr(other, name))
