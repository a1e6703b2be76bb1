"""Everything that simulates or exercises the vehicle; nothing in the product imports it.

The board emulator (``board``), the RflySim stand-in (``rflysim``), the autopilot
stand-in and the precision-landing vehicle (``autopilot``), the one composition of the
whole loop (``rig``), the demos (``demo``) and the HIL certification (``certify``). The
commands ``emulate``, ``sim``, ``demo`` and ``certify`` run them.
"""
