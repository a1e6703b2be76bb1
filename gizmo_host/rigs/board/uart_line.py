"""What a UART receiver set to one baud rate makes of bytes sent at another (sans-I/O).

A pty carries bytes, not a line: its baud rate changes nothing. To make "the wrong baud rate"
for real on a pty, the emulator writes what a receiver at the reader's rate would decode from
the board's line: :func:`received_bytes` models the line (8N1, idle high, each byte a start
bit, eight data bits LSB first, a stop bit, sent back to back) and a receiver that waits for
a falling edge, samples each bit at its middle at its own rate, and hands over every byte,
framing error or not (as Linux does in raw mode without ``INPCK``). At equal rates the bytes
come through unchanged.
"""

from __future__ import annotations

import math

BITS_PER_BYTE = 10  # 8N1


def line_bits(data: bytes) -> list[int]:
    """The line's level in each bit time at the sender's rate (idle high before and after)."""
    bits = [1, 1]
    for byte in data:
        bits.append(0)
        bits.extend((byte >> i) & 1 for i in range(8))
        bits.append(1)
    bits.extend([1] * BITS_PER_BYTE)
    return bits


def received_bytes(data: bytes, tx_baud: int, rx_baud: int) -> bytes:
    """The bytes a receiver at ``rx_baud`` reads from ``data`` sent at ``tx_baud``."""
    if tx_baud == rx_baud:
        return bytes(data)
    bits = line_bits(data)
    step = tx_baud / rx_baud  # one receiver bit time, in sender bit times

    def level(t: float) -> int:
        index = math.floor(t)
        return bits[index] if 0 <= index < len(bits) else 1

    out = bytearray()
    i = 1
    while i < len(bits):
        if not (bits[i] == 0 and bits[i - 1] == 1):
            i += 1
            continue
        start = float(i)
        value = 0
        for k in range(8):
            value |= level(start + step * (1.5 + k)) << k
        out.append(value)
        resume = start + step * 9.5  # the middle of the stop bit
        i = max(i + 1, math.ceil(resume))
        if level(resume) == 0:  # a framing error: wait for the line to go high first
            while i < len(bits) and bits[i] == 0:
                i += 1
    return bytes(out)
