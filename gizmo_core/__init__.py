"""The words every package speaks: the verdict's vocabulary, the link's states and the one
configuration error.

A leaf (the standard library only, no I/O), so that the per-frame pipeline
(``gizmo_host.stream``), the world model (``fusion``) and RflySim's protocols (``rfly_link``)
share them without importing each other: ``vocabulary`` (``Decision``, ``HoldReason``,
``Selector``, ``LinkState``) and ``errors`` (``ConfigError``, and ``MissingExtra``: one wording
for an optional extra that is not installed).
"""

from gizmo_core.errors import ConfigError, MissingExtra
from gizmo_core.vocabulary import Decision, HoldReason, LinkState, Selector

__all__ = ["ConfigError", "Decision", "HoldReason", "LinkState", "MissingExtra", "Selector"]
