"""Errors of the fusion package.

::

    FusionError
    └── InvalidInput (ValueError)   an input value was built from bad numbers: names the field

A ``[camera]`` or ``[world]`` setting that is wrong is the one ``gizmo_core.ConfigError``,
naming the key. Both are local errors: the caller built a bad value. The world model itself
never raises on a well-formed input; what it cannot use it counts (``WorldModel.stats()``).
"""

from __future__ import annotations


class FusionError(Exception):
    """Base of every error raised by ``fusion``."""


class InvalidInput(FusionError, ValueError):
    """An input value's field is out of range, e.g.
    ``PoseSample.quaternion_wxyz: expected a unit quaternion, got (0, 0, 0, 0)``."""
