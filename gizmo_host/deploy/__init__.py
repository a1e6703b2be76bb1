"""Deployment: install, uninstall, the udev rule, sd_notify, diagnostics and data."""
