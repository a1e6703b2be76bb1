"""``gizmo-host certify``: the HIL certification run (fault matrix x scenarios x seeds)."""
