"""nemo-lens' own undimensioned Gym instruments, as events-v1 lines (not Gym's API).

Gym records these four through nemo-lens (``record_gym_metrics``), which has no attributed
recorder this package could mirror, so the recorders here are this package's own, named
after what they record. Like Gym's recorders, each call queues one tuple and returns.
"""

from __future__ import annotations

from . import _schema

__all__ = ["record_rollout_duration", "record_verify", "set_servers_active"]

ROLLOUT_DURATION_INSTRUMENT = _schema.GYM_ROLLOUT_DURATION_MS.name
VERIFY_DURATION_INSTRUMENT = _schema.GYM_VERIFY_DURATION_MS.name
VERIFY_SUCCESS_RATE_INSTRUMENT = _schema.GYM_VERIFY_SUCCESS_RATE.name
SERVERS_ACTIVE_INSTRUMENT = _schema.GYM_SERVERS_ACTIVE.name

LENS_DURATION_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_LENS_MS
