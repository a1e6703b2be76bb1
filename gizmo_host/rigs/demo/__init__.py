"""``gizmo-host demo``: the whole loop with no hardware, its scenes, views and summary."""
