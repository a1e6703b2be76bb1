"""The one JSON-line encoding (``gizmo_host.jsonl``): compact, strict, and the same bytes for
every writer, which replay's byte-equality with live rests on."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gizmo_host.jsonl import encode_line, json_text

ROOT = Path(__file__).resolve().parents[2]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(documents)
def test_a_line_is_compact_json_of_the_document_and_one_newline(document: object) -> None:
    line = encode_line({"type": "x", "value": document})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"type": "x", "value": document}
    assert (
        line == json.dumps({"type": "x", "value": document}, separators=(",", ":")).encode() + b"\n"
    )


def test_a_non_finite_number_from_a_peer_is_null_never_a_non_json_token() -> None:
    text = json_text({"a": math.nan, "b": [1.5, -math.inf], "c": {"d": 2, "e": math.inf}})
    assert text == '{"a":null,"b":[1.5,null],"c":{"d":2,"e":null}}'


def test_no_other_module_of_ours_configures_a_json_encoder() -> None:
    """One encoder: every JSON line (stdout, sockets, UDP, captures) comes from gizmo_host.jsonl;
    ``indent=`` documents (a single report for a person) are not lines."""
    offenders = []
    for package in ("gizmo_host", "gizmo_core", "rfly_link", "fusion"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "gizmo_host" / "jsonl.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if "JSONEncoder(" in line or ("json.dumps(" in line and "indent=" not in line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}")
    allowed = {"gizmo_host/zenoh/config.py", "gizmo_host/foxglove/schemas.py"}  # not lines
    assert [o for o in offenders if o.split(":")[0] not in allowed] == []
