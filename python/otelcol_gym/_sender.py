"""The emitter: a bounded queue of small tuples, and a daemon thread that formats them as
events-v1 lines and sends them in batches to the collector.

The caller's side (the recorders) is three attribute reads, one tuple and one
``deque.append``; everything else (validation, formatting, I/O, retries) happens on the
emitter's thread. Nothing here raises into a caller. ``EMITTER`` is the process's one
emitter, made at import.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid
from collections import deque
from typing import Any, Callable, Optional

from ._lines import CACHE, CACHEABLE, FORMATTERS, MAX_LINE_BYTES, Invalid, resource_line
from ._settings import Endpoint, Settings, build_resource
from ._transport import SendError, make_transport

logger = logging.getLogger("otelcol_gym")

# A batch: at most this many lines or bytes per HTTP body / stream write (the receiver's body
# limit is 16 MiB).
BATCH_LINES = 4096
BATCH_BYTES = 1 << 20
# How long the idle thread sleeps between looks at the queue (the callers never notify it).
POLL_SECONDS = 0.05
# Reconnect backoff, doubled per failure.
BACKOFF_MIN = 0.1
BACKOFF_MAX = 5.0
# Formatted lines kept by their queued tuple (cleared when full).
LINE_CACHE_SIZE = 8192

# A snapshot source returns {key: line} of the totals it reads (cumulative values: only the
# latest reading of a key is worth sending).
SnapshotSource = Callable[[], dict]


class Emitter:
    """The process's one emitter. Its attributes ``on``, ``queue`` and ``cap`` are what the
    recorders read; ``cap`` is 0 until the thread runs, so the first call takes the slow path
    (``overflow``) and starts it."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.snapshot_sources: list[SnapshotSource] = []
        # Called every time the thread wakes: cheap work that bounds a caller-side buffer.
        self.wake_hooks: list[Callable[[], None]] = []
        self._reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork_child)
        atexit.register(self._at_exit)

    def _reset(self) -> None:
        """Fresh state: at start-up and in a forked child (nothing of the parent's queue,
        thread, connection or counters is kept; the parent sends its own lines)."""
        self.on = self.settings.enabled
        self.queue: deque = deque()
        self.cap = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.thread: Optional[threading.Thread] = None
        self.stopping = False
        self.wake = threading.Event()
        self.flush_requested = 0
        self.flush_done = 0
        self.instance_id = str(uuid.uuid4())
        self.config_gen = 0
        self._line_cache: dict = {}
        self.snap_lock = threading.Lock()  # a reading and its store are one step
        self.snap_pending: dict = {}  # key -> line, the latest reading of each total
        self.next_snapshot = 0.0
        # counters (stats())
        self.popped = 0
        self.sent = 0
        self.dropped = 0  # the queue was full, or left unsent at shutdown
        self.invalid = 0  # a value the receiver would reject
        self.send_errors = 0
        self.lost = 0  # lines of a batch that failed after part of it may have been taken
        self.reconnects = 0
        self.connections = 0
        self.rejected = 0

    # -- caller side --

    def put(self, item: tuple) -> None:
        """Queues one tuple (a recorder's, when telemetry is on). The hot recorders inline
        this: a second call would double their cost."""
        if self.on:
            q = self.queue
            if len(q) < self.cap:
                q.append(item)
            else:
                self.overflow(item)

    def overflow(self, item: tuple) -> None:
        """The slow path of a recorder: start the thread, or count a drop."""
        with self.lock:
            if not self.on:
                return
            if self.thread is None and not self.stopping:
                self._start_locked()
            if len(self.queue) < self.cap:
                self.queue.append(item)
            else:
                self.dropped += 1

    def count_invalid(self, n: int = 1) -> None:
        """Counts ``n`` lines not sent because the receiver would reject them."""
        with self.lock:
            self.invalid += n

    def ensure_started(self) -> None:
        """Starts the thread now (snapshot sources need it before any recorder call)."""
        if self.on and self.thread is None:
            with self.lock:
                if self.on and self.thread is None and not self.stopping:
                    self._start_locked()

    def _start_locked(self) -> None:
        self.cap = max(1, self.settings.queue_size)
        t = threading.Thread(target=self._run, name="otelcol-gym-emitter", daemon=True)
        self.thread = t
        t.start()

    # -- control (any thread) --

    def configure(self, endpoint: Optional[str], resource: Optional[dict], interval: Optional[float], queue_size: Optional[int], count_tasks: Optional[bool]) -> None:
        """``otelcol_gym.configure()``: raises ValueError for a bad value; the thread opens a
        new transport with the new resource line when it next wakes."""
        s = self.settings
        if endpoint is not None:
            Endpoint(endpoint)  # raises ValueError on a bad endpoint: a configuration error
            s.endpoint = endpoint
        if resource is not None:
            s.resource = dict(resource)
        if interval is not None:
            if not interval > 0:
                raise ValueError("interval must be > 0")
            s.interval = float(interval)
        if queue_size is not None:
            if queue_size < 1:
                raise ValueError("queue_size must be >= 1")
            s.queue_size = int(queue_size)
        if count_tasks is not None:
            s.count_tasks = bool(count_tasks)
        with self.lock:
            self.on = s.enabled
            self.stopping = False
            if self.thread is not None:
                self.cap = max(1, s.queue_size)
            self.config_gen += 1
            self.next_snapshot = 0.0
        self.wake.set()

    def flush(self, timeout: float) -> bool:
        """Waits until every line queued before the call is sent (or dropped), at most
        ``timeout`` seconds. Returns whether everything was sent."""
        if self.thread is None or threading.current_thread() is self.thread:
            return not self.queue
        deadline = time.monotonic() + max(0.0, timeout)
        with self.cond:
            self.flush_requested += 1
            want = self.flush_requested
            self.wake.set()
            while self.flush_done < want:
                left = deadline - time.monotonic()
                if left <= 0 or self.thread is None or not self.thread.is_alive():
                    return False
                self.cond.wait(left)
        return True

    def shutdown(self, timeout: float) -> bool:
        """Flushes (at most ``timeout`` seconds), then stops the thread; later calls are no-ops
        until ``configure()``."""
        ok = self.flush(timeout)
        with self.lock:
            self.on = False
            self.stopping = True
            t = self.thread
        self.wake.set()
        if t is not None and t is not threading.current_thread():
            t.join(max(0.1, min(timeout, 1.0)))
        with self.lock:
            self.thread = None
            self.cap = 0
        return ok

    def stats(self) -> dict[str, int]:
        """``otelcol_gym.stats()``: the counters."""
        q = len(self.queue)
        return {
            "queued": self.popped + q,
            "in_queue": q,
            "sent": self.sent,
            "dropped": self.dropped,
            "invalid": self.invalid,
            "lost": self.lost,
            "send_errors": self.send_errors,
            "reconnects": self.reconnects,
            "connections": self.connections,
            "rejected": self.rejected,
        }

    def _after_fork_child(self) -> None:
        try:
            self._reset()
        except Exception:  # never break the child
            pass

    def _at_exit(self) -> None:
        try:
            if self.thread is not None:
                self.shutdown(self.settings.exit_timeout)
        except Exception:
            pass

    # -- the thread --

    def _snapshots(self) -> None:
        with self.snap_lock:
            for src in list(self.snapshot_sources):
                try:
                    self.snap_pending.update(src())
                except Exception as e:  # a broken snapshot callback never stops the others
                    logger.debug("otelcol_gym: snapshot failed: %s", e)

    def _format(self, items: list, out: list) -> int:
        """Formats the queued tuples into ``out``; returns the bytes added. A tuple whose
        formatter raises, or whose line is too long, is counted as invalid."""
        # Many lines repeat exactly (an outcome with its failure fields, a sandbox +1): a
        # bounded cache of those lines by their tuple skips their formatting. Lines with a
        # measured value (durations) are not cached: they rarely repeat.
        n = 0
        fmts = FORMATTERS
        cacheable = CACHEABLE
        cache = self._line_cache
        bad = 0
        for it in items:
            kind = it[0]
            c = cacheable[kind]
            line = None
            if c:
                key = it if c == CACHE else (it, type(it[1]))
                try:
                    line = cache.get(key)
                except TypeError:  # an unhashable value: the formatter rejects it
                    pass
            if line is None:
                try:
                    line = fmts[kind](it)
                    if len(line) > MAX_LINE_BYTES:
                        raise Invalid("line over %d bytes" % MAX_LINE_BYTES)
                except Exception:
                    bad += 1
                    continue
                if c:
                    if len(cache) >= LINE_CACHE_SIZE:
                        cache.clear()
                    cache[key] = line
            out.append(line)
            n += len(line)
        if bad:
            self.count_invalid(bad)
        return n

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as e:  # pragma: no cover - a bug; never propagate into the process
            logger.error("otelcol_gym: emitter thread stopped: %r", e)

    def _loop(self) -> None:
        """Wake (at least every POLL_SECONDS), run the wake hooks, read the snapshots when due,
        fill one batch from the queue, send it; retry it with backoff when nothing of it can
        have been taken, else count it as lost."""
        gen = -1
        transport: Any = None
        resource = ""
        batch: list[str] = []  # formatted lines not yet sent (at most one batch)
        batch_bytes = 0
        backoff = 0.0
        retry_at = 0.0
        q = self.queue
        while True:
            if gen != self.config_gen:
                gen = self.config_gen
                if transport is not None:
                    transport.close()
                try:
                    transport = make_transport(Endpoint(self.settings.endpoint), headers=self.settings.headers)
                except ValueError as e:
                    logger.error("otelcol_gym: %s; nothing is sent", e)
                    transport = None
                resource = resource_line(build_resource(self.settings.resource, self.instance_id))
            for hook in self.wake_hooks:
                try:
                    hook()
                except Exception as e:  # pragma: no cover - a bug; never stop the thread
                    logger.debug("otelcol_gym: wake hook failed: %s", e)
            now = time.monotonic()
            flush_want = self.flush_requested
            stopping = self.stopping
            if now >= self.next_snapshot or flush_want != self.flush_done:
                self._snapshots()
                self.next_snapshot = now + self.settings.interval
            # Fill the batch from the queue.
            if not batch:
                batch_bytes = 0
                popleft = q.popleft
                while q and len(batch) < BATCH_LINES and batch_bytes < BATCH_BYTES:
                    items = []
                    try:
                        for _ in range(256):
                            items.append(popleft())
                    except IndexError:
                        pass
                    self.popped += len(items)
                    batch_bytes += self._format(items, batch)
            snaps = self.snap_pending
            if (batch or snaps) and transport is not None and now >= retry_at:
                if snaps:
                    with self.snap_lock:
                        snaps, self.snap_pending = self.snap_pending, {}
                body = ("".join(batch) + "".join(snaps.values())).encode("ascii")
                nlines = len(batch) + len(snaps)
                try:
                    fresh = transport.send(resource, body)
                except SendError as e:
                    self.send_errors += 1
                    if e.retry:
                        backoff = min(BACKOFF_MAX, max(BACKOFF_MIN, backoff * 2))
                        retry_at = time.monotonic() + max(backoff, e.wait)
                        with self.snap_lock:  # keep them unless a newer reading came
                            for k, v in snaps.items():
                                self.snap_pending.setdefault(k, v)
                        logger.debug("otelcol_gym: %s; retrying in %.1fs", e, retry_at - time.monotonic())
                    else:
                        self.lost += nlines
                        batch = []
                        logger.debug("otelcol_gym: %s; %d lines lost", e, nlines)
                else:
                    if fresh:
                        self.connections += 1
                        if self.connections > 1:
                            self.reconnects += 1
                    self.sent += nlines
                    if getattr(transport, "rejected", 0):
                        self.rejected += transport.rejected
                        transport.rejected = 0
                    batch = []
                    backoff = 0.0
                    retry_at = 0.0
                    if q:
                        continue
            if stopping:
                # shutdown() has already waited for the flush: what is left is dropped.
                with self.lock:
                    self.dropped += len(batch) + len(q)
                    q.clear()
                break
            if not batch and not q and not self.snap_pending and flush_want != self.flush_done:
                with self.cond:
                    self.flush_done = flush_want
                    self.cond.notify_all()
            if q and not batch:
                continue
            wait = POLL_SECONDS
            if retry_at:
                wait = min(max(0.0, retry_at - time.monotonic()), POLL_SECONDS)
            self.wake.wait(wait)
            self.wake.clear()
        if transport is not None:
            transport.close()


EMITTER = Emitter()
