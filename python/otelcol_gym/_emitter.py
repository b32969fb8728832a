"""The emitter: a bounded queue of small tuples, and a daemon thread that formats them as
events-v1 lines and sends them in batches to the collector.

The caller's side (the recorders) is three attribute reads, one tuple and one
``deque.append``; everything else (validation, formatting, I/O, retries) happens on the
emitter's thread. Nothing here raises into a caller.
"""

from __future__ import annotations

import atexit
import http.client
import logging
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
import uuid
from collections import deque
from json.encoder import encode_basestring_ascii as _encode_string  # type: ignore[attr-defined]
from typing import Any, Callable, Optional

from . import _schema

logger = logging.getLogger("otelcol_gym")

DEFAULT_ENDPOINT = "http://127.0.0.1:4390"
DEFAULT_INTERVAL = 10.0
DEFAULT_QUEUE_SIZE = 65536
DEFAULT_EXIT_TIMEOUT = 2.0
EVENTS_PATH = "/v1/events"

# The receiver's default max_line_bytes: a longer line would be rejected there, so it is not
# sent (every line is ASCII: json's escaping, so characters are bytes).
MAX_LINE_BYTES = 65536
# A batch: at most this many lines or bytes per HTTP body / stream write (the receiver's body
# limit is 16 MiB).
BATCH_LINES = 4096
BATCH_BYTES = 1 << 20
# How long the idle thread sleeps between looks at the queue (the callers never notify it).
POLL_SECONDS = 0.05
# Reconnect backoff, doubled per failure, and the longest Retry-After honoured.
BACKOFF_MIN = 0.1
BACKOFF_MAX = 5.0
RETRY_AFTER_MAX = 60.0
IO_TIMEOUT = 5.0
# The receiver's resource-line limits (the schema's limits.resource_max_attributes and
# resource_max_key_bytes): a line over them is rejected whole, so the emitter leaves out what
# does not fit instead, with a warning.
RESOURCE_MAX_ATTRIBUTES = _schema.RESOURCE_MAX_ATTRIBUTES
RESOURCE_MAX_KEY_BYTES = _schema.RESOURCE_MAX_KEY_BYTES
# Formatted lines kept by their queued tuple (cleared when full).
LINE_CACHE_SIZE = 8192

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
    return "true" if x else "false"


def one_of(x: Any, allowed: frozenset[str]) -> str:
    if x not in allowed:
        raise Invalid("%r is not one of %s" % (x, ", ".join(sorted(allowed))))
    return enc(x)


# ---- configuration ----


def _env_float(name: str, default: float) -> float:
    v = os.environ.get(name, "").strip()
    if not v:
        return default
    try:
        f = float(v)
        if f > 0 and f < 1e9:
            return f
    except ValueError:
        pass
    logger.warning("otelcol_gym: %s=%r is not a positive number; using %s", name, v, default)
    return default


def _env_bool(name: str, default: bool) -> bool:
    v = os.environ.get(name, "").strip().lower()
    if not v:
        return default
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    logger.warning("otelcol_gym: %s=%r is not a boolean; using %s", name, v, default)
    return default


def parse_resource_attributes(value: str) -> dict[str, str]:
    """``OTEL_RESOURCE_ATTRIBUTES``: ``k=v,...``, percent-encoded as OpenTelemetry says."""
    out: dict[str, str] = {}
    for part in value.split(","):
        if "=" not in part:
            continue
        k, v = part.split("=", 1)
        k = urllib.parse.unquote(k.strip())
        if k:
            out[k] = urllib.parse.unquote(v.strip())
    return out


class Endpoint:
    """A parsed endpoint: ``http(s)://host:port[/path]``, ``tcp://host:port``, ``unix:///path``."""

    def __init__(self, url: str) -> None:
        self.url = url
        u = urllib.parse.urlsplit(url)
        self.scheme = u.scheme.lower()
        if self.scheme in ("http", "https"):
            if not u.hostname:
                raise ValueError("endpoint %r names no host" % url)
            self.host: str = u.hostname
            self.port: int = u.port or (443 if self.scheme == "https" else 80)
            self.path = u.path if u.path not in ("", "/") else EVENTS_PATH
            if u.query:
                self.path += "?" + u.query
        elif self.scheme == "tcp":
            if not u.hostname or not u.port:
                raise ValueError("endpoint %r: want tcp://HOST:PORT" % url)
            self.host, self.port, self.path = u.hostname, u.port, ""
        elif self.scheme == "unix":
            path = u.path or u.netloc
            if u.netloc and u.path:
                path = "/" + u.netloc + u.path if not u.netloc.startswith("/") else u.netloc + u.path
            if not path:
                raise ValueError("endpoint %r: want unix:///PATH" % url)
            self.host, self.port, self.path = "", 0, path
        else:
            raise ValueError("endpoint %r: the scheme must be http, https, tcp or unix" % url)

    def __repr__(self) -> str:
        return "Endpoint(%r)" % self.url


class Settings:
    def __init__(self) -> None:
        self.enabled = _env_bool("OTELCOL_GYM_ENABLED", True)
        self.endpoint = os.environ.get("OTELCOL_GYM_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
        self.interval = _env_float("OTELCOL_GYM_INTERVAL", DEFAULT_INTERVAL)
        self.queue_size = int(_env_float("OTELCOL_GYM_QUEUE_SIZE", DEFAULT_QUEUE_SIZE))
        self.count_tasks = _env_bool("OTELCOL_GYM_COUNT_TASKS", False)
        self.exit_timeout = _env_float("OTELCOL_GYM_EXIT_TIMEOUT", DEFAULT_EXIT_TIMEOUT)
        # HTTP headers of every request (`k=v,...`, percent-encoded, as OTEL_EXPORTER_OTLP_HEADERS):
        # for the receiver's bearertokenauth, `authorization=Bearer%20TOKEN`.
        self.headers = parse_resource_attributes(os.environ.get("OTELCOL_GYM_HEADERS", ""))
        self.resource: dict[str, Any] = {}  # configure(resource=...)


def build_resource(extra: dict[str, Any], instance_id: str) -> dict[str, Any]:
    """The resource attributes: defaults, then OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME and
    configure(resource=...); ``process.pid`` is always this process's."""
    # process.pid early: the attributes past the limit are the ones left out.
    attrs: dict[str, Any] = {"service.name": "nemo-gym", "service.instance.id": instance_id, "process.pid": os.getpid()}
    run_id = os.environ.get("NEMO_GYM_OTEL_RUN_ID") or os.environ.get("SLURM_JOB_ID")
    if run_id:
        attrs["nemo.run.id"] = run_id
    try:
        attrs["host.name"] = socket.gethostname()
    except OSError:
        pass
    attrs.update(parse_resource_attributes(os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")))
    if os.environ.get("OTEL_SERVICE_NAME"):
        attrs["service.name"] = os.environ["OTEL_SERVICE_NAME"]
    for k, v in extra.items():
        if v is None:
            attrs.pop(k, None)
        else:
            attrs[k] = v
    attrs["process.pid"] = os.getpid()
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if not isinstance(k, str) or not k or len(k.encode("utf-8", "surrogatepass")) > RESOURCE_MAX_KEY_BYTES:
            logger.warning("otelcol_gym: resource attribute key %r left out (1..%d bytes)", k, RESOURCE_MAX_KEY_BYTES)
            continue
        if len(out) == RESOURCE_MAX_ATTRIBUTES:
            logger.warning("otelcol_gym: more than %d resource attributes; %r and the ones after it left out", RESOURCE_MAX_ATTRIBUTES, k)
            break
        if not isinstance(v, (str, bool, int)):
            v = str(v)
        out[k] = v
    return out


def resource_line(attrs: dict[str, Any]) -> str:
    parts = []
    for k, v in attrs.items():
        if isinstance(v, bool):
            parts.append("%s:%s" % (enc(k), boolean(v)))
        elif isinstance(v, int):
            parts.append("%s:%s" % (enc(k), integer(v, nonneg=False)))
        else:
            parts.append("%s:%s" % (enc(k), enc(v)))
    return '{"event":"resource","attributes":{%s}}\n' % ",".join(parts)


# ---- transports (emitter thread only) ----


class SendError(Exception):
    """A batch could not be sent. ``retry``: nothing of it reached the collector, so it can be
    sent again; otherwise it may have been applied in part, and sending it again could count
    it twice."""

    def __init__(self, msg: str, retry: bool, wait: float = 0.0) -> None:
        super().__init__(msg)
        self.retry = retry
        self.wait = wait


class HTTPTransport:
    """POST /v1/events on one keep-alive connection; the resource line first in every body."""

    def __init__(self, ep: Endpoint, timeout: float, headers: Optional[dict[str, str]] = None) -> None:
        self.ep = ep
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.headers["Content-Type"] = "application/x-ndjson"
        self.conn: Optional[http.client.HTTPConnection] = None
        self.rejected = 0  # lines the receiver answered as rejected

    def _connect(self) -> http.client.HTTPConnection:
        if self.ep.scheme == "https":
            return http.client.HTTPSConnection(self.ep.host, self.ep.port, timeout=self.timeout, context=ssl.create_default_context())
        return http.client.HTTPConnection(self.ep.host, self.ep.port, timeout=self.timeout)

    def send(self, resource: str, body: bytes) -> bool:
        """Sends one body; returns True when a new connection was opened."""
        data = resource.encode("ascii") + body
        fresh = self.conn is None
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = self._connect()
                fresh = True
            conn = self.conn
            try:
                conn.request("POST", self.ep.path, body=data, headers=self.headers)
            except (ConnectionRefusedError, socket.gaierror, TimeoutError) as e:
                self.close()
                raise SendError("connect to %s: %s" % (self.ep.url, e), retry=True) from None
            except OSError as e:
                # Writing the request failed: on a reused connection, the collector closed it
                # while idle and read nothing of this one; try once more on a new one.
                self.close()
                if not fresh and attempt == 0:
                    continue
                raise SendError("send to %s: %s" % (self.ep.url, e), retry=True) from None
            try:
                resp = conn.getresponse()
                answer = resp.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                self.close()
                if not fresh and attempt == 0:
                    continue  # the idle keep-alive race: closed before our request was read
                raise SendError("no answer from %s: %s" % (self.ep.url, e), retry=False) from None
            except (OSError, http.client.HTTPException) as e:
                self.close()
                raise SendError("no answer from %s: %s" % (self.ep.url, e), retry=False) from None
            if resp.getheader("Connection", "").lower() == "close" or resp.will_close:
                self.close()
            status = resp.status
            if status == 200 or status == 400:
                self.rejected += _rejected_of(answer)
                return fresh
            if status == 503 or status == 429:
                raise SendError("%s answered %d" % (self.ep.url, status), retry=True, wait=_retry_after(resp.getheader("Retry-After")))
            if status >= 500:
                raise SendError("%s answered %d" % (self.ep.url, status), retry=True, wait=1.0)
            # 401, 404, 413, ...: the body will never be taken; it is dropped.
            raise SendError("%s answered %d: %s" % (self.ep.url, status, answer[:200].decode("utf-8", "replace")), retry=False)
        raise SendError("send to %s failed" % self.ep.url, retry=True)  # not reached

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None


def _rejected_of(answer: bytes) -> int:
    import json

    try:
        return int(json.loads(answer).get("rejected", 0))
    except Exception:
        return 0


def _retry_after(v: Optional[str]) -> float:
    if v:
        try:
            return min(max(float(v), 0.0), RETRY_AFTER_MAX)
        except ValueError:
            pass
    return 1.0


class StreamTransport:
    """One TCP or Unix-domain stream connection; the resource line first on each one."""

    def __init__(self, ep: Endpoint, timeout: float) -> None:
        self.ep = ep
        self.timeout = timeout
        self.sock: Optional[socket.socket] = None

    def _peer_closed(self, s: socket.socket) -> bool:
        # The receiver never writes: a readable socket means it closed (or reset) the stream.
        # Seen before writing, so a collector that stopped costs no batch.
        try:
            r, _, _ = select.select([s], [], [], 0)
            if not r:
                return False
            return s.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def send(self, resource: str, body: bytes) -> bool:
        fresh = False
        if self.sock is not None and self._peer_closed(self.sock):
            self.close()
        if self.sock is None:
            try:
                if self.ep.scheme == "unix":
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.settimeout(self.timeout)
                    try:
                        s.connect(self.ep.path)
                    except BaseException:
                        s.close()
                        raise
                else:
                    s = socket.create_connection((self.ep.host, self.ep.port), timeout=self.timeout)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as e:
                raise SendError("connect to %s: %s" % (self.ep.url, e), retry=True) from None
            self.sock = s
            fresh = True
            body = resource.encode("ascii") + body
        try:
            self.sock.sendall(body)
        except OSError as e:
            self.close()
            # Part of the batch may have been taken: sending it again could count it twice.
            raise SendError("send to %s: %s" % (self.ep.url, e), retry=False) from None
        return fresh

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None


def make_transport(ep: Endpoint, timeout: float = IO_TIMEOUT, headers: Optional[dict[str, str]] = None) -> Any:
    if ep.scheme in ("http", "https"):
        return HTTPTransport(ep, timeout, headers)
    return StreamTransport(ep, timeout)


# ---- the emitter ----

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
        with self.lock:
            self.invalid += n

    def ensure_started(self) -> None:
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
            if c:
                key = it if c == CACHE else (it, type(it[1]))
                try:
                    line = cache.get(key)
                except TypeError:  # an unhashable value: the formatter rejects it
                    line = None
                if line is None:
                    try:
                        line = fmts[kind](it)
                        if len(line) > MAX_LINE_BYTES:
                            raise Invalid("line over %d bytes" % MAX_LINE_BYTES)
                    except Exception:
                        bad += 1
                        continue
                    if len(cache) >= LINE_CACHE_SIZE:
                        cache.clear()
                    cache[key] = line
            else:
                try:
                    line = fmts[kind](it)
                    if len(line) > MAX_LINE_BYTES:
                        raise Invalid("line over %d bytes" % MAX_LINE_BYTES)
                except Exception:
                    bad += 1
                    continue
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
