"""Benchmarks of the otelcol_gym emitter (``make bench-python``; ``make bench`` runs it too).

1. The cost on the caller's thread, per call, measured with ``timeit`` (median of repeats):
   ``record_rollout_completed`` with failure fields, ``record_sandbox_exec_duration``,
   ``RequestCounts.count_response`` (with the emitter's thread folding its buffer meanwhile,
   and the fold's own cost per response on that thread), side by side with the floors of a bare ``deque.append``
   of a tuple and an ``int +=`` on an attribute, and a recorder with ``OTELCOL_GYM_ENABLED``
   false. The emitter runs and sends to a Unix socket read by another process meanwhile
   (each repeat starts with an empty queue), so its thread's share of the GIL is in the
   figures, as it would be in a Gym process.
2. The emitter's thread alone: lines per second it formats and writes to a Unix socket that
   another process reads (a queue filled beforehand, then timed until ``flush`` returns).
3. ``concurrency.MeteredSemaphore`` against ``asyncio.BoundedSemaphore``: the caller's cost
   of one uncontended ``acquire()`` and ``release()`` pair, and of one ``async with``.
4. The memory sampler: CPU time of one sample of a server tree of four real processes (a
   ``python3`` root and three sleeping ``python3`` children) and of the host, and its parts.

Each measurement runs in a fresh interpreter. Prints a Markdown table and, last, one JSON line.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
# Each measurement's PYTHONPATH: the package, and the tests' folder for the process tree the
# memory measurement samples (proctree, the memory tests' own).
PYTHONPATH = PKG + os.pathsep + os.path.join(PKG, "tests")

# A reader of a Unix socket that discards what it reads, in its own process (its own GIL).
READER = r"""
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    while c.recv(1 << 20):
        pass
    c.close()
"""

CALLER = r"""
import json, os, statistics, sys, timeit
from collections import deque
import otelcol_gym
from otelcol_gym import gym_metrics as gm, observer as ob

NUMBER, REPEAT = 2000, 301  # short repeats: the median one is rarely preempted on a busy machine
mode = sys.argv[2]
import time
# "cpu": the caller thread's own CPU time (time.thread_time), which leaves out the time the
# thread was not running (preempted by other processes of a busy machine, or waiting for the
# GIL); the others: wall-clock time (time.perf_counter, timeit's default).
timer = time.thread_time if sys.argv[3] == "cpu" else time.perf_counter
if mode == "idle":
    # Nobody listens: the thread holds one batch and waits in its backoff, so the timing is
    # the caller's own work (the queue is emptied before each repeat).
    otelcol_gym.configure(endpoint="unix://" + sys.argv[1] + ".nobody")
    gm.record_sandbox_create_retry("warm-up")
    import time; time.sleep(0.5)
else:
    otelcol_gym.configure(endpoint="unix://" + sys.argv[1])
    gm.record_sandbox_create_retry("warm-up")
    otelcol_gym.flush(10)
from otelcol_gym import _sender
E = _sender.EMITTER
rc = ob.RequestCounts()
rc.count_response(200)
E.wake_hooks.append(rc.fold)  # folded by the emitter's thread meanwhile, as the observer's are

class C:
    n = 0
c = C()
q = deque()
env = dict(gm=gm, rc=rc, c=c, q=q)
cases = {
    "record_rollout_completed (failure fields)": 'gm.record_rollout_completed("failed", "math", "agent_request_failed", "transport_timeout", "TimeoutError")',
    "record_sandbox_exec_duration": 'gm.record_sandbox_exec_duration(88.125, "docker")',
    "RequestCounts.count_response": "rc.count_response(200)",
    "record_model_call (9 keyword arguments)": 'gm.record_model_call(server_name="policy_model", dialect="chat", latency_ms=812.5, ttft_ms=90.25, error_category=None, finish_reason="stop", tokens_in=900, tokens_out=45, tokens_reasoning=None)',
    "floor: deque.append of a tuple": 'q.append((5, 88.125, "docker"))',
    "floor: int += (attribute)": "c.n += 1",
}
out = {}
for label, stmt in cases.items():
    setup = "E.queue.clear(); q.clear()" if mode == "idle" else "otelcol_gym.flush(10); q.clear()"
    times = timeit.repeat(stmt, setup=setup, number=NUMBER, repeat=REPEAT, timer=timer, globals=dict(env, otelcol_gym=otelcol_gym, E=E))
    per = sorted(t / NUMBER * 1e9 for t in times)
    out[label] = {"median_ns": statistics.median(per), "min_ns": per[0], "p90_ns": per[int(len(per) * 0.9)]}
if mode != "idle":
    otelcol_gym.flush(10)
# The emitter thread's side of count_response: folding buffered responses into the dict.
E.wake_hooks.remove(rc.fold)
folds = []
for _ in range(21):
    for i in range(100_000):
        rc.count_response(200 if i % 10 else 503)
    t0 = time.perf_counter()
    rc.fold()
    folds.append((time.perf_counter() - t0) / 100_000 * 1e9)
out["_fold_ns"] = statistics.median(folds)
s = otelcol_gym.stats()
out["_stats"] = {k: s[k] for k in ("sent", "dropped", "invalid", "lost")}
print(json.dumps(out))
"""

DISABLED = r"""
import json, statistics, timeit
from otelcol_gym import gym_metrics as gm
times = timeit.repeat('gm.record_sandbox_exec_duration(88.125, "docker")', number=2000, repeat=301, globals={"gm": gm})
print(json.dumps({"median_ns": statistics.median(t / 2000 * 1e9 for t in times)}))
"""

# The same two recorders as Gym writes them on the in-process OpenTelemetry SDK: an attribute
# dict per call and the instrument's add/record (an in-memory reader: no export during timing).
# Needs the SDK importable (OTEL_PYTHON_SDK_PATH, a PYTHONPATH of its source trees); skipped
# when it is not, since PyPI may not be reachable.
SDK = r"""
import json, statistics, sys, time, timeit
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry import version

meter = MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("nemo-gym")
completed = meter.create_counter("gym.rollout.completed_total", unit="1")
exec_ms = meter.create_histogram("gym.sandbox.exec_duration_ms", unit="ms",
    explicit_bucket_boundaries_advisory=[1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000])
ON = True

def record_rollout_completed(outcome, dispatch_name, failure_class=None, failure_kind=None, failure_type=None):
    if not ON:
        return
    try:
        attrs = {"nemo.gym.rollout.outcome": outcome, "nemo.gym.rollout.dispatch.name": dispatch_name}
        if failure_class:
            attrs["nemo.gym.failure_class"] = failure_class
        if failure_kind:
            attrs["nemo.gym.failure_kind"] = failure_kind
        if failure_type:
            attrs["nemo.gym.failure_type"] = failure_type
        completed.add(1, attrs)
    except Exception:
        pass

def record_sandbox_exec_duration(duration_ms, provider):
    if not ON:
        return
    try:
        exec_ms.record(duration_ms, {"nemo.gym.sandbox.provider": provider})
    except Exception:
        pass

timer = time.thread_time if sys.argv[1] == "cpu" else time.perf_counter
out = {"_version": version.__version__}
for label, stmt in {
    "record_rollout_completed (failure fields)": 'record_rollout_completed("failed", "math", "agent_request_failed", "transport_timeout", "TimeoutError")',
    "record_sandbox_exec_duration": 'record_sandbox_exec_duration(88.125, "docker")',
}.items():
    times = timeit.repeat(stmt, number=2000, repeat=301, timer=timer, globals=globals())
    out[label] = {"median_ns": statistics.median(t / 2000 * 1e9 for t in times)}
print(json.dumps(out))
"""

THROUGHPUT = r"""
import json, sys, time
import otelcol_gym
from otelcol_gym import _sender, gym_metrics as gm, observer as ob

N = int(sys.argv[2])
otelcol_gym.configure(endpoint="unix://" + sys.argv[1], queue_size=N + 10)
E = _sender.EMITTER
q = E.queue
import random
rng = random.Random(1)
# A Gym mix; every duration differs (measured wall-clocks), the other lines repeat as they do
# in a run (an outcome with its failure fields, a sandbox +1, a health verdict).
for i in range(N):  # the queue filled beforehand: the thread is timed alone
    k = i % 8
    q.append([
        (gm._COMPLETED, "failed", "math", "agent_request_failed", "transport_timeout", "TimeoutError"),
        (gm._COMPLETED, "scored", "math", None, None, None),
        (gm._REWARD, (0.0, 0.5, 1.0)[i % 3], "math", False),
        (gm._EXEC, rng.uniform(50, 5000), "docker"),
        (gm._ACTIVE, 1 if i % 16 < 8 else -1, "docker"),
        (ob._LAG, rng.uniform(0, 20), "driver"),
        (gm._QUEUE, rng.uniform(0, 2), "per_host", "ok", "policy_model"),
        (gm._HEALTH, "unhealthy", "scored", ("agent_turn_hollow", "model_call_failed")),
    ][k])
t0, c0 = time.perf_counter(), time.process_time()
E.ensure_started()
ok = otelcol_gym.flush(600)
dt, cpu = time.perf_counter() - t0, time.process_time() - c0  # the main thread waits meanwhile
s = otelcol_gym.stats()
print(json.dumps({"lines": N, "seconds": dt, "cpu_seconds": cpu, "lines_per_s": N / dt, "lines_per_cpu_s": N / cpu, "flushed": ok, "sent": s["sent"], "invalid": s["invalid"]}))
"""


# One uncontended acquire/release pair (and one ``async with``) on the caller, in one coroutine:
# repeats of 2,000 pairs, the median repeat per pair, for both classes in the same interpreter.
SEMAPHORE = r"""
import asyncio, json, statistics, sys, time
import otelcol_gym
from otelcol_gym.concurrency import MeteredSemaphore

otelcol_gym.configure(endpoint="unix://" + sys.argv[1] + ".nobody")  # nothing listens: the thread idles
timer = time.thread_time if sys.argv[2] == "cpu" else time.perf_counter
NUMBER, REPEAT = 2000, 301

async def pairs(s):
    t0 = timer()
    for _ in range(NUMBER):
        await s.acquire()
        s.release()
    return (timer() - t0) / NUMBER * 1e9

async def with_blocks(s):
    t0 = timer()
    for _ in range(NUMBER):
        async with s:
            pass
    return (timer() - t0) / NUMBER * 1e9

async def main():
    out = {}
    sems = {"asyncio.BoundedSemaphore": asyncio.BoundedSemaphore(8), "MeteredSemaphore": MeteredSemaphore(8, component="bench", limit_name="slots")}
    for label, s in sems.items():
        out[label] = {
            "pair_ns": statistics.median([await pairs(s) for _ in range(REPEAT)]),
            "with_ns": statistics.median([await with_blocks(s) for _ in range(REPEAT)]),
        }
    return out

print(json.dumps(asyncio.run(main())))
"""

# One memory sample of a tree of four real processes, on this thread's CPU clock (user and
# system time: reading smaps_rollup is the kernel's walk of the page tables).
MEMORY = r"""
import json, os, statistics, time
import otelcol_gym
from otelcol_gym import memory as mm
from proctree import kill_tree, spawn_tree

otelcol_gym.configure(endpoint="unix:///nonexistent/otelcol-gym-bench.sock")  # the lines wait in the queue

root, kids = spawn_tree(120)
try:
    prof = mm.MemoryProfiler(10)
    prof.add_target(mm.ServerMemoryTarget("bench", "resources_servers", root.pid))

    def per_call(f, n=50, repeat=21):
        times = []
        for _ in range(repeat):
            t0 = time.thread_time()
            for _ in range(n):
                f()
            times.append((time.thread_time() - t0) / n * 1e3)
        return statistics.median(times)

    parents = mm._parent_map()
    out = {
        "host_processes": sum(1 for e in os.listdir("/proc") if e.isdigit()),
        "tree_processes": mm.collect_process_tree_memory(root.pid).processes,
        "children_files": mm._children_files_work(),
        "smaps_rollup": os.path.exists("/proc/self/smaps_rollup"),
        "sample_ms": per_call(prof.sample),
        "tree_ms": per_call(lambda: mm.collect_process_tree_memory(root.pid, parents)),
        "parent_map_ms": per_call(mm._parent_map),
        "host_ms": per_call(mm.collect_host_memory),
        "read_one_process_ms": per_call(lambda: mm._read_process_memory(root.pid), n=200),
    }
finally:
    kill_tree(root, kids)
print(json.dumps(out))
"""


def run(code: str, *args: str, env: dict | None = None) -> dict:
    e = dict(os.environ, PYTHONPATH=PYTHONPATH)
    e.update(env or {})
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=e, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit("benchmark failed:\n" + r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    d = tempfile.mkdtemp(prefix="otelcol-gym-bench-")
    path = os.path.join(d, "sink.sock")
    reader = subprocess.Popen([sys.executable, "-c", READER, path], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None
        reader.stdout.readline()
        cpu = run(CALLER, path, "idle", "cpu")
        idle = run(CALLER, path, "idle", "wall")
        caller = run(CALLER, path, "draining", "wall")
        disabled = run(DISABLED, env={"OTELCOL_GYM_ENABLED": "false"})
        sdk_path = os.environ.get("OTEL_PYTHON_SDK_PATH", "")
        sdk = {m: run(SDK, m, env={"PYTHONPATH": sdk_path}) for m in ("cpu", "wall")} if sdk_path else {}
        n = int(os.environ.get("BENCH_LINES", "500000"))
        thr = [run(THROUGHPUT, path, str(n)) for _ in range(3)]
        sem = {m: run(SEMAPHORE, path, m) for m in ("cpu", "wall")}
        mem = run(MEMORY)
    finally:
        reader.kill()
        reader.wait()
    machine = {"cpu": cpu_model(), "cpus": os.cpu_count(), "python": platform.python_version(), "implementation": platform.python_implementation()}
    print("machine: %(cpu)s, %(cpus)s CPUs; %(implementation)s %(python)s" % machine)
    print()
    print("| call, per call (median of %s repeats) | caller thread's CPU time, emitter waiting | wall, emitter waiting | wall, emitter draining meanwhile |" % 301)
    print("|---|---:|---:|---:|")
    for label, v in cpu.items():
        if label.startswith("_"):
            continue
        print("| %s | %.0f ns | %.0f ns | %.0f ns |" % (label, v["median_ns"], idle[label]["median_ns"], caller[label]["median_ns"]))
    print("| record_sandbox_exec_duration, OTELCOL_GYM_ENABLED=false | | %.0f ns | |" % disabled["median_ns"])
    print("| (emitter thread) folding one buffered response into `responses` | | %.0f ns | %.0f ns |" % (idle["_fold_ns"], caller["_fold_ns"]))
    if sdk:
        print("| the same recorder on the in-process OpenTelemetry SDK %s: record_rollout_completed (failure fields) | %.0f ns | %.0f ns | |" % (
            sdk["cpu"]["_version"], sdk["cpu"]["record_rollout_completed (failure fields)"]["median_ns"], sdk["wall"]["record_rollout_completed (failure fields)"]["median_ns"]))
        print("| the same recorder on the in-process OpenTelemetry SDK %s: record_sandbox_exec_duration | %.0f ns | %.0f ns | |" % (
            sdk["cpu"]["_version"], sdk["cpu"]["record_sandbox_exec_duration"]["median_ns"], sdk["wall"]["record_sandbox_exec_duration"]["median_ns"]))
    else:
        print("(the OpenTelemetry SDK comparison is skipped: set OTEL_PYTHON_SDK_PATH to a PYTHONPATH that imports opentelemetry.sdk)")
    print()
    print("emitter thread to a Unix socket, %d lines, 3 runs: %s lines per CPU-second; %s lines per wall-second" % (
        thr[0]["lines"],
        " / ".join(format(int(t["lines_per_cpu_s"]), ",") for t in thr),
        " / ".join(format(int(t["lines_per_s"]), ",") for t in thr),
    ))
    print()
    print("| semaphore, uncontended, per call (median of 301 repeats of 2,000) | CPU time | wall |")
    print("|---|---:|---:|")
    for label in ("asyncio.BoundedSemaphore", "MeteredSemaphore"):
        print("| %s: `await s.acquire(); s.release()` | %.0f ns | %.0f ns |" % (label, sem["cpu"][label]["pair_ns"], sem["wall"][label]["pair_ns"]))
        print("| %s: `async with s: pass` | %.0f ns | %.0f ns |" % (label, sem["cpu"][label]["with_ns"], sem["wall"][label]["with_ns"]))
    print()
    print("memory sampler, CPU time (user + system) per call, a tree of %d processes among %d on the host (children files: %s, smaps_rollup: %s):" % (
        mem["tree_processes"], mem["host_processes"], mem["children_files"], mem["smaps_rollup"]))
    print("  one sample (tree, the ppid pass where needed, host): %.3f ms; the tree: %.3f ms; one process: %.3f ms; the ppid pass over /proc: %.3f ms; host: %.3f ms" % (
        mem["sample_ms"], mem["tree_ms"], mem["read_one_process_ms"], mem["parent_map_ms"], mem["host_ms"]))
    print(json.dumps({"machine": machine, "caller_cpu_emitter_waiting": cpu, "caller_emitter_waiting": idle, "caller_emitter_draining": caller, "disabled": disabled, "sdk": sdk, "throughput": thr, "semaphore": sem, "memory": mem}))


if __name__ == "__main__":
    main()
