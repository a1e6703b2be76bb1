"""``python -m gizmo_host.cli``."""

import sys

from gizmo_host.cli.main import main

sys.exit(main())
