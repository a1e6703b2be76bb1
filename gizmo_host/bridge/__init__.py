"""The world bridge: the live link's results and RflySim's streams as fusion inputs, and the
service that runs the world model and publishes its snapshots (``WorldService``)."""
