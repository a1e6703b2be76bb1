"""``gizmo-host doctor``: diagnose a live installation in seconds and say what to do.

Two halves. :mod:`.gather` (with :mod:`.stream` and :mod:`.probes`) collects facts from the
machine: ``/sys``, ``/proc``, ``/etc`` and ``/dev`` under an injectable root, the serial stream
read for a few seconds (never written), RflySim's UDP ports, the autopilot, systemd. The facts are
plain values (:mod:`.facts`). :mod:`.checks` turns them into verdicts, each ok, warn or fail with
one line of evidence and one of fix, and does no I/O at all: tests hand it facts, or gather them
from a fake ``/sys`` and ``/proc`` tree where a machine cannot be made to fail for real.
Nothing here needs root; what root would show is said as such.
"""
