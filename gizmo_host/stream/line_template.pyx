# cython: language_level=3, boundscheck=False, wraparound=False
"""A bytes template's ``%`` in C, for the result line (``gizmo_host.stream.events``).

A result line is one bytes template and some thirty integers, once a frame; Python's
``template % values`` of them, joined from their tuples, takes about 1.5 us, most of it the
integers' conversions (bench/line_template.py). ``Template(template).format(*parts)`` is
``template % values`` exactly, ``values`` being the tuples ``parts`` joined, for the
conversions the line uses: ``%d``, ``%0Nd`` and ``%s`` of bytes. Given anything else (a bool, a
float, an integer past 64 bits, a str, a wrong count) it returns Python's ``%`` itself, so the
result and its errors are always Python's; tests/gizmo_host/stream/test_line_template.py holds
it to that.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.string cimport memcpy

cdef enum:
    INTEGER = 1
    BYTES = 2
    MAX_DIGITS = 24  # a 64-bit integer's 20 digits and its sign, with room
    MAX_CONVERSIONS = 64
    ZERO = 48  # '0'
    MINUS = 45  # '-'


cdef int _digits(long long value, char *out) noexcept:
    """``value`` in decimal, sign first, into ``out``; its length."""
    cdef char reversed_[MAX_DIGITS]
    cdef unsigned long long magnitude
    cdef int n = 0, length = 0
    if value < 0:
        magnitude = <unsigned long long>(-(value + 1)) + 1  # no overflow at the minimum
        out[0] = MINUS
        length = 1
    else:
        magnitude = <unsigned long long>value
    while True:
        reversed_[n] = <char>(ZERO + magnitude % 10)
        n += 1
        magnitude //= 10
        if magnitude == 0:
            break
    while n > 0:
        n -= 1
        out[length] = reversed_[n]
        length += 1
    return length


cdef class Template:
    """A bytes template parsed once into its literal pieces and conversions."""

    cdef readonly bytes template
    cdef tuple _literals  # the literal before each conversion, then the one after the last
    cdef int _count  # conversions
    cdef int _kinds[MAX_CONVERSIONS]  # INTEGER or BYTES
    cdef int _widths[MAX_CONVERSIONS]  # a %0Nd's N (zero-padded), else 0

    def __init__(self, bytes template):
        """Raises ``ValueError`` naming a conversion this template's kind does not take."""
        self.template = template
        literals = []
        cdef Py_ssize_t i = 0, start = 0, n = len(template)
        cdef bytearray literal = bytearray()
        cdef int width
        self._count = 0
        while i < n:
            if template[i] != 37:  # '%'
                literal.append(template[i])
                i += 1
                continue
            if i + 1 < n and template[i + 1] == 37:  # '%%'
                literal.append(37)
                i += 2
                continue
            start, i, width = i, i + 1, 0
            if i < n and template[i] == 48:  # '0': a zero-padded width follows
                i += 1
                while i < n and 48 <= template[i] <= 57 and width < MAX_DIGITS:
                    width = width * 10 + (template[i] - 48)
                    i += 1
                if width == 0 or width >= MAX_DIGITS:
                    raise ValueError(f"template: unsupported conversion {template[start:i + 1]!r}")
            if self._count == MAX_CONVERSIONS:
                raise ValueError(f"template: more than {MAX_CONVERSIONS} conversions")
            if i < n and template[i] == 100:  # 'd'
                self._kinds[self._count] = INTEGER
            elif i < n and template[i] == 115 and width == 0:  # 's'
                self._kinds[self._count] = BYTES
            else:
                raise ValueError(f"template: unsupported conversion {template[start:i + 1]!r}")
            self._widths[self._count] = width
            self._count += 1
            literals.append(bytes(literal))
            literal = bytearray()
            i += 1
        literals.append(bytes(literal))
        self._literals = tuple(literals)

    def format(self, *parts):
        """``self.template % values``, ``values`` being the tuples ``parts`` joined (a line's
        values come in a few tuples: joining them first would cost what the format saves)."""
        cdef Py_ssize_t count = self._count, k = 0, size = 0, at = 0
        cdef long long ints[MAX_CONVERSIONS]
        cdef int overflow
        cdef object value, part
        cdef Py_ssize_t i
        for part in parts:  # check every value, and add up the size, first
            if not isinstance(part, tuple):  # a NamedTuple is one
                return self._python(parts)
            for i in range(PyTuple_GET_SIZE(part)):
                value = <object>PyTuple_GET_ITEM(part, i)
                if k == count:
                    return self._python(parts)
                if self._kinds[k] == INTEGER:
                    if type(value) is not int:
                        return self._python(parts)
                    ints[k] = PyLong_AsLongLongAndOverflow(value, &overflow)
                    if overflow:
                        return self._python(parts)
                    size += MAX_DIGITS
                elif type(value) is not bytes:
                    return self._python(parts)
                else:
                    size += PyBytes_GET_SIZE(value)
                k += 1
        if k != count:
            return self._python(parts)
        for k in range(count + 1):
            size += PyBytes_GET_SIZE(self._literals[k])
        cdef bytearray buffer = bytearray(size)
        cdef char *out = buffer
        cdef char digits[MAX_DIGITS]
        cdef Py_ssize_t length, sign, pad, j
        cdef bytes piece = self._literals[0]
        memcpy(out, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))
        at = PyBytes_GET_SIZE(piece)
        k = 0
        for part in parts:
            for i in range(PyTuple_GET_SIZE(part)):
                value = <object>PyTuple_GET_ITEM(part, i)
                if self._kinds[k] == BYTES:
                    piece = value
                    memcpy(out + at, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))
                    at += PyBytes_GET_SIZE(piece)
                else:
                    # '%05d' % -42 is '-0042': the width counts the sign, the zeros follow it
                    length = _digits(ints[k], digits)
                    sign = 1 if digits[0] == MINUS else 0
                    pad = self._widths[k] - length if self._widths[k] > length else 0
                    if sign:
                        out[at] = MINUS
                        at += 1
                    for j in range(pad):
                        out[at + j] = ZERO
                    at += pad
                    memcpy(out + at, digits + sign, length - sign)
                    at += length - sign
                k += 1
                piece = self._literals[k]
                memcpy(out + at, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece))
                at += PyBytes_GET_SIZE(piece)
        return PyBytes_FromStringAndSize(out, at)

    def _python(self, tuple parts):
        """Python's own ``%``: its result or its error, whatever the values."""
        values = ()
        for part in parts:
            values += part
        return self.template % values
