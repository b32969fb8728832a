"""The emitter's settings, read from the environment once at import (``configure()``
overrides them), the endpoint they name, and the process's resource attributes."""

from __future__ import annotations

import logging
import os
import socket
import urllib.parse
from typing import Any

from . import _schema

logger = logging.getLogger("otelcol_gym")

DEFAULT_ENDPOINT = "http://127.0.0.1:4390"
DEFAULT_INTERVAL = 10.0
DEFAULT_QUEUE_SIZE = 65536
DEFAULT_EXIT_TIMEOUT = 2.0
EVENTS_PATH = "/v1/events"

# The receiver's resource-line limits (the schema's limits.resource_max_attributes and
# resource_max_key_bytes): a line over them is rejected whole, so the emitter leaves out what
# does not fit instead, with a warning.
RESOURCE_MAX_ATTRIBUTES = _schema.RESOURCE_MAX_ATTRIBUTES
RESOURCE_MAX_KEY_BYTES = _schema.RESOURCE_MAX_KEY_BYTES


def _env_float(name: str, default: float) -> float:
    """The positive number (below 1e9) of environment variable ``name``, else ``default``
    (with a warning when it is set to something else)."""
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
    """The boolean (1/true/yes/on, 0/false/no/off) of environment variable ``name``, else
    ``default`` (with a warning when it is set to something else)."""
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
    """The settings of the process's emitter: the environment's (``OTELCOL_GYM_*``), then
    ``configure()``'s."""

    def __init__(self) -> None:
        self.enabled = _env_bool("OTELCOL_GYM_ENABLED", True)
        self.endpoint = os.environ.get("OTELCOL_GYM_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
        self.interval = _env_float("OTELCOL_GYM_INTERVAL", DEFAULT_INTERVAL)
        self.queue_size = int(_env_float("OTELCOL_GYM_QUEUE_SIZE", DEFAULT_QUEUE_SIZE))
        self.count_tasks = _env_bool("OTELCOL_GYM_COUNT_TASKS", False)
        # Gym's telemetry.memory_profiling.enabled: sample the registered servers' memory.
        self.memory_profiling = _env_bool("OTELCOL_GYM_MEMORY_PROFILING", False)
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
