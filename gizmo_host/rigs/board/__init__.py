"""The Gizmo board without the board: frame numbering, device clock, faults and a pty."""

from gizmo_host.rigs.board.board import LOST_RELATIVE, TRACKED_RELATIVE, BoardModel
from gizmo_host.rigs.board.pty import PtyBoard, play

__all__ = ["LOST_RELATIVE", "TRACKED_RELATIVE", "BoardModel", "PtyBoard", "play"]
