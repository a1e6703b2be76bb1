"""Files installed by ``gizmo-host install``: udev rules, the systemd unit, a default config."""
