"""Gym's concurrency limits (``nemo_gym.telemetry.concurrency``), as events-v1 lines.

A queue-wait duration shows that work waited, not why. ``MeteredSemaphore`` is a drop-in
``asyncio.BoundedSemaphore`` that keeps the live state of its limit: its size, the slots
held, the callers waiting, and the waits that timed out or were cancelled. The emitter's
thread reads every limit of the process each interval (and at ``flush()``) and sends one
``concurrency.limits`` snapshot, limits with the same attributes summed, as Gym's observer
exports them: ``gym.concurrency.limit``, ``active``, ``available`` (``limit - active``),
``queue_depth``, ``admission_timeouts_total`` (only for a limit that has an admission
timeout) and ``admission_cancelled_total``.

The caller pays for two integer updates per acquisition and one per release (see the
project's ``docs/performance.md``); reading and sending happen on the emitter's thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from typing import Any, Optional

from . import _schema
from ._lines import MAX_LINE_BYTES, integer, name
from ._sender import EMITTER as _E

__all__ = ["MeteredSemaphore"]

logger = logging.getLogger(__name__)

CONCURRENCY_LIMIT_INSTRUMENT = _schema.GYM_CONCURRENCY_LIMIT.name
CONCURRENCY_ACTIVE_INSTRUMENT = _schema.GYM_CONCURRENCY_ACTIVE.name
CONCURRENCY_AVAILABLE_INSTRUMENT = _schema.GYM_CONCURRENCY_AVAILABLE.name
CONCURRENCY_QUEUE_DEPTH_INSTRUMENT = _schema.GYM_CONCURRENCY_QUEUE_DEPTH.name
CONCURRENCY_ADMISSION_TIMEOUTS_INSTRUMENT = _schema.GYM_CONCURRENCY_ADMISSION_TIMEOUTS_TOTAL.name
CONCURRENCY_ADMISSION_CANCELLED_INSTRUMENT = _schema.GYM_CONCURRENCY_ADMISSION_CANCELLED_TOTAL.name
CONCURRENCY_COMPONENT_ATTRIBUTE = _schema.ATTR_NEMO_GYM_CONCURRENCY_COMPONENT.key
CONCURRENCY_LIMIT_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_CONCURRENCY_LIMIT_NAME.key

# Distinct (component, limit_name, server_name) sets kept, at most: a limit with a new set past
# it still limits, but is not metered (logged once). Gym's attributes are bounded, so a process
# has a few dozen.
MAX_LIMITS = 1024

_SNAPSHOT_KEY = "concurrency.limits"


class _LimitState:
    """The totals of one MeteredSemaphore. They outlive it, so that its cumulative counts
    stay in the snapshot once it is gone (its limit, active and waiting then count 0)."""

    __slots__ = ("key", "ref", "limit", "active", "queue_depth", "timeouts", "cancelled", "has_timeout")

    def __init__(self, key: tuple[Any, Any, Any], limit: int, has_timeout: bool) -> None:
        self.key = key
        self.ref: Any = None  # weakref to the semaphore; None for the totals of gone ones
        self.limit = limit
        self.active = 0
        self.queue_depth = 0
        self.timeouts = 0
        self.cancelled = 0
        self.has_timeout = has_timeout


_LOCK = threading.Lock()  # registration (any thread) against the snapshot (the emitter's thread)
_STATES: list[_LimitState] = []
_KEYS: set[tuple[Any, Any, Any]] = set()
_warned_full = False


# Records kept before a registration folds those of gone semaphores (a snapshot folds them too):
# a process that makes a semaphore per request keeps a bounded list between two snapshots.
_COMPACT_AT = 4 * MAX_LIMITS


def _compact_locked() -> None:
    """Fold the totals of the semaphores that are gone into one record per attribute set
    (``_LOCK`` held)."""
    kept: list[_LimitState] = []
    gone: dict[tuple[Any, Any, Any], _LimitState] = {}
    for s in _STATES:
        if s.ref is not None and s.ref() is not None:
            kept.append(s)
            continue
        g = gone.get(s.key)
        if g is None:
            g = gone[s.key] = _LimitState(s.key, 0, False)
            kept.append(g)
        g.timeouts += s.timeouts
        g.cancelled += s.cancelled
        g.has_timeout = g.has_timeout or s.has_timeout
    _STATES[:] = kept


def _register(state: _LimitState) -> bool:
    global _warned_full
    with _LOCK:
        if len(_STATES) >= _COMPACT_AT:
            _compact_locked()
        if state.key not in _KEYS:
            if len(_KEYS) >= MAX_LIMITS:
                if not _warned_full:
                    _warned_full = True
                    logger.warning("otelcol_gym: more than %d distinct concurrency limits; %r and later ones are not metered", MAX_LIMITS, state.key)
                return False
            _KEYS.add(state.key)
        _STATES.append(state)
    return True


def _has_the_fast_path() -> bool:
    """Whether asyncio's semaphore keeps its count in ``_value`` and its waiters in ``_waiters``
    (CPython 3.10 to 3.13 do): then ``acquire`` takes a free slot as the base class does, with
    one comparison less. Otherwise it calls the base class every time."""
    try:
        s = asyncio.BoundedSemaphore(1)
        return type(s._value) is int and not s._waiters  # type: ignore[attr-defined]
    except Exception:
        return False


_FAST = _has_the_fast_path()


class MeteredSemaphore(asyncio.BoundedSemaphore):
    """An ``asyncio.BoundedSemaphore`` that keeps the live state of its limit.

    - ``value``: the number of slots, as ``asyncio.BoundedSemaphore(value)``.
    - ``component``: the Gym component that holds the limit (``nemo.gym.concurrency.component``,
      Gym's ``ConcurrencyComponent``; an enumeration member's value is taken).
    - ``limit_name``: what the limit bounds, a name the code chooses
      (``nemo.gym.concurrency.limit_name``, such as ``upstream_requests``).
    - ``server_name``: the server the limit belongs to, if any (``nemo.gym.server.name``).
    - ``admission_timeout``: seconds a caller waits for a slot at most; then ``acquire``
      raises ``asyncio.TimeoutError`` and the wait counts in ``admission_timeouts``. None: no
      timeout, and the limit reports no ``admission_timeouts``.

    Everything else is ``asyncio.BoundedSemaphore``'s: ``async with``, ``acquire``,
    ``release`` (a release past ``value`` raises ``ValueError``), ``locked``. A waiter
    cancelled before it got a slot leaves no slot taken and counts in
    ``admission_cancelled``. No rollout, request or sandbox id is ever an attribute.
    """

    def __init__(
        self,
        value: int = 1,
        *,
        component: Any,
        limit_name: str,
        server_name: Optional[str] = None,
        admission_timeout: Optional[float] = None,
    ) -> None:
        super().__init__(value)
        if admission_timeout is not None and not admission_timeout >= 0:
            raise ValueError("admission_timeout must be None or >= 0")
        self._admission_timeout = admission_timeout
        m = _LimitState((getattr(component, "value", component), limit_name, server_name), value, admission_timeout is not None)
        m.ref = weakref.ref(self)
        self._m = m
        # Registered only while telemetry is on: nothing would read the records otherwise.
        if _E.on and _register(m):
            _E.ensure_started()

    @property
    def limit(self) -> int:
        """The configured number of slots."""
        return self._m.limit

    @property
    def active(self) -> int:
        """Slots held now."""
        return self._m.active

    @property
    def queue_depth(self) -> int:
        """Callers waiting for a slot now."""
        return self._m.queue_depth

    @property
    def admission_timeouts(self) -> int:
        """Waits that ran out of the admission timeout, since the limit was made."""
        return self._m.timeouts

    @property
    def admission_cancelled(self) -> int:
        """Waits cancelled before a slot was free, since the limit was made."""
        return self._m.cancelled

    async def acquire(self) -> bool:
        """Take a slot, waiting (at most ``admission_timeout``) while none is free."""
        m = self._m
        if _FAST:
            # The base class's own test and step (a free slot and nobody waiting: take it), without
            # the generator its locked() builds on each call. A waiter that was cancelled makes this
            # take the path below, where the base class takes the slot at once all the same.
            if self._value > 0 and not self._waiters:
                self._value -= 1
                m.active += 1
                return True
        elif not self.locked():
            await super().acquire()
            m.active += 1
            return True
        m.queue_depth += 1
        try:
            if self._admission_timeout is None:
                await super().acquire()
            else:
                await asyncio.wait_for(super().acquire(), self._admission_timeout)
        except asyncio.TimeoutError:
            m.timeouts += 1
            raise
        except asyncio.CancelledError:
            m.cancelled += 1
            raise
        finally:
            m.queue_depth -= 1
        m.active += 1
        return True

    def release(self) -> None:
        """Give a slot back; ``ValueError`` when more are released than were taken."""
        super().release()
        self._m.active -= 1


# ---- the snapshot (the emitter's thread) ----


def _entry(key: tuple[Any, Any, Any], t: list[Any]) -> str:
    component, limit_name, server_name = key
    return '{"component":%s,"limit_name":%s%s,"limit":%s,"active":%s,"queue_depth":%s%s,"admission_cancelled":%s}' % (
        name(component),
        name(limit_name),
        "" if server_name is None else ',"server_name":%s' % name(server_name),
        integer(t[0]),
        integer(t[1]),
        integer(t[2]),
        "" if t[3] is None else ',"admission_timeouts":%s' % integer(t[3]),
        integer(t[4]),
    )


def _read_states() -> list[tuple[tuple[Any, Any, Any], list[Any]]]:
    """The totals by attribute set, limits with equal attributes summed; folds the totals of
    the semaphores that are gone into one record per attribute set."""
    groups: dict[tuple[Any, Any, Any], list[Any]] = {}
    with _LOCK:
        _compact_locked()
        for s in _STATES:
            t = groups.get(s.key)
            if t is None:
                t = groups[s.key] = [0, 0, 0, None, 0]  # limit, active, queue_depth, timeouts, cancelled
            if s.ref is not None:  # a live semaphore (a gone one's record has no ref)
                t[0] += s.limit
                t[1] += s.active
                t[2] += s.queue_depth
            if s.has_timeout:
                t[3] = (t[3] or 0) + s.timeouts
            t[4] += s.cancelled
    return list(groups.items())


def _limits_lines() -> dict[str, str]:
    """One ``concurrency.limits`` line (more when the entries would not fit in one line)."""
    entries = []
    bad = 0
    for key, t in _read_states():
        try:
            entries.append(_entry(key, t))
        except (ValueError, TypeError, AttributeError):
            bad += 1  # left out: the receiver would reject the whole line for it
    if bad:
        _E.count_invalid(bad)
    out: dict[str, str] = {}
    head, tail = '{"event":"concurrency.limits","limits":[', "]}\n"
    chunk: list[str] = []
    size = len(head) + len(tail)
    for e in entries:
        if chunk and size + len(e) + 1 > MAX_LINE_BYTES:
            out[_SNAPSHOT_KEY + ("/%d" % len(out) if out else "")] = head + ",".join(chunk) + tail
            chunk, size = [], len(head) + len(tail)
        chunk.append(e)
        size += len(e) + 1
    if chunk:
        out[_SNAPSHOT_KEY + ("/%d" % len(out) if out else "")] = head + ",".join(chunk) + tail
    return out


def _reset_for_testing() -> None:
    """Forget every limit. Test-only."""
    global _warned_full
    with _LOCK:
        _STATES.clear()
        _KEYS.clear()
        _warned_full = False


_E.snapshot_sources.append(_limits_lines)
