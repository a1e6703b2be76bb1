"""Targets tracked over time: a gated IMM estimator with velocity and an honest covariance.

Modules: ``motion`` (the IMM of a constant-velocity and a coordinated-turn mode), ``noise``
(a measurement's covariance), ``assignment`` (the exact minimum-cost matching), ``tracks``
(one track and its lifecycle), ``association`` (one frame into a key's tracks: gating,
assignment, hits, misses, births, succession), ``history`` (one key's frames in the window),
``tracker`` (the tracks of every key, late measurements fused exactly by replay) and
``config`` (``[tracking]``).
"""

from .config import TrackingConfig
from .tracker import Tracker
from .tracks import Track, TrackStatus

__all__ = ["Track", "TrackStatus", "Tracker", "TrackingConfig"]
