"""Geometry both sides share, as a leaf: numpy and the standard library only, nothing from
``fusion``, ``rfly_link`` or ``gizmo_host``.

- :mod:`hil_geometry.rotations`: vectors and quaternions on float tuples (NED/FRD, Z-Y-X Euler
  angles), which ``fusion.geometry`` re-exports and ``rfly_link`` uses without importing the
  world model;
- :mod:`hil_geometry.pinhole`: the simulator's camera, written from RflySim's vision-sensor
  conventions as numpy ``K [R|t]``, so the accuracy truth the HIL tests and the demo compare the
  host against was not computed by the host's own camera model.
"""
