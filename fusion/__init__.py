"""World model joining Gizmo UART results with RflySim sensor and odometry streams."""
