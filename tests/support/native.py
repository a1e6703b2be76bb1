"""For the few tests that need a class interpreted: they subclass it or patch its methods,
which a mypyc-compiled class refuses. They skip when it runs compiled; the interpreted run
(CI's Python 3.10, ``GIZMO_HOST_INTERPRETED=1``) keeps them."""

from types import ModuleType

import pytest

from gizmo_core.native import is_compiled


def interpreted_only(module: ModuleType, why: str) -> pytest.MarkDecorator:
    """Skip where ``module`` runs compiled; ``why``: what the test does to its classes."""
    return pytest.mark.skipif(
        is_compiled(module), reason=f"{why}: {module.__name__} runs compiled here"
    )
