"""Fixtures shared by the live-link tests."""

import pytest


@pytest.fixture
def link_path(tmp_path):
    """Where the emulated board's pty is published, as udev publishes /dev/gizmo0."""
    return str(tmp_path / "gizmo0")
