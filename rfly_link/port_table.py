"""docs/rflysim.md's table of every supported structure, its port and direction, from the port map.

``python -m rfly_link.port_table`` prints it; a test checks that docs/rflysim.md's copy is current.
"""

from __future__ import annotations

from rfly_link import messages as m
from rfly_link.ports import MESSAGE_ROLES, ROLE_INFO, PortRole


def _checksum_text(cls: type[m.WireMessage]) -> str:
    if not cls.CHECKSUMS:
        return "none (port only)"
    if cls.ANY_CHECKSUM:
        return f"any (default {cls.CHECKSUMS[0]}; port only)"
    runs: list[list[int]] = []
    for value in sorted(cls.CHECKSUMS):
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    return ", ".join(f"{r[0]}..{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def message_table() -> str:
    """docs/rflysim.md's table of every supported structure: one row per (structure, port role)."""
    order = list(PortRole)
    rows = sorted(
        ((role, cls) for cls, roles in MESSAGE_ROLES.items() for role in roles),
        key=lambda rc: (order.index(rc[0]), rc[1].LAYOUT.size, rc[1].__name__),
    )
    lines = [
        "| port | direction | message | bytes | checksum | what |",
        "|---|---|---|---|---|---|",
    ]
    for role, cls in rows:
        info = ROLE_INFO[role]
        what = (cls.__doc__ or "").strip().splitlines()[0].rstrip(".").replace(":class:", "")
        lines.append(
            f"| {info.ports} | {info.sender} → {info.receiver} | `{cls.__name__}` "
            f"| {cls.LAYOUT.size} | {_checksum_text(cls)} | {what} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m rfly_link.port_table
    print(message_table(), end="")
