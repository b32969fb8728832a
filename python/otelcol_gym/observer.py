"""Gym's observer (``nemo_gym.telemetry.observer``), as events-v1 lines.

Event-loop lag and tasks, GC pauses and totals, request totals, outbound in-flight calls,
and the rollout driver's counts and histograms, with Gym's classes, functions, signatures and
constants. Each kind of work runs where it costs the least, as in Gym:

- the event loop runs one sampler coroutine per interval, which measures lag (and counts
  tasks when that is on) and sends the GC pauses stored since the last sample;
- the GC callback only stores pause times and totals (it runs inside a collection);
- request and driver totals are plain integers the server and driver update with ``+=``
  (responses: a bounded buffer the emitter's thread folds into ``responses`` as it wakes);
  the emitter's thread reads them every interval (``server.requests``, ``driver.counts``,
  ``gc.stats``), as the SDK's observable instruments would.

Process CPU, memory, threads and descriptors are not sent: the resource line names
``process.pid`` and the collector reads them on the host. Nothing here raises into the
server; a failure is logged and swallowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Callable, Optional

from . import _schema
from ._lines import CACHE_TYPED, Invalid, duration, enc, integer, name, register_kind
from ._sender import EMITTER as _E

__all__ = [
    "DriverCounts",
    "MeteredAdmission",
    "RequestCounts",
    "count_resident",
    "driver_metrics",
    "observe_app_event_loop",
    "observe_event_loop",
    "observer_settings",
    "request_counts",
]

logger = logging.getLogger(__name__)

# The constants of Gym's module, from the schema (metadata.yaml, through _schema).
CPU_MODE_ATTRIBUTE = _schema.ATTR_CPU_MODE.key
DRIVER_ACTIVE_INSTRUMENT = _schema.GYM_DRIVER_ROLLOUTS_ACTIVE.name
DRIVER_ADMISSION_INSTRUMENT = _schema.GYM_DRIVER_ADMISSION_DURATION_MS.name
DRIVER_DURATION_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_DRIVER_MS
DRIVER_MATERIALIZE_INSTRUMENT = _schema.GYM_DRIVER_MATERIALIZE_DURATION_MS.name
DRIVER_OFFERED_INSTRUMENT = _schema.GYM_DRIVER_ROLLOUTS_OFFERED_TOTAL.name
DRIVER_RESIDENT_INSTRUMENT = _schema.GYM_DRIVER_ROLLOUTS_RESIDENT.name
DRIVER_WRITE_BYTES_BOUNDARIES: tuple[float, ...] = _schema.BUCKETS_WRITE_BYTES
DRIVER_WRITE_BYTES_INSTRUMENT = _schema.GYM_DRIVER_OUTPUT_WRITE_BYTES.name
DRIVER_WRITE_DURATION_INSTRUMENT = _schema.GYM_DRIVER_OUTPUT_WRITE_DURATION_MS.name
EVENT_LOOP_ATTRIBUTE = _schema.ATTR_NEMO_GYM_EVENT_LOOP.key
EVENT_LOOP_LAG_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_LAG_MS
EVENT_LOOP_LAG_INSTRUMENT = _schema.GYM_EVENT_LOOP_LAG_MS.name
EVENT_LOOP_TASKS_INSTRUMENT = _schema.GYM_EVENT_LOOP_TASKS.name
GC_COLLECTED_INSTRUMENT = _schema.GYM_GC_COLLECTED_TOTAL.name
GC_COLLECTIONS_INSTRUMENT = _schema.GYM_GC_COLLECTIONS_TOTAL.name
GC_COUNT_INSTRUMENT = _schema.GYM_GC_COUNT.name
GC_GENERATION_ATTRIBUTE = _schema.ATTR_NEMO_GYM_GC_GENERATION.key
GC_PAUSE_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_GC_PAUSE_MS
GC_PAUSE_INSTRUMENT = _schema.GYM_GC_PAUSE_DURATION_MS.name
GC_UNCOLLECTABLE_INSTRUMENT = _schema.GYM_GC_UNCOLLECTABLE_TOTAL.name
HTTP_ROUTE_ATTRIBUTE = _schema.ATTR_HTTP_ROUTE.key
HTTP_STATUS_CODE_ATTRIBUTE = _schema.ATTR_HTTP_RESPONSE_STATUS_CODE.key
OUTBOUND_IN_FLIGHT_INSTRUMENT = _schema.GYM_HTTP_CLIENT_REQUESTS_IN_FLIGHT.name
PROCESS_CPU_TIME_INSTRUMENT = _schema.PROCESS_CPU_TIME.name
PROCESS_MEMORY_USAGE_INSTRUMENT = _schema.PROCESS_MEMORY_USAGE.name
PROCESS_OPEN_FDS_INSTRUMENT = _schema.PROCESS_OPEN_FILE_DESCRIPTOR_COUNT.name
PROCESS_THREAD_COUNT_INSTRUMENT = _schema.PROCESS_THREAD_COUNT.name
REQUESTS_CANCELLED_INSTRUMENT = _schema.GYM_SERVER_REQUESTS_CANCELLED_TOTAL.name
REQUESTS_IN_FLIGHT_INSTRUMENT = _schema.GYM_SERVER_REQUESTS_IN_FLIGHT.name
REQUESTS_UNHANDLED_EXCEPTIONS_INSTRUMENT = _schema.GYM_SERVER_REQUESTS_UNHANDLED_EXCEPTIONS_TOTAL.name
REQUEST_PHASE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_REQUEST_PHASE.key
RESPONSES_INSTRUMENT = _schema.GYM_SERVER_RESPONSES_TOTAL.name
ROLLOUT_COUNT_BOUNDARIES: tuple[float, ...] = _schema.BUCKETS_ROLLOUT_COUNT
ROLLOUT_INPUT_ITEMS_INSTRUMENT = _schema.GYM_DRIVER_ROLLOUT_INPUT_ITEMS.name
ROLLOUT_OUTPUT_ITEMS_INSTRUMENT = _schema.GYM_DRIVER_ROLLOUT_OUTPUT_ITEMS.name
ROLLOUT_TOOL_CALLS_INSTRUMENT = _schema.GYM_DRIVER_ROLLOUT_TOOL_CALLS.name
ROLLOUT_TURNS_INSTRUMENT = _schema.GYM_DRIVER_ROLLOUT_TURNS.name

_MAX_BUFFERED_GC_PAUSES = 10000
_PROCESS_LOCK = threading.Lock()
_ACTIVE_LOOPS = 0
_INSTRUMENTS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # kept for parity; unused

# The phase of a cancelled request: the schema's values, before and during the response.
_BEFORE_RESPONSE, _DURING_RESPONSE = _schema.ATTR_NEMO_GYM_REQUEST_PHASE.values
# The values the receiver takes (anything else rejects the line).
_GC_GENERATIONS = _schema.ATTR_NEMO_GYM_GC_GENERATION.int_values
_STATUS_MIN = _schema.ATTR_HTTP_RESPONSE_STATUS_CODE.min
_STATUS_MAX = _schema.ATTR_HTTP_RESPONSE_STATUS_CODE.max


class DriverCounts:
    """Rollout totals that the driver updates with plain integer arithmetic, read by the
    emitter's thread."""

    offered = 0
    """Rollouts handed to dispatch."""
    resident = 0
    """Rollout tasks that exist and have not finished, whether waiting for admission or running."""
    active = 0
    """Rollouts admitted past the concurrency limit and running."""

    def __init__(self) -> None:
        self.offered = 0
        self.resident = 0
        self.active = 0


class RequestCounts:
    """Request totals that the server middleware and ``server_utils.request`` update with
    plain integer arithmetic; the emitter's thread reads them (``server.requests``).

    Each update is a single ``+=`` on an attribute, which CPython with the GIL does not
    interleave with another thread's, so no update is lost.

    ``count_response`` is called once per response, so it is the C ``append`` of a bounded
    buffer rather than a Python method (a Python call alone costs about as much as the whole
    budget). The emitter's thread folds the buffer into ``responses`` every time it wakes (at
    least every 50 ms while it is not sending), and reading ``responses`` folds it first. If
    the buffer is ever found full (``RESPONSE_BUFFER`` responses between two folds) some
    responses may have been left uncounted; ``response_buffer_overflows`` counts those folds.
    """

    RESPONSE_BUFFER = 1 << 20
    """Responses held between two folds, at most: about 8 MiB of references when full."""

    cancelled = 0
    in_flight = 0
    outbound_in_flight = 0
    unhandled_exceptions = 0

    def __init__(self) -> None:
        self.cancelled = 0
        self.cancelled_by_route_and_phase: dict[tuple[str, str], int] = {}
        """Cumulative cancellations by registered route template and response-start phase."""
        self.in_flight = 0
        self.outbound_in_flight = 0
        self._responses: dict[int, int] = {}
        self._pending: deque[Any] = deque(maxlen=self.RESPONSE_BUFFER)
        self._fold_lock = threading.Lock()
        self.response_buffer_overflows = 0
        self.unhandled_exceptions = 0
        # The instance attribute shadows the method below: one C call per response.
        self.count_response = self._pending.append  # type: ignore[method-assign]

    def count_response(self, status: int) -> None:
        """Count one response by its HTTP status code (never raises, never blocks)."""
        self._pending.append(status)

    @property
    def responses(self) -> dict[int, int]:
        """Responses by HTTP status code, cumulative. HTTP bounds the set of codes."""
        self.fold()
        return self._responses

    @responses.setter
    def responses(self, value: dict[int, int]) -> None:
        # Gym's attribute can be replaced; what is still buffered goes to the old dict.
        self.fold()
        self._responses = value

    def fold(self) -> None:
        """Move the buffered responses into ``responses``. Any thread may call it."""
        pending = self._pending
        if not pending:
            return
        with self._fold_lock:
            n = len(pending)
            if n >= self.RESPONSE_BUFFER:
                self.response_buffer_overflows += 1
                logger.warning("otelcol_gym: %d responses between two folds; some may be uncounted", n)
            popleft = pending.popleft
            counts = self._responses
            for _ in range(n):  # appends go on the right meanwhile: only these n leave
                status = popleft()
                try:
                    counts[status] = counts.get(status, 0) + 1
                except TypeError:  # an unhashable status: counted as invalid, never raised
                    _E.count_invalid()

    def count_cancellation(self, route: str, response_started: bool) -> None:
        """Count one disconnect; ``route`` must be a registered template or the unmatched sentinel."""
        self.cancelled += 1
        key = (route, _DURING_RESPONSE if response_started else _BEFORE_RESPONSE)
        try:
            self.cancelled_by_route_and_phase[key] += 1
        except KeyError:
            self.cancelled_by_route_and_phase[key] = 1
        except TypeError:
            pass


class _GcRecorder:
    """Collects GC pause times and totals from ``gc.callbacks`` without sending anything.

    It takes no lock: a collection can start on a thread that holds one. Python runs one
    collection at a time, so the callback never races itself, and the buffer swap in
    ``drain_pauses`` is safe under the GIL.
    """

    def __init__(self) -> None:
        self._pauses: list[tuple[int, float]] = []
        self._started: dict[int, float] = {}
        self.collected = [0, 0, 0]
        self.collections = [0, 0, 0]
        self.uncollectable = [0, 0, 0]

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        try:
            gen = info["generation"]
            if phase == "start":
                self._started[gen] = time.perf_counter()
                return
            started = self._started.pop(gen, None)
            self.collections[gen] += 1
            self.collected[gen] += info.get("collected", 0)
            self.uncollectable[gen] += info.get("uncollectable", 0)
            if started is not None and len(self._pauses) < _MAX_BUFFERED_GC_PAUSES:
                self._pauses.append((gen, (time.perf_counter() - started) * 1000.0))
        except Exception:
            pass

    def drain_pauses(self) -> list[tuple[int, float]]:
        pauses, self._pauses = self._pauses, []
        return pauses


# ---- the instruments of _ProcessObserver: recorders that queue one tuple ----


def _fmt_lag(it: tuple) -> str:
    return '{"event":"event_loop.lag","loop":%s,"lag_ms":%s}\n' % (name(it[2]), duration(it[1]))


def _fmt_tasks(it: tuple) -> str:
    return '{"event":"event_loop.tasks","loop":%s,"tasks":%s}\n' % (name(it[2]), integer(it[1]))


def _fmt_gc_pause(it: tuple) -> str:
    gen = it[2]
    if gen not in _GC_GENERATIONS or type(gen) is bool:
        raise Invalid("generation must be one of %s" % ", ".join(map(str, _GC_GENERATIONS)))
    return '{"event":"gc.pause","generation":%d,"duration_ms":%s}\n' % (gen, duration(it[1]))


def _fmt_admission(it: tuple) -> str:
    return '{"event":"driver.admission","duration_ms":%s}\n' % duration(it[1])


def _fmt_materialize(it: tuple) -> str:
    return '{"event":"driver.materialize","duration_ms":%s}\n' % duration(it[1])


def _fmt_output_write(it: tuple) -> str:
    return '{"event":"driver.output_write","duration_ms":%s,"bytes":%s}\n' % (duration(it[1]), integer(it[2]))


def _fmt_size(it: tuple) -> str:
    return '{"event":"rollout.size","%s":%s}\n' % (it[2], integer(it[1]))


def _fmt_sizes(it: tuple) -> str:
    parts = ['"%s":%s' % (k, integer(v)) for k, v in zip(("input_items", "output_items", "turns", "tool_calls"), it[1:]) if v is not None]
    return '{"event":"rollout.size",%s}\n' % ",".join(parts) if parts else '{"event":"rollout.size"}\n'


_LAG = register_kind(_fmt_lag)
_TASKS = register_kind(_fmt_tasks)
_GC_PAUSE = register_kind(_fmt_gc_pause)
_ADMISSION = register_kind(_fmt_admission)
_MATERIALIZE = register_kind(_fmt_materialize)
_OUTPUT_WRITE = register_kind(_fmt_output_write)
_SIZE = register_kind(_fmt_size, CACHE_TYPED)
_SIZES = register_kind(_fmt_sizes)


_put = _E.put


class _Histogram:
    """An instrument of one driver histogram: ``record(value, attributes=None)``, as the SDK's."""

    __slots__ = ("_kind", "_arg")

    def __init__(self, kind: int, arg: Any = None) -> None:
        self._kind = kind
        self._arg = arg

    def record(self, amount: float, attributes: Optional[dict[str, Any]] = None) -> None:
        _put((self._kind, amount, self._arg))


class _LoopInstrument:
    """``lag`` (``record``) and ``tasks`` (``set``): the loop's name is the
    ``nemo.gym.event_loop`` attribute."""

    __slots__ = ("_kind",)

    def __init__(self, kind: int) -> None:
        self._kind = kind

    def record(self, amount: float, attributes: Optional[dict[str, Any]] = None) -> None:
        _put((self._kind, amount, (attributes or {}).get(EVENT_LOOP_ATTRIBUTE)))

    set = record


class _GcPauseInstrument:
    __slots__ = ()

    def record(self, amount: float, attributes: Optional[dict[str, Any]] = None) -> None:
        _put((_GC_PAUSE, amount, (attributes or {}).get(GC_GENERATION_ATTRIBUTE)))


class _OutputWrite:
    """Gym records an output write with two calls (duration, then bytes); events-v1 has one
    line with both. The two halves meet here: whichever comes second sends the line. A half
    that never meets its other (two durations in a row) is counted as invalid."""

    __slots__ = ("duration_ms", "bytes")

    def __init__(self) -> None:
        self.duration_ms: Optional[float] = None
        self.bytes: Optional[int] = None

    def half(self, duration_ms: Optional[float], nbytes: Optional[int]) -> None:
        if duration_ms is not None:
            if self.bytes is not None:
                b, self.bytes = self.bytes, None
                _put((_OUTPUT_WRITE, duration_ms, b))
                return
            if self.duration_ms is not None:
                _E.count_invalid()
            self.duration_ms = duration_ms
        else:
            if self.duration_ms is not None:
                d, self.duration_ms = self.duration_ms, None
                _put((_OUTPUT_WRITE, d, nbytes))
                return
            if self.bytes is not None:
                _E.count_invalid()
            self.bytes = nbytes


class _WriteDuration:
    __slots__ = ("_pair",)

    def __init__(self, pair: _OutputWrite) -> None:
        self._pair = pair

    def record(self, amount: float, attributes: Optional[dict[str, Any]] = None) -> None:
        if _E.on:
            self._pair.half(amount, None)


class _WriteBytes(_WriteDuration):
    __slots__ = ()

    def record(self, amount: float, attributes: Optional[dict[str, Any]] = None) -> None:
        if _E.on:
            self._pair.half(None, amount)


class _ProcessObserver:
    """The per-process state of the observer: the GC recorder, the request and driver
    totals, and the driver's instruments (``record(value)`` each)."""

    def __init__(self, meter: Any = None) -> None:
        self.gc = _GcRecorder()
        self.requests = RequestCounts()
        self.driver = DriverCounts()
        # Process stats are the collector's (it reads process.pid on the host).
        self.process: Any = None
        self.lag = _LoopInstrument(_LAG)
        self.tasks = _LoopInstrument(_TASKS)
        self.gc_pause = _GcPauseInstrument()
        self.admission = _Histogram(_ADMISSION)
        self.materialize = _Histogram(_MATERIALIZE)
        self._output_write = _OutputWrite()
        self.write_duration = _WriteDuration(self._output_write)
        self.write_bytes = _WriteBytes(self._output_write)
        self.input_items = _Histogram(_SIZE, "input_items")
        self.output_items = _Histogram(_SIZE, "output_items")
        self.turns = _Histogram(_SIZE, "turns")
        self.tool_calls = _Histogram(_SIZE, "tool_calls")

    def record_gc_pauses(self) -> None:
        for gen, ms in self.gc.drain_pauses():
            _put((_GC_PAUSE, ms, gen))

    def record_output_write(self, duration_ms: float, nbytes: int) -> None:
        """One output write in one call (``driver.output_write``)."""
        _put((_OUTPUT_WRITE, duration_ms, nbytes))

    def record_rollout_size(
        self,
        input_items: Optional[int] = None,
        output_items: Optional[int] = None,
        turns: Optional[int] = None,
        tool_calls: Optional[int] = None,
    ) -> None:
        """One completed rollout's sizes in one line (``rollout.size``)."""
        _put((_SIZES, input_items, output_items, turns, tool_calls))


_PROCESS_OBSERVER: Optional[_ProcessObserver] = None


def _acquire_process_observer(meter: Any = None) -> _ProcessObserver:
    global _PROCESS_OBSERVER, _ACTIVE_LOOPS
    with _PROCESS_LOCK:
        if _PROCESS_OBSERVER is None:
            state = _ProcessObserver(meter)
            gc.callbacks.append(state.gc)
            _PROCESS_OBSERVER = state
        _ACTIVE_LOOPS += 1
        return _PROCESS_OBSERVER


def _release_process_observer() -> None:
    global _PROCESS_OBSERVER, _ACTIVE_LOOPS
    with _PROCESS_LOCK:
        _ACTIVE_LOOPS = max(0, _ACTIVE_LOOPS - 1)
        if _ACTIVE_LOOPS or _PROCESS_OBSERVER is None:
            return
        state = _PROCESS_OBSERVER
        state.record_gc_pauses()
        # The last readings of the totals, so that nothing counted is lost with the state.
        with _E.snap_lock:
            try:
                _E.snap_pending.update(_readings(state))
            except Exception as e:
                logger.debug("otelcol_gym: final snapshot failed: %s", e)
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(state.gc)
        _PROCESS_OBSERVER = None
    _E.wake.set()


# ---- snapshots, read on the emitter's thread ----


def _readings(state: _ProcessObserver) -> dict[str, str]:
    out: dict[str, str] = {}
    rc = state.requests
    responses = rc.responses.copy()
    cancelled = rc.cancelled_by_route_and_phase.copy()
    parts = []
    bad = 0
    for code, n in responses.items():
        try:
            c = int(code)
            if type(code) is bool or not _STATUS_MIN <= c <= _STATUS_MAX:
                raise ValueError(code)
            parts.append('"%d":%s' % (c, integer(n)))
        except (ValueError, TypeError, AttributeError):
            bad += 1  # left out: the receiver would reject the whole line for it
    cparts = []
    for key, n in cancelled.items():
        try:
            route, phase = key
            cparts.append('{"route":%s,"response_started":%s,"count":%s}' % (enc(route), "true" if phase == _DURING_RESPONSE else "false", integer(n)))
        except (ValueError, TypeError, AttributeError):
            bad += 1
    if bad:
        _E.count_invalid(bad)
    try:
        out["server.requests"] = '{"event":"server.requests","in_flight":%s,"unhandled_exceptions":%s,"responses":{%s},"cancelled":[%s],"outbound_in_flight":%s}\n' % (
            integer(max(0, rc.in_flight)),
            integer(max(0, rc.unhandled_exceptions)),
            ",".join(parts),
            ",".join(cparts),
            integer(max(0, rc.outbound_in_flight)),
        )
    except (ValueError, TypeError, AttributeError):
        _E.count_invalid()
    d = state.driver
    try:
        if d.offered > 0:  # the receiver keeps nothing of a process that offered none
            out["driver.counts"] = '{"event":"driver.counts","offered":%s,"resident":%s,"active":%s}\n' % (
                integer(d.offered),
                integer(max(0, d.resident)),
                integer(max(0, d.active)),
            )
    except (ValueError, TypeError, AttributeError):
        _E.count_invalid()
    g = state.gc
    out["gc.stats"] = '{"event":"gc.stats","collections":[%d,%d,%d],"collected":[%d,%d,%d],"uncollectable":[%d,%d,%d],"count":[%d,%d,%d]}\n' % (
        *g.collections,
        *g.collected,
        *g.uncollectable,
        *gc.get_count(),
    )
    return out


def _observer_snapshot() -> dict[str, str]:
    state = _PROCESS_OBSERVER
    return _readings(state) if state is not None else {}


def _fold_responses() -> None:
    state = _PROCESS_OBSERVER
    if state is not None:
        state.requests.fold()


_E.snapshot_sources.append(_observer_snapshot)
_E.wake_hooks.append(_fold_responses)


def _after_fork_child() -> None:
    # The parent's loops do not run in the child: its observer state starts afresh.
    global _PROCESS_OBSERVER, _ACTIVE_LOOPS, _PROCESS_LOCK
    state = _PROCESS_OBSERVER
    _PROCESS_OBSERVER, _ACTIVE_LOOPS, _PROCESS_LOCK = None, 0, threading.Lock()
    if state is not None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(state.gc)


if hasattr(__import__("os"), "register_at_fork"):
    __import__("os").register_at_fork(after_in_child=_after_fork_child)


# ---- the public functions ----


def observer_settings() -> Optional[tuple[float, bool]]:
    """Return the sample interval and whether to count tasks when telemetry is on in this
    process, else None."""
    if not _E.on:
        return None
    return _E.settings.interval, _E.settings.count_tasks


def request_counts() -> Optional[RequestCounts]:
    """Return the request totals while an observer is running, else None. A plain global read."""
    state = _PROCESS_OBSERVER
    return state.requests if state is not None else None


def driver_metrics() -> Optional[_ProcessObserver]:
    """Return the process's observer state while an observer is running, for the rollout
    driver, else None."""
    return _PROCESS_OBSERVER


async def _sample(state: _ProcessObserver, interval_seconds: float, loop_name: str, count_tasks: bool) -> None:
    loop = asyncio.get_running_loop()
    attrs = {EVENT_LOOP_ATTRIBUTE: loop_name}
    while True:
        start = loop.time()
        await asyncio.sleep(interval_seconds)
        try:
            state.lag.record(max(0.0, (loop.time() - start - interval_seconds) * 1000.0), attrs)
            if count_tasks:
                state.tasks.set(len(asyncio.all_tasks(loop)), attrs)
            state.record_gc_pauses()
        except Exception as e:
            logger.debug("otelcol_gym: sample failed: %s", e)


@contextlib.asynccontextmanager
async def observe_event_loop(loop_name: str) -> AsyncIterator[None]:
    """Sample the running event loop, and observe this process, for as long as the context
    is open.

    ``loop_name`` is a bounded label for the loop, such as ``server``, ``head_server`` or
    ``driver``. Does nothing while telemetry is off (``OTELCOL_GYM_ENABLED=false``).
    """
    settings = observer_settings()
    if settings is None:
        yield
        return
    interval, count_tasks = settings
    try:
        state = _acquire_process_observer()
        task = asyncio.get_running_loop().create_task(_sample(state, interval, loop_name, count_tasks))
        _E.ensure_started()
    except Exception as e:
        logger.warning("otelcol_gym: the observer did not start: %s", e)
        yield
        return
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        try:
            _release_process_observer()
        except Exception as e:
            logger.debug("otelcol_gym: release failed: %s", e)


def observe_app_event_loop(app: Any, loop_name: str) -> None:
    """Run ``observe_event_loop`` for the lifetime of a FastAPI (Starlette) app, keeping any
    lifespan the app already has."""
    router = getattr(app, "router", app)
    inner: Optional[Callable[[Any], Any]] = getattr(router, "lifespan_context", None)

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with observe_event_loop(loop_name):
            if inner is None:
                yield None
            else:
                async with inner(a) as state:
                    yield state

    router.lifespan_context = lifespan


class MeteredAdmission:
    """Wraps the driver's concurrency limit to record each rollout's wait
    (``driver.admission``) and count the rollouts running inside it (``active``)."""

    def __init__(self, semaphore: Any, observer: _ProcessObserver) -> None:
        self._semaphore = semaphore
        self._observer = observer

    async def __aenter__(self) -> None:
        start = time.perf_counter()
        await self._semaphore.acquire()
        self._observer.admission.record((time.perf_counter() - start) * 1000.0)
        self._observer.driver.active += 1

    async def __aexit__(self, *exc_info: Any) -> Any:
        self._observer.driver.active -= 1
        self._semaphore.release()
        return None


async def count_resident(awaitable: Any, observer: _ProcessObserver) -> Any:
    """Await one rollout, counting it as resident until it finishes."""
    observer.driver.resident += 1
    try:
        return await awaitable
    finally:
        observer.driver.resident -= 1


def _flush_metrics() -> None:
    _E.flush(_E.settings.exit_timeout)
