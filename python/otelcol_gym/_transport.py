"""The transports of the emitter's thread: HTTP (POST /v1/events on one keep-alive
connection) and streams (TCP or Unix-domain). Each sends the resource line first, in every
HTTP body and on every new stream connection, and raises ``SendError`` when a batch could not
be sent. Only the emitter's thread uses them."""

from __future__ import annotations

import http.client
import select
import socket
import ssl
from typing import Any, Optional, Union

from ._settings import Endpoint

# The longest Retry-After honoured, and the timeout of every socket operation.
RETRY_AFTER_MAX = 60.0
IO_TIMEOUT = 5.0


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
            _close_quietly(self.conn)
            self.conn = None


def _close_quietly(conn: Any) -> None:
    """Closes a connection that may be broken already: there is nothing left to tell."""
    try:
        conn.close()
    except Exception:
        pass


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
            _close_quietly(self.sock)
            self.sock = None


# A transport: ``send(resource, body)`` returns whether a new connection was opened for it, or
# raises SendError; ``close()`` closes its connection (the next send opens one).
Transport = Union[HTTPTransport, StreamTransport]


def make_transport(ep: Endpoint, timeout: float = IO_TIMEOUT, headers: Optional[dict[str, str]] = None) -> Transport:
    """The transport of the endpoint's scheme; it connects at its first send."""
    if ep.scheme in ("http", "https"):
        return HTTPTransport(ep, timeout, headers)
    return StreamTransport(ep, timeout)
