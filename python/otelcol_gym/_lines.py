"""The events-v1 line format: JSON values as the receiver takes them, the resource line, and
the formatters of the queued tuples.

Every line is one JSON object and its newline, ASCII only (strings are escaped as Python's
``json`` escapes them), so a line's length in characters is its length in bytes. A value the
receiver would reject raises ``Invalid``: the line is not sent, and is counted. Everything
here runs on the emitter's thread, except ``register_kind``, which a recorder module calls
once at import.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as _encode_string  # type: ignore[attr-defined]
from typing import Any, Callable

from ._schema import DEFAULT_MAX_LINE_BYTES

# The receiver's default max_line_bytes (metadata.yaml): a longer line would be rejected there,
# so it is not sent (every line is ASCII: json's escaping, so characters are bytes).
MAX_LINE_BYTES = DEFAULT_MAX_LINE_BYTES

_MAX_FLOAT = 1.7976931348623157e308
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)


class Invalid(ValueError):
    """A value the receiver would reject: the line is not sent, and is counted."""


# ---- value formatting (emitter thread) ----

_string_cache: dict[str, str] = {}
_STRING_CACHE_MAX = 4096


def enc(s: Any) -> str:
    """A JSON string (ASCII, escaped as Python's json does); names repeat, so cached."""
    r = _string_cache.get(s)
    if r is None:
        if not isinstance(s, str):
            raise Invalid("want a string, got %s" % type(s).__name__)
        r = _encode_string(s)
        if len(_string_cache) < _STRING_CACHE_MAX:
            _string_cache[s] = r
    return r


def name(s: Any) -> str:
    """A non-empty string."""
    if not s:
        raise Invalid("want a non-empty string")
    return enc(s)


def duration(x: Any) -> str:
    """A finite number >= 0 (``duration_ms``, ``lag_ms``)."""
    t = type(x)
    if t is float:
        if 0.0 <= x <= _MAX_FLOAT:
            return repr(x + 0.0)  # -0.0 becomes 0.0
        raise Invalid("want a finite number >= 0, got %r" % (x,))
    if t is not int:
        if t is bool:
            raise Invalid("want a number, got a bool")
        x = float(x.__float__())  # numpy and the like; a str is not a number
    if not 0 <= x <= _MAX_FLOAT:
        raise Invalid("want a finite number >= 0, got %r" % (x,))
    return repr(x + 0)  # -0.0 becomes 0.0


def number(x: Any) -> str:
    """Any number, NaN and infinities as Python's json writes them."""
    t = type(x)
    if t is int:
        return repr(x) if _INT64_MIN <= x <= _INT64_MAX else number(float(x))
    if t is not float:
        if t is bool:
            raise Invalid("want a number, got a bool")
        x = float(x.__float__())  # numpy and the like; a str is not a number
    if x != x:
        return "NaN"
    if x > _MAX_FLOAT:
        return "Infinity"
    if x < -_MAX_FLOAT:
        return "-Infinity"
    return repr(x)


def integer(x: Any, nonneg: bool = True) -> str:
    """An integer within int64 (>= 0 when nonneg); an integral float is its integer."""
    t = type(x)
    if t is not int:
        if t is bool:
            raise Invalid("want an integer, got a bool")
        if t is float:
            if not x.is_integer():
                raise Invalid("want an integer, got %r" % (x,))
            x = int(x)
        else:
            x = int(x.__index__())
    if x > _INT64_MAX or x < (0 if nonneg else _INT64_MIN):
        raise Invalid("integer out of range: %d" % x)
    return repr(x)


def boolean(x: Any) -> str:
    """``true`` or ``false``, by the value's truth."""
    return "true" if x else "false"


def one_of(x: Any, allowed: frozenset[str]) -> str:
    """One of the ``allowed`` strings (an enumeration of the schema)."""
    if x not in allowed:
        raise Invalid("%r is not one of %s" % (x, ", ".join(sorted(allowed))))
    return enc(x)


def resource_line(attrs: dict[str, Any]) -> str:
    """The resource line of ``attrs`` (``build_resource``'s): the first line of every HTTP
    body and of every stream connection."""
    parts = []
    for k, v in attrs.items():
        if isinstance(v, bool):
            parts.append("%s:%s" % (enc(k), boolean(v)))
        elif isinstance(v, int):
            parts.append("%s:%s" % (enc(k), integer(v, nonneg=False)))
        else:
            parts.append("%s:%s" % (enc(k), enc(v)))
    return '{"event":"resource","attributes":{%s}}\n' % ",".join(parts)


# ---- the formatters of the queued tuples ----

# A formatter turns one queued tuple into one line (with its newline), or raises.
Formatter = Callable[[tuple], str]
FORMATTERS: list[Formatter] = []
# Whether the lines of a kind repeat (no measured value in them), so are worth caching:
# NO_CACHE, CACHE (by the tuple), CACHE_TYPED (by the tuple and the type of its first value,
# so that True, which equals 1, is not taken for a cached 1).
NO_CACHE, CACHE, CACHE_TYPED = 0, 1, 2
CACHEABLE: list[int] = []


def register_kind(fmt: Formatter, cacheable: int = NO_CACHE) -> int:
    """Registers the formatter of one kind of queued tuple; returns the kind (tuple[0])."""
    FORMATTERS.append(fmt)
    CACHEABLE.append(cacheable)
    return len(FORMATTERS) - 1
