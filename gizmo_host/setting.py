"""One settings row (``Setting``), the whole-table rules (``Rule``), and the one checker.

Every settings table of the project is made of these rows: the host's
(``gizmo_host.app.settings``), the emulator's ``[emulate]`` and its fault timelines
(``gizmo_host.rigs.board.emulate_settings``, ``faults``); each table's flags, the document its
flags set and its docs table come from its rows alone (``add_flags``, ``overrides_from``,
``markdown_table``). A value is checked by its row only, and an error is one line naming
the key and the value expected (``serial.baudrate: expected an integer, got 'fast'``), so the
same mistake reads the same wherever it is made. A leaf: it imports nothing of ours but the
error type, so every layer can use it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.tomlfile import display_name

MAX_DISPLAYED_CHARS = 60
LIVE = frozenset({"run", "record"})  # the commands that read a serial port

# How an error message names a unit: "serial.silent_after_s: expected a number of seconds ..."
_PHRASES = {
    "s": "a number of seconds",
    "ms": "a number of milliseconds",
    "ppm": "a number of ppm",
    "bytes": "a number of bytes",
    "Hz": "a rate in Hz",
    "deg": "an angle in degrees",
    "deg/s": "a rate in degrees per second",
    "m": "a distance in metres",
}


@dataclass(frozen=True, slots=True)
class Setting:
    """One key of a settings file. ``kind``: int, float, bool, str, table (of numbers),
    list (of integers) or triple (three numbers); a table's or list's items are each checked
    by the range, a triple's numbers by the range or each by its own of ``limits``.
    ``low``/``high`` bound a number (``open_low``/``open_high``: the bound itself excluded;
    ``off``: 0 also accepted, meaning off); ``flag`` sets it on the command line of
    ``commands``."""

    section: str
    name: str
    kind: str
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    unit: str = ""
    open_low: bool = False
    off: bool = False
    open_high: bool = False  # ``high`` itself excluded
    optional: bool = False  # None (unset) is a value
    flag: str | None = None
    aliases: tuple[str, ...] = ()
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    commands: frozenset[str] = LIVE
    what: str | None = None  # the error message's phrase, when the unit's is not right
    limits: tuple[tuple[float, float], ...] = ()  # a triple's own range per number

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def dest(self) -> str:
        return self.key.replace(".", "__")

    def accepts(self, value: float) -> bool:
        if self.low is None or self.high is None:
            return True
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return (above and below) or (self.off and value == 0)

    def describe(self) -> str:
        """The expected value, as an error message says it."""
        what = self.what or (
            "an integer" if self.kind == "int" else _PHRASES.get(self.unit, "a number")
        )
        if self.low is None or self.high is None:
            return what
        low = number_text(self.low)
        high = number_text(self.high)
        low = f"more than {low}" if self.open_low else f"from {low}"
        high = f"less than {high}" if self.open_high else high
        text = f"{what} {low} to {high}"
        return f"0 (off) or {text}" if self.off else text

    def range_text(self) -> str:
        if self.choices:
            return " / ".join(self.choices)
        if self.limits:
            return ", ".join(f"[{number_text(lo)}, {number_text(hi)}]" for lo, hi in self.limits)
        if self.low is None or self.high is None:
            return ""
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        text = f"{left}{number_text(self.low)}, {number_text(self.high)}{right}"
        return f"0 or {text}" if self.off else text

    def check(self, value: Any, key: str | None = None, *, text: bool = False) -> Any:
        """``value`` of the right type and within range, else a ConfigError naming ``key``
        (the row's own by default). ``text``: a flag's string is parsed first."""
        return check_setting(self, key or self.key, value, text=text)


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule over a whole table (one-of, cross-key), declared next to the rows: ``test``
    gets the table as written and returns the error line, or None when it holds."""

    section: str
    name: str  # what the rule says, for docs/settings.md ("exactly one of hfov_deg, fx_px")
    key: str  # the key an error names (a flag that set it is named with it)
    test: Callable[[Mapping[str, Any]], str | None]

    def check(self, table: Mapping[str, Any]) -> None:
        problem = self.test(table)
        if problem is not None:
            raise ConfigError(problem, self.key)


def exactly_one(section: str, *names: str) -> Rule:
    def test(table: Mapping[str, Any]) -> str | None:
        given = [n for n in names if table.get(n) is not None]
        if len(given) == 1:
            return None
        got = "neither" if not given else ("both" if len(names) == 2 else ", ".join(given))
        return f"{section}: expected exactly one of {' or '.join(names)}, got {got}"

    return Rule(section, f"exactly one of {', '.join(names)}", section, test)


def at_most_one(section: str, a: str, b: str) -> Rule:
    def test(table: Mapping[str, Any]) -> str | None:
        if table.get(a) is not None and table.get(b) is not None:
            return f"{section}: expected at most one of {a} or {b}, got both"
        return None

    return Rule(section, f"at most one of {a}, {b}", section, test)


def only_with(section: str, name: str, other: str, hint: str = "") -> Rule:
    def test(table: Mapping[str, Any]) -> str | None:
        if table.get(name) is not None and table.get(other) is None:
            return f"{section}.{name}: expected only with {other}{hint}"
        return None

    return Rule(section, f"{name} only with {other}", f"{section}.{name}", test)


def required(section: str, name: str, expected: str) -> Rule:
    def test(table: Mapping[str, Any]) -> str | None:
        if table.get(name) is None:
            return f"{section}.{name}: expected {expected}, got nothing"
        return None

    return Rule(section, f"{name} is required", f"{section}.{name}", test)


def not_above(section: str, low: str, high: str) -> Rule:
    def test(table: Mapping[str, Any]) -> str | None:
        lo, hi = table.get(low), table.get(high)
        if lo is not None and hi is not None and lo > hi:
            return f"{section}.{high}: expected >= {section}.{low} ({lo:g}), got {hi:g}"
        return None

    return Rule(section, f"{low} <= {high}", f"{section}.{high}", test)


def check_rules(rules: Iterable[Rule], section: str, table: Mapping[str, Any]) -> None:
    for rule in rules:
        if rule.section == section:
            rule.check(table)


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def show(value: Any) -> str:
    """``repr`` cut to a readable length (a config value can be a whole table)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits()
        text = f"an integer of {value.bit_length()} bits"
    if len(text) > MAX_DISPLAYED_CHARS:
        text = text[: MAX_DISPLAYED_CHARS - 3] + "..."
    return text


def fail(key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{key}: expected {expected}, got {show(value)}", key)


def _from_text(value: str, kind: str) -> Any:
    """A flag's text as the kind's value (unchanged when it does not parse: the type check
    then names it)."""
    try:
        if kind == "int":
            return int(value, 0)
        if kind == "float":
            return float(value)
    except ValueError:
        return value
    if kind == "bool" and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    return value


def check_type(key: str, value: Any, annotation: str) -> Any:
    """``value`` as the type ``annotation`` names (a dataclass field's), else a ConfigError."""
    if value is None and "None" in annotation:
        return None
    if annotation.startswith("bool"):
        if isinstance(value, bool):
            return value
        raise fail(key, "true or false", value)
    if annotation.startswith("int"):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise fail(key, "an integer", value)
    if annotation.startswith("float"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an int too large for a float
                number = math.inf
            if math.isfinite(number):
                return number
        raise fail(key, "a finite number", value)
    if annotation.startswith("str"):
        if isinstance(value, str):
            return value
        raise fail(key, "a string", value)
    return value


def check_setting(setting: Setting, key: str, value: Any, *, text: bool = False) -> Any:
    """``value`` of the right type and within ``setting``'s range, else a ConfigError."""
    if value is None and setting.optional:
        return None
    if setting.kind == "triple":
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            raise fail(key, "a list of 3 numbers", value)
        limits = setting.limits or ((setting.low, setting.high),) * 3
        return tuple(
            check_setting(
                dataclasses.replace(setting, kind="float", low=lo, high=hi, limits=()),
                f"{key}[{i}]",
                v,
                text=text,
            )
            for i, (v, (lo, hi)) in enumerate(zip(value, limits, strict=True))
        )
    raw = value  # an error shows the value as written
    # a table or list row checks one item of its table or list, by the row's range
    kind = {"table": "float", "list": "int"}.get(setting.kind, setting.kind)
    if text and isinstance(value, str):
        value = _from_text(value, kind)
    annotation = kind if kind in _TYPE_PHRASES else None
    try:
        checked = value if annotation is None else check_type(key, value, annotation)
    except ConfigError:
        raise fail(key, _TYPE_PHRASES.get(annotation or "", "a value"), raw) from None
    number = isinstance(checked, (int, float)) and not isinstance(checked, bool)
    if number and not setting.accepts(checked):
        raise fail(key, setting.describe(), raw)
    return checked


_TYPE_PHRASES = {
    "int": "an integer",
    "float": "a finite number",
    "bool": "true or false",
    "str": "a string",
}


def check_keys(where: str, values: Mapping[str, Any], allowed: Set[str] | Iterable[str]) -> None:
    """An unknown key is an error that lists the known ones (a typo never passes silently)."""
    known = list(allowed) if isinstance(allowed, (list, tuple)) else sorted(allowed)
    for name in values:
        if name not in known:
            key = f"{where}.{display_name(name)}"  # a key with a newline stays one line (rt59)
            raise ConfigError(f"{key}: unknown key; expected one of {', '.join(known)}", key)


# -- a table's flags and its docs table ----------------------------------------------------------

_UNIT_METAVAR = {"s": "S", "ms": "MS", "Hz": "HZ"}


def add_flags(
    parser: argparse.ArgumentParser,
    rows: Iterable[Setting],
    command: str,
    groups: Mapping[str, str] | None = None,
) -> None:
    """The flags of ``command``'s rows, their help from the rows; a section in ``groups`` gets
    an argument group of that title."""
    made: dict[str, argparse._ArgumentGroup] = {}
    for s in rows:
        if s.flag is None or command not in s.commands:
            continue
        target: Any = parser
        title = (groups or {}).get(s.section)
        if title is not None:
            if s.section not in made:
                made[s.section] = parser.add_argument_group(title)
            target = made[s.section]
        off = "turn off: " if s.kind == "bool" and s.default else ""
        help_text = f"{off}{s.doc} ([{s.section}] {s.name}"
        help_text += ")" if s.default is None else f", default {_shown(s.default)})"
        if s.kind == "bool":  # a flag that turns the default off
            target.add_argument(s.flag, dest=s.dest, action="store_const", const=not s.default,
                                help=help_text)  # fmt: skip
            continue
        kwargs: dict[str, Any] = {"dest": s.dest, "help": help_text}
        if s.choices:
            kwargs["choices"] = s.choices
        else:
            kwargs["metavar"] = s.metavar or _UNIT_METAVAR.get(s.unit, "VALUE")
        kwargs["type"] = {"int": int, "float": float}.get(s.kind, str)
        target.add_argument(s.flag, *s.aliases, **kwargs)


def overrides_from(args: argparse.Namespace, rows: Iterable[Setting]) -> dict[str, dict[str, Any]]:
    """The settings the flags of ``rows`` set, as a settings document (unset flags left out)."""
    out: dict[str, dict[str, Any]] = {}
    for s in rows:
        value = getattr(args, s.dest, None)
        if value is not None:
            out.setdefault(s.section, {})[s.name] = value
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return number_text(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {number_text(v)}" for k, v in value.items()) or "{}"
    if isinstance(value, tuple):
        return "[" + ", ".join(number_text(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else str(value)


def markdown_table(rows: Iterable[Setting], rules: Iterable[Rule] = ()) -> str:
    """The docs' table of ``rows`` (a flag of another command than ``run`` names it), then
    ``rules``."""
    lines = [
        "| key | type | default | range | unit | flag | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        flag = f"`{s.flag}`" if s.flag else ""
        if flag and "run" not in s.commands:  # another command's flag: name the command
            flag = f"`{'/'.join(sorted(s.commands))} {s.flag}`"
        cells = [f"`{s.key}`", s.kind, _shown(s.default), s.range_text(), s.unit, flag, s.doc]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    rules = list(rules)
    if rules:
        lines.append("")
        lines.append("Rules over a whole table:")
        lines.extend(f"- `[{r.section}]`: {r.name}" for r in rules)
    return "\n".join(lines) + "\n"
