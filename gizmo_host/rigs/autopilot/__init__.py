"""The autopilot's side of MAVLink, played: a PX4/ArduPilot-like stand-in on its own boot
clock, and a vehicle that lands on the LANDING_TARGET messages the host sends."""
