"""Gym's memory of its server process trees (``nemo_gym.telemetry.memory``), as events-v1 lines.

Linux process-tree memory sampling for Gym-managed servers, off unless switched on (Gym's
``telemetry.memory_profiling.enabled``; here ``OTELCOL_GYM_MEMORY_PROFILING=true``). The
process that starts the servers (Gym's orchestrator) registers each server's root pid with
``register_server``; a daemon thread then samples, every interval (``OTELCOL_GYM_INTERVAL``,
at least 1 s), each registered tree (the root and its descendants) and the host, and queues
one ``memory.sample`` line: ``gym.server.memory.usage`` and ``sampled_peak`` by
``memory.type`` (``rss``, and ``pss`` where the kernel reports it), ``gym.server.processes``,
and the four ``gym.host.memory.*`` gauges.

Where it reads, per process: ``/proc/<pid>/smaps_rollup`` (``Rss`` and ``Pss``), else
``/proc/<pid>/statm`` (resident pages: RSS only, and the tree then reports no PSS). The
tree: ``/proc/<pid>/task/<tid>/children``, else the parent pid of every ``/proc/<pid>/stat``
(one pass over ``/proc`` per sample). The host: ``/proc/meminfo``. Summing RSS over a tree
counts shared pages once per process; PSS shares them out, so it is the figure to add up.
A sample's cost (see the project's ``docs/performance.md``) is the kernel's walk of each
process's page tables for ``smaps_rollup``; it is spent on the sampler's thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from . import _schema
from ._lines import integer, name, register_kind
from ._sender import EMITTER as _E

__all__ = [
    "HostMemory",
    "MemoryProfiler",
    "ProcessTreeMemory",
    "ServerMemoryTarget",
    "collect_host_memory",
    "collect_process_tree_memory",
    "memory_profiler",
    "process_tree_memory_supported",
    "register_server",
    "unregister_server",
]

logger = logging.getLogger(__name__)

SERVER_MEMORY_USAGE_INSTRUMENT = _schema.GYM_SERVER_MEMORY_USAGE.name
SERVER_MEMORY_SAMPLED_PEAK_INSTRUMENT = _schema.GYM_SERVER_MEMORY_SAMPLED_PEAK.name
SERVER_PROCESSES_INSTRUMENT = _schema.GYM_SERVER_PROCESSES.name
HOST_MEMORY_USAGE_INSTRUMENT = _schema.GYM_HOST_MEMORY_USAGE.name
HOST_MEMORY_AVAILABLE_INSTRUMENT = _schema.GYM_HOST_MEMORY_AVAILABLE.name
HOST_MEMORY_TOTAL_INSTRUMENT = _schema.GYM_HOST_MEMORY_TOTAL.name
HOST_MEMORY_SAMPLED_PEAK_INSTRUMENT = _schema.GYM_HOST_MEMORY_SAMPLED_PEAK.name
MEMORY_TYPE_ATTRIBUTE = _schema.ATTR_MEMORY_TYPE.key
PROCESS_PID_ATTRIBUTE = _schema.ATTR_PROCESS_PID.key

# The bounds of one profiler: servers sampled, and the shortest interval between samples.
MAX_SERVERS = 64
MIN_INTERVAL_SECONDS = 1.0
# Processes of one tree read per sample, at most (a fork bomb costs the sampler no more).
MAX_TREE_PROCESSES = 4096

_PROC = "/proc"
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class HostMemory:
    """Current host memory capacity and pressure, in bytes."""

    used_bytes: int
    available_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class ProcessTreeMemory:
    """One process tree's current memory, in bytes: summed over its processes. ``pss_bytes``
    is None when a process of the tree reported none (no ``smaps_rollup``)."""

    rss_bytes: int
    pss_bytes: Optional[int]
    processes: int


@dataclass(frozen=True)
class ServerMemoryTarget:
    """One configured Gym server and the root process Gym spawned for it."""

    server_name: str
    server_type: str
    pid: int


# ---- reading /proc ----


def process_tree_memory_supported() -> bool:
    """Whether this host exposes Linux procfs memory accounting."""
    return os.path.exists(os.path.join(_PROC, "self", "statm"))


def _read_process_memory(pid: int) -> Optional[tuple[int, Optional[int]]]:
    """Return (rss, pss) bytes for one process, or None after an exit race. pss is None
    where ``smaps_rollup`` cannot be read (an old kernel, or no permission)."""
    try:
        with open("%s/%d/smaps_rollup" % (_PROC, pid), "rb") as f:
            data = f.read()
        rss = pss = -1
        for line in data.split(b"\n"):
            if line.startswith(b"Rss:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith(b"Pss:"):
                pss = int(line.split()[1]) * 1024
                break  # Pss comes after Rss
        if rss >= 0 and pss >= 0:
            return rss, pss
    except FileNotFoundError:
        if not os.path.exists("%s/%d" % (_PROC, pid)):
            return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("%s/%d/statm" % (_PROC, pid), "rb") as f:
            return int(f.read().split()[1]) * _PAGE_SIZE, None
    except (OSError, ValueError, IndexError):
        return None


def _children_files_work() -> bool:
    return os.path.exists("%s/self/task/%d/children" % (_PROC, threading.get_native_id()))


def _children_of(pid: int) -> Optional[list[int]]:
    """The children of every thread of pid, from ``task/*/children``; None where the kernel
    has no such files."""
    try:
        tids = os.listdir("%s/%d/task" % (_PROC, pid))
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open("%s/%d/task/%s/children" % (_PROC, pid, tid), "rb") as f:
                out.extend(int(c) for c in f.read().split())
        except FileNotFoundError:
            if not os.path.exists("%s/%d/task/%s" % (_PROC, pid, tid)):
                continue  # the thread ended
            return None
        except (OSError, ValueError):
            continue
    return out


def _parent_map() -> dict[int, list[int]]:
    """Children by parent pid, from the fourth field of every ``/proc/<pid>/stat``."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir(_PROC):
        if not entry.isdigit():
            continue
        try:
            with open("%s/%s/stat" % (_PROC, entry), "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split(None, 2)[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _descendant_pids(root: int, parents: Optional[dict[int, list[int]]] = None) -> list[int]:
    """Return a snapshot of a Linux process tree, including its root, each process before
    its children (at most ``MAX_TREE_PROCESSES``). ``parents``: a ``_parent_map()`` to use
    where the kernel has no ``children`` files (one pass over /proc for several trees)."""
    out = [root]
    seen = {root}
    i = 0
    while i < len(out) and len(out) < MAX_TREE_PROCESSES:
        pid = out[i]
        i += 1
        kids = None if parents is not None else _children_of(pid)
        if kids is None:
            if parents is None:
                parents = _parent_map()
            kids = parents.get(pid, [])
        for k in kids:
            if k not in seen and len(out) < MAX_TREE_PROCESSES:
                seen.add(k)
                out.append(k)
    return out


def collect_process_tree_memory(pid: int, parents: Optional[dict[int, list[int]]] = None) -> ProcessTreeMemory:
    """Measure current RSS and PSS for a root process and its descendants. Raises
    ``ProcessLookupError`` when the root has exited."""
    rss = 0
    pss: Optional[int] = 0
    n = 0
    for p in _descendant_pids(pid, parents):
        m = _read_process_memory(p)
        if m is None:
            if p == pid:
                raise ProcessLookupError(pid)
            continue  # exited meanwhile
        rss += m[0]
        pss = None if pss is None or m[1] is None else pss + m[1]
        n += 1
    return ProcessTreeMemory(rss, pss, n)


def collect_host_memory() -> HostMemory:
    """Measure current host memory from ``/proc/meminfo``, as psutil's ``virtual_memory``
    counts it on Linux: used is total - free - buffers - cached (with reclaimable slab),
    available is ``MemAvailable``."""
    info: dict[bytes, int] = {}
    with open(_PROC + "/meminfo", "rb") as f:
        for line in f:
            k, _, v = line.partition(b":")
            parts = v.split()
            if parts:
                info[k] = int(parts[0]) * 1024
    total = info[b"MemTotal"]
    free = info.get(b"MemFree", 0)
    cached = info.get(b"Cached", 0) + info.get(b"SReclaimable", 0)
    used = total - free - info.get(b"Buffers", 0) - cached
    if used < 0:
        used = total - free
    available = info.get(b"MemAvailable", free + info.get(b"Buffers", 0) + cached)
    return HostMemory(used, available, total)


# ---- the line (the emitter's thread) ----


def _server_entry(s: tuple) -> str:
    server_name, server_type, pid, rss, pss, rss_peak, pss_peak, processes = s
    if pss is None:
        return '{"server_name":%s,"server_type":%s,"pid":%s,"rss":%s,"rss_peak":%s,"processes":%s}' % (
            name(server_name), name(server_type), integer(pid), integer(rss), integer(rss_peak), integer(processes))
    return '{"server_name":%s,"server_type":%s,"pid":%s,"rss":%s,"pss":%s,"rss_peak":%s,"pss_peak":%s,"processes":%s}' % (
        name(server_name), name(server_type), integer(pid), integer(rss), integer(pss), integer(rss_peak), integer(pss_peak), integer(processes))


def _fmt_sample(it: tuple) -> str:
    _, servers, host = it
    parts = []
    entries = []
    bad = 0
    for s in servers:
        try:
            entries.append(_server_entry(s))
        except (ValueError, TypeError, AttributeError):
            bad += 1  # left out, and counted: the receiver would reject the whole line for it
    if bad:
        _E.count_invalid(bad)
    if entries:
        parts.append('"servers":[%s]' % ",".join(entries))
    if host is not None:
        parts.append('"host":{"usage":%s,"available":%s,"total":%s,"peak":%s}' % tuple(integer(v) for v in host))
    return '{"event":"memory.sample"%s}\n' % "".join("," + p for p in parts)


_SAMPLE = register_kind(_fmt_sample)


_put = _E.put


# ---- the profiler ----


class MemoryProfiler:
    """Periodically report host memory and Gym-managed server process trees.

    ``interval_seconds`` is raised to ``MIN_INTERVAL_SECONDS`` (1 s); at most
    ``max_servers`` targets (at most ``MAX_SERVERS``, 64) are sampled. ``collector`` measures one
    tree by its root pid, ``host_collector`` the host (None: no host memory). Each sample
    queues one ``memory.sample`` line, with the peaks seen so far; ``sample()`` takes one at
    once on the caller's thread, ``start()`` starts the daemon thread that takes one every
    interval. Nothing here raises into the caller: a failed reading is logged and skipped.
    """

    def __init__(
        self,
        interval_seconds: float,
        collector: Callable[[int], ProcessTreeMemory] = collect_process_tree_memory,
        host_collector: Optional[Callable[[], HostMemory]] = collect_host_memory,
        max_servers: int = MAX_SERVERS,
    ) -> None:
        try:
            interval = float(interval_seconds)
        except (TypeError, ValueError):
            interval = MIN_INTERVAL_SECONDS
        self.interval_seconds = interval if interval >= MIN_INTERVAL_SECONDS else MIN_INTERVAL_SECONDS
        self._collector = collector
        self._host_collector = host_collector
        try:
            self.max_servers = max(0, min(int(max_servers), MAX_SERVERS))
        except (TypeError, ValueError):
            self.max_servers = MAX_SERVERS
        self._lock = threading.Lock()
        self._targets: dict[int, ServerMemoryTarget] = {}
        self._peaks: dict[int, list[Optional[int]]] = {}  # pid -> [rss peak, pss peak]
        self.host_peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # -- targets (any thread) --

    def add_target(self, target: ServerMemoryTarget) -> bool:
        """Sample ``target`` from the next sample on; False when ``max_servers`` are
        sampled already (logged)."""
        with self._lock:
            if target.pid not in self._targets and len(self._targets) >= self.max_servers:
                logger.warning("otelcol_gym: %d servers sampled already; %s (pid %d) is not", self.max_servers, target.server_name, target.pid)
                return False
            self._targets[target.pid] = target
            return True

    def remove_target(self, pid: int) -> None:
        """Stop sampling the tree rooted at ``pid`` and forget its peaks."""
        with self._lock:
            self._targets.pop(pid, None)
            self._peaks.pop(pid, None)

    def targets(self) -> list[ServerMemoryTarget]:
        with self._lock:
            return list(self._targets.values())

    def peaks(self, pid: int) -> Optional[tuple[Optional[int], Optional[int]]]:
        """The sampled (rss, pss) peaks of the tree rooted at ``pid``, or None."""
        with self._lock:
            p = self._peaks.get(pid)
            return None if p is None else (p[0], p[1])

    # -- sampling --

    def sample(self) -> Optional[tuple]:
        """Take one sample now and queue its ``memory.sample`` line; returns the queued tuple,
        or None when there was nothing to report."""
        targets = self.targets()
        parents = None if not targets or _children_files_work() else _parent_map()
        servers = []
        for t in targets:
            try:
                if self._collector is collect_process_tree_memory:
                    m = collect_process_tree_memory(t.pid, parents)  # one pass over /proc for every tree
                else:
                    m = self._collector(t.pid)
            except ProcessLookupError:
                logger.debug("otelcol_gym: server %s (pid %d) has exited; no longer sampled", t.server_name, t.pid)
                self.remove_target(t.pid)
                continue
            except Exception as e:
                logger.debug("otelcol_gym: memory of %s (pid %d) not read: %s", t.server_name, t.pid, e)
                continue
            with self._lock:
                if t.pid not in self._targets:
                    continue
                p = self._peaks.setdefault(t.pid, [0, 0])
                p[0] = max(p[0] or 0, m.rss_bytes)
                p[1] = None if m.pss_bytes is None else max(p[1] or 0, m.pss_bytes)
                servers.append((t.server_name, t.server_type, t.pid, m.rss_bytes, m.pss_bytes, p[0], p[1], m.processes))
        host = None
        if self._host_collector is not None:
            try:
                h = self._host_collector()
                self.host_peak = max(self.host_peak, h.used_bytes)
                host = (h.used_bytes, h.available_bytes, h.total_bytes, self.host_peak)
            except Exception as e:
                logger.debug("otelcol_gym: host memory not read: %s", e)
        self.samples += 1
        if not servers and host is None:
            return None
        item = (_SAMPLE, tuple(servers), host)
        _put(item)
        return item

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception as e:  # pragma: no cover - a bug; never stop the thread
                logger.debug("otelcol_gym: memory sample failed: %s", e)
            if self._stop.wait(self.interval_seconds):
                return

    def start(self) -> None:
        """Start the daemon thread (a sample now, then one every interval)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="otelcol-gym-memory", daemon=True)
            self._thread.start()
        _E.ensure_started()

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the thread (it takes no further sample)."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        self._thread = None

    @property
    def running(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()


# ---- the process's profiler, switched on by the settings ----

_PROFILER: Optional[MemoryProfiler] = None
_PROFILER_LOCK = threading.Lock()


def memory_profiling_enabled() -> bool:
    """Whether the process samples its servers' memory: telemetry on and
    ``OTELCOL_GYM_MEMORY_PROFILING`` true (Gym's ``telemetry.memory_profiling.enabled``)."""
    return bool(_E.on and _E.settings.memory_profiling)


def memory_profiler() -> Optional[MemoryProfiler]:
    """The process's profiler while it runs, else None."""
    return _PROFILER


def register_server(server_name: str, server_type: str, pid: int) -> bool:
    """Sample the memory of the server tree rooted at ``pid`` (the process Gym spawned for
    the server), starting the process's profiler at the first registration. Returns False,
    and does nothing else, when memory profiling is off, procfs has no memory accounting, or
    ``MAX_SERVERS`` are sampled already."""
    global _PROFILER
    if not memory_profiling_enabled() or not process_tree_memory_supported():
        return False
    if not (server_name and isinstance(server_name, str) and server_type and isinstance(server_type, str)):
        logger.warning("otelcol_gym: a server to sample needs a name and a type; got %r, %r", server_name, server_type)
        return False
    try:
        with _PROFILER_LOCK:
            if _PROFILER is None:
                _PROFILER = MemoryProfiler(_E.settings.interval)
            prof = _PROFILER
        ok = prof.add_target(ServerMemoryTarget(server_name, server_type, int(pid)))
        if ok:
            prof.start()
        return ok
    except Exception as e:
        logger.warning("otelcol_gym: memory profiling of %s not started: %s", server_name, e)
        return False


def unregister_server(pid: int) -> None:
    """Stop sampling the tree rooted at ``pid``; the last one stops the profiler's thread."""
    global _PROFILER
    with _PROFILER_LOCK:
        prof = _PROFILER
        if prof is None:
            return
        prof.remove_target(pid)
        if not prof.targets():
            prof.stop()
            _PROFILER = None


def _after_fork_child() -> None:
    # The sampler's thread does not run in the child: its servers stay the parent's.
    global _PROFILER, _PROFILER_LOCK
    _PROFILER, _PROFILER_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_child)


def _reset_for_testing() -> None:
    global _PROFILER
    with _PROFILER_LOCK:
        if _PROFILER is not None:
            _PROFILER.stop()
        _PROFILER = None


