"""otelcol_gym: NeMo Gym's telemetry recorders, sending events-v1 to otelcol-gym.

A Gym process imports ``otelcol_gym.gym_metrics``, ``otelcol_gym.observer``,
``otelcol_gym.concurrency`` and ``otelcol_gym.memory`` in place of Gym's modules of those names
under ``nemo_gym.telemetry``: same functions, same signatures. ``otelcol_gym.lens`` records
nemo-lens' own instruments (this package's recorders, not Gym's). Each call appends one tuple to a bounded queue; a daemon thread formats the
events-v1 lines and sends them in batches to the collector, which aggregates.

Configuration is read from the environment once (``OTELCOL_GYM_ENDPOINT``,
``OTELCOL_GYM_INTERVAL``, ``OTELCOL_GYM_QUEUE_SIZE``, ``OTELCOL_GYM_ENABLED``, ...);
``configure()`` overrides it.
"""

from __future__ import annotations

from typing import Any, Optional

from . import gym_metrics, observer
from ._sender import EMITTER as _E

__all__ = ["configure", "flush", "gym_metrics", "observer", "shutdown", "stats"]
# The distribution's version, written only here: pyproject.toml declares it dynamic, and both
# setuptools and the fallback of _backend/ read this assignment without importing the package.
__version__ = "0.1.0"


def configure(
    endpoint: Optional[str] = None,
    resource: Optional[dict[str, Any]] = None,
    interval: Optional[float] = None,
    queue_size: Optional[int] = None,
    count_tasks: Optional[bool] = None,
) -> None:
    """Override the environment's settings; an argument left None keeps its setting.

    - ``endpoint``: ``http://127.0.0.1:4390`` (the default), ``unix:///path/to/socket`` or
      ``tcp://127.0.0.1:PORT``. Nothing is ever sent to any other host than the one named.
    - ``resource``: attributes merged over the process's resource (``nemo.gym.server.name``,
      ``nemo.gym.server.type``, ...); a None value removes one. ``process.pid`` is always
      this process's.
    - ``interval``: seconds between snapshots and event-loop samples (default 10).
    - ``queue_size``: the queue's bound, in lines (default 65536).
    - ``count_tasks``: whether the event-loop sampler counts tasks (default False).

    A bad value raises ``ValueError`` here, the only place this package raises. Takes
    effect at once: the emitter reconnects and the next body or connection starts with the
    new resource line.
    """
    _E.configure(endpoint, resource, interval, queue_size, count_tasks)


def flush(timeout: float = 5.0) -> bool:
    """Send everything queued so far and the latest snapshots; wait at most ``timeout``
    seconds. Returns True when all of it was sent."""
    try:
        return _E.flush(timeout)
    except Exception:
        return False


def shutdown(timeout: float = 5.0) -> bool:
    """Flush (at most ``timeout`` seconds), then stop the emitter's thread and close its
    connection. Later calls record nothing until ``configure()``. Runs by itself at
    interpreter exit, bounded by ``OTELCOL_GYM_EXIT_TIMEOUT`` (default 2 s)."""
    try:
        return _E.shutdown(timeout)
    except Exception:
        return False


def stats() -> dict[str, int]:
    """The emitter's counters: ``queued`` (lines taken into the queue), ``in_queue`` (waiting
    now), ``sent``, ``dropped`` (the queue was full: the new line was dropped; or still unsent when
    ``shutdown`` gave up), ``invalid``
    (a value the receiver would reject: not sent), ``lost`` (in a batch that failed after
    part of it may have reached the collector: not sent again, so nothing is counted twice),
    ``send_errors``, ``connections``, ``reconnects`` and ``rejected`` (lines the receiver
    answered as rejected)."""
    return _E.stats()
