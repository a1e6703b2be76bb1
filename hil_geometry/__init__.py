"""Geometry for the hardware-in-the-loop side (the simulator stand-in and the board emulator).

A leaf: numpy and the standard library only, nothing from ``fusion``, ``rfly_link`` or
``gizmo_host``. :mod:`hil_geometry.pinhole` is the simulator's camera, written from RflySim's
vision-sensor conventions as ``K [R|t]``, so the accuracy truth the HIL tests and the demo
compare the host against was not computed by the host's own camera model.
"""
