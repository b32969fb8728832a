"""nemo-lens' own undimensioned Gym instruments, as events-v1 lines (not Gym's API).

Gym records these four through nemo-lens (``record_gym_metrics``), which has no attributed
recorder this package could mirror, so the recorders here are this package's own, named
after what they record. Like Gym's recorders, each call queues one tuple and returns.
"""

from __future__ import annotations

from typing import Optional

from . import _schema
from ._lines import CACHE_TYPED, boolean, duration, integer, register_kind
from ._sender import EMITTER as _E

__all__ = ["record_rollout_duration", "record_verify", "set_servers_active"]

ROLLOUT_DURATION_INSTRUMENT = _schema.GYM_ROLLOUT_DURATION_MS.name
VERIFY_DURATION_INSTRUMENT = _schema.GYM_VERIFY_DURATION_MS.name
VERIFY_SUCCESS_RATE_INSTRUMENT = _schema.GYM_VERIFY_SUCCESS_RATE.name
SERVERS_ACTIVE_INSTRUMENT = _schema.GYM_SERVERS_ACTIVE.name

LENS_DURATION_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_LENS_MS


# ---- formatters (the emitter's thread) ----


def _fmt_rollout_duration(it: tuple) -> str:
    return '{"event":"rollout.duration","duration_ms":%s}\n' % duration(it[1])


def _fmt_verify(it: tuple) -> str:
    if it[1] is None:
        return '{"event":"verify","completed":%s}\n' % boolean(it[2])
    return '{"event":"verify","duration_ms":%s,"completed":%s}\n' % (duration(it[1]), boolean(it[2]))


def _fmt_servers_active(it: tuple) -> str:
    return '{"event":"servers.active","count":%s}\n' % integer(it[1])


_ROLLOUT_DURATION = register_kind(_fmt_rollout_duration)
_VERIFY = register_kind(_fmt_verify)
_SERVERS_ACTIVE = register_kind(_fmt_servers_active, CACHE_TYPED)


# ---- the recorders (the caller's thread: one tuple, one append) ----
#
# Once per rollout at most: the emitter's put serves them (gym_metrics' hot recorders inline it).


def record_rollout_duration(duration_ms: float) -> None:
    """Record one rollout's wall-clock in ``gym.rollout.duration_ms``, failed rollouts too."""
    _E.put((_ROLLOUT_DURATION, duration_ms))


def record_verify(duration_ms: Optional[float], completed: bool = True) -> None:
    """Record one verification: its time in ``gym.verify.duration_ms`` (None: not known,
    nothing recorded) and whether it completed. The collector keeps
    ``gym.verify.success_rate``, the completed ones over all since the process's first."""
    _E.put((_VERIFY, duration_ms, completed))


def set_servers_active(count: int) -> None:
    """Set ``gym.servers.active``, the Gym servers the orchestrator started (the
    orchestrator's process only)."""
    _E.put((_SERVERS_ACTIVE, count))
