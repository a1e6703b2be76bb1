#!/usr/bin/env python3
"""Decode Gizmo VISION_RESULT v1 frames from hex text; the same tool as ``gizmo-decode``.

Kept at the path the board's documentation names. Works from a source checkout without
installing: it puts the repository root on the import path.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gizmo_host.cli.decode import main

if __name__ == "__main__":
    sys.exit(main())
