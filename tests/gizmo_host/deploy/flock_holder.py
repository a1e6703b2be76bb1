"""Hold a serial port open and locked, as another program would; print ``locked``.

``flock`` (the default) is what serialx and lockfile-aware programs use; ``excl`` is the tty's
exclusive mode (TIOCEXCL), which makes open() itself fail with EBUSY for everyone but root and
leaves no trace in /proc/locks. Stdlib only, so it also runs from an interpreter started under
another name (the tests start it as ``ModemManager``). Exits when stdin closes.
"""

import fcntl
import os
import sys
import termios

fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
if sys.argv[2:] == ["excl"]:
    fcntl.ioctl(fd, termios.TIOCEXCL)
else:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
