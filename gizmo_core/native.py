"""Which modules run compiled, and whether each is still its source.

``python3 dev.py`` compiles the per-frame modules with mypyc where a C compiler is at hand
(``tools/native_build.py``; docs/development.md): the same source, about a third less CPU a frame;
and the tracker's filter steps with Cython (``fusion/tracking/imm_kernel.pyx``, in place of
their numpy forms).
A compiled module is imported in place of its ``.py``, so one built from an older source would
run old code silently. The build records each source's SHA-256 in a manifest; ``stale_modules``
compares, and the commands and the tests refuse to run on a stale build.
"""

from __future__ import annotations

import hashlib
import json
import sysconfig
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent  # the directory holding the packages
EXTENSION = str(sysconfig.get_config_var("EXT_SUFFIX") or ".so")  # this interpreter's


def manifest_path(root: Path = ROOT) -> Path:
    """The build's record of what it compiled, for this interpreter (its ABI in the name)."""
    return root / "build" / f"native{EXTENSION.removesuffix('.so')}.json"


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compiled_sources(root: Path = ROOT) -> dict[str, str]:
    """The sources compiled for this interpreter (relative path -> SHA-256 at the build);
    empty when nothing is."""
    try:
        recorded = json.loads(manifest_path(root).read_text())
    except (OSError, ValueError):
        return {}
    sources = recorded.get("sources") if isinstance(recorded, dict) else None
    return {str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {}


def stale_modules(root: Path = ROOT) -> list[str]:
    """The compiled modules (their sources' relative paths) whose source changed since the
    build, or that no build recorded: each would run code its ``.py`` no longer says."""
    recorded = compiled_sources(root)
    stale = []
    for extension in _extensions(root):
        source = _source(extension)
        relative = source.relative_to(root).as_posix()
        want = recorded.get(relative)
        if want is None or not source.exists() or source_digest(source) != want:
            stale.append(relative)
    return stale


def _source(extension: Path) -> Path:
    """The source an extension was built from: its ``.py`` (mypyc's), else its ``.pyx``
    (Cython's: the tracker's filter steps)."""
    stem = extension.name.removesuffix(EXTENSION)
    source = extension.with_name(stem + ".py")
    return source if source.exists() else extension.with_name(stem + ".pyx")


def _extensions(root: Path) -> list[Path]:
    """This interpreter's extension modules among the project's packages (mypyc's), but
    their shared runtime."""
    found: list[Path] = []
    for package in ("gizmo_core", "gizmo_host", "fusion", "rfly_link", "hil_geometry"):
        found.extend((root / package).rglob(f"*{EXTENSION}"))
    # mypyc's runtime, which every compiled module imports, has no source of its own
    return sorted(p for p in found if not p.name.endswith(f"__mypyc{EXTENSION}"))


def build_kind(root: Path = ROOT) -> str:
    """How the tree at ``root`` runs, for a benchmark's header."""
    extensions = _extensions(root)
    cython = sum(_source(e).suffix == ".pyx" for e in extensions)
    mypyc = len(extensions) - cython
    if not extensions:
        return "interpreted"
    return f"compiled with mypyc ({mypyc} modules)" + (f" and Cython ({cython})" if cython else "")


def is_compiled(module: ModuleType) -> bool:
    """Whether ``module`` was imported from a compiled extension (its classes then take no
    monkeypatched methods: a test that patches one says so)."""
    return str(getattr(module, "__file__", "")).endswith(EXTENSION)


def stale_message(stale: list[str]) -> str:
    """One line for a user: what is stale and the way out."""
    shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
    return (
        f"compiled modules older than their source: {shown}; run `python3 dev.py env` to "
        "rebuild them (or GIZMO_HOST_INTERPRETED=1 python3 dev.py env to run interpreted)"
    )
