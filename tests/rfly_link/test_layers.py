"""rfly_link's layers, read from its import statements: the codecs import no I/O, the
subpackages form no cycle, nothing comes from gizmo_host or fusion (geometry comes from the
leaf package hil_geometry)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "rfly_link"
IO_MODULES = frozenset({"asyncio", "socket", "threading", "selectors", "serial", "serialx"})
# The I/O edge: everything else is sans-I/O and may not reach it.
EDGE = ("rfly_link.io",)


def module_names() -> dict[str, Path]:
    names = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


MODULES = module_names()


def imports_of(name: str) -> set[str]:
    """Every module ``name`` imports at its top level or in functions (absolute names)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            for alias in node.names:  # ``from rfly_link import wire`` imports a submodule
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    internal = {f for f in found if f.startswith("rfly_link")}
    # Importing a.b.c runs a/__init__ and a/b/__init__ first.
    for module in list(internal):
        parts = module.split(".")
        internal.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return (found - {f for f in found if f.startswith("rfly_link")}) | internal


GRAPH = {name: imports_of(name) for name in MODULES}


def reach(name: str) -> set[str]:
    seen: set[str] = set()
    todo = [name]
    while todo:
        for nxt in GRAPH.get(todo.pop(), set()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def is_edge(name: str) -> bool:
    return any(name == e or name.startswith(e + ".") for e in EDGE)


def test_the_codecs_reach_no_io() -> None:
    sans_io = [n for n in MODULES if not is_edge(n)]
    assert {"rfly_link.wire", "rfly_link.dispatch", "rfly_link.reassembly.reassembler"} <= set(
        sans_io
    )
    for name in sans_io:
        reached = reach(name)
        io = {r.split(".")[0] for r in reached} & IO_MODULES
        assert not io, f"{name} imports {sorted(io)}"
        edge = sorted(r for r in reached if is_edge(r))
        assert not edge, f"{name} imports the I/O edge: {edge}"


def test_the_io_edge_is_where_the_sockets_are() -> None:
    # The check above would pass vacuously if the graph missed imports.
    assert "socket" in GRAPH["rfly_link.io.receiver"]
    assert "asyncio" in GRAPH["rfly_link.io.handoff"]
    assert "rfly_link.io" in reach("rfly_link.io.group")


def component(name: str) -> str:
    """The subpackage or top-level module of ``rfly_link`` that ``name`` belongs to."""
    return ".".join(name.split(".")[:2])


def test_no_cycle_between_subpackages_and_modules() -> None:
    edges: dict[str, set[str]] = {}
    for name, imported in GRAPH.items():
        if name == "rfly_link":  # the package re-exports from everywhere; nothing imports it
            continue
        for other in imported:
            if other.startswith("rfly_link.") and component(other) != component(name):
                edges.setdefault(component(name), set()).add(component(other))
    try:
        tuple(TopologicalSorter(edges).static_order())
    except CycleError as exc:
        raise AssertionError(f"import cycle between parts of rfly_link: {exc.args[1]}") from None
    assert all("rfly_link" not in deps for deps in edges.values())


def test_nothing_from_gizmo_host_or_fusion() -> None:
    """gizmo_host sits on rfly_link, so rfly_link never imports it. The protocol library does
    not import the world model either: the one quaternion and rotation module is
    hil_geometry.rotations (fusion.geometry re-exports it). (The stand-in,
    gizmo_host.rigs.rflysim, has an import-linter contract of its own: no fusion, so its ground
    truth is not fusion's.)"""
    for name, imported in GRAPH.items():
        bad = sorted(i for i in imported if i.split(".")[0] in ("gizmo_host", "fusion"))
        assert not bad, f"{name} imports {bad}"
    assert "hil_geometry.rotations" in GRAPH["rfly_link.coordinates"]  # not vacuous


def test_importing_rfly_link_and_its_stand_in_loads_no_fusion_module() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, rfly_link, rfly_link.coordinates, gizmo_host.rigs.rflysim, "
        "gizmo_host.cli.sim; print(sorted(m for m in sys.modules if m.split('.')[0] == 'fusion'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_importing_rfly_link_starts_no_io() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, rfly_link, rfly_link.sensors, rfly_link.reassembly, rfly_link.config_json; "
        "print(sorted(m for m in ('asyncio', 'socket', 'rfly_link.io') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
