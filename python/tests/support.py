"""Real loopback listeners standing in for the collector's gym receiver, for the unit tests."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

import otelcol_gym


class StreamCollector:
    """A TCP or Unix-domain listener keeping the lines of every connection."""

    def __init__(self, kind: str = "unix", path: Optional[str] = None, port: int = 0) -> None:
        self.kind = kind
        self.lock = threading.Lock()
        self.connections: list[list[str]] = []
        if kind == "unix":
            self.dir = tempfile.mkdtemp(prefix="otelcol-gym-test-")
            self.path = path or os.path.join(self.dir, "gym.sock")
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(self.path)
            self.endpoint = "unix://" + self.path
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(("127.0.0.1", port))
            self.port = self.sock.getsockname()[1]
            self.endpoint = "tcp://127.0.0.1:%d" % self.port
        self.sock.listen(16)
        self.closed = False
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                lines: list[str] = []
                self.connections.append(lines)
                self.conns.append(c)
            threading.Thread(target=self._read, args=(c, lines), daemon=True).start()

    def _read(self, c: socket.socket, lines: list[str]) -> None:
        buf = b""
        while True:
            try:
                data = c.recv(1 << 16)
            except OSError:
                break
            if not data:
                break
            buf += data
            *done, buf = buf.split(b"\n")
            with self.lock:
                lines.extend(d.decode("ascii") for d in done)
        c.close()

    def lines(self) -> list[str]:
        with self.lock:
            return [l for conn in self.connections for l in conn]

    def events(self, event: Optional[str] = None) -> list[dict[str, Any]]:
        out = [json.loads(l) for l in self.lines()]
        return [e for e in out if event is None or e["event"] == event]

    def close(self) -> None:
        self.closed = True
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() (closing alone does not)
        except OSError:
            pass
        self.sock.close()
        if self.kind == "unix":
            try:
                os.unlink(self.path)
            except OSError:
                pass


class HTTPCollector:
    """POST /v1/events: keeps every body and its headers; can answer 503 for a while."""

    def __init__(self, idle_timeout: Optional[float] = None) -> None:
        self.lock = threading.Lock()
        self.bodies: list[tuple[dict[str, str], str]] = []
        self.refuse = 0  # answer the next N requests 503
        self.retry_after = "1"
        self.refused = 0
        self.peers: set = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = idle_timeout  # a kept-alive connection idle this long is closed

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one_request(self) -> None:
                try:
                    super().handle_one_request()
                except TimeoutError:  # the idle timeout: close the connection quietly
                    self.close_connection = True

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n).decode("ascii")
                with outer.lock:
                    outer.peers.add(self.client_address)
                    if outer.refuse > 0:
                        outer.refuse -= 1
                        outer.refused += 1
                        self.send_response(503)
                        self.send_header("Retry-After", outer.retry_after)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    outer.bodies.append((dict(self.headers), body))
                lines = [l for l in body.split("\n") if l]
                ans = json.dumps({"accepted": len(lines), "rejected": 0, "unknown": 0, "errors": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(ans)))
                self.end_headers()
                self.wfile.write(ans)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def lines(self) -> list[str]:
        with self.lock:
            return [l for _, b in self.bodies for l in b.split("\n") if l]

    def events(self, event: Optional[str] = None) -> list[dict[str, Any]]:
        out = [json.loads(l) for l in self.lines()]
        return [e for e in out if event is None or e["event"] == event]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def use(endpoint: str, **kw: Any) -> None:
    """Points the process's emitter at endpoint, with a short interval."""
    kw.setdefault("interval", 0.2)
    otelcol_gym.configure(endpoint=endpoint, **kw)
