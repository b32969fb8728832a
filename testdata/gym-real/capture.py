"""Captures the OTLP that NeMo Gym's own telemetry code sends, for e2e/gymreal_test.go.

Runs Gym's telemetry modules with the real OpenTelemetry Python SDK and the SDK's real OTLP/HTTP
protobuf exporters (OTLPMetricExporter, OTLPSpanExporter, chosen by nemo-lens's build_providers
from OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf), exporting to a small capture server on
127.0.0.1 that this script starts and that writes every request body to OUTDIR, numbered in
order of arrival: NNN-<process>-<metrics|traces>.pb.gz (gzip: the SDK's own
OTEL_EXPORTER_OTLP_COMPRESSION). Then it prints what each file holds (the table in
testdata/gym-real/README.md). Nothing of Gym or OpenTelemetry is in this repository; the script imports them from a source tree given by GYMREAL_SRC (default
/tmp/gymsrc), laid out as testdata/gym-real/README.md says, and needs Python 3.12 (nemo-lens uses
3.12 syntax). Run:

    GYMREAL_SRC=/tmp/gymsrc PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python \\
        python3.12 testdata/gym-real/capture.py testdata/gym-real/otlp

Every Gym process is a process of its own, started by this script with the environment Gym's
orchestrator gives its servers (configure_telemetry_env's NEMO_GYM_OTEL_* variables,
OTEL_SERVICE_NAME=nemo-gym, one run id), and initialised by Gym's own init_telemetry (PR #2646
setup.py), which calls nemo-lens's setup_telemetry/build_providers: the resource (service.name
nemo-gym/<server>, service.instance.id <run_id>-rank0, process.pid, nemo.run.id, slurm.*, ...)
is exactly theirs. Each process exports twice (a force_flush in the middle, then Gym's
shutdown_telemetry), so the capture holds cumulative series that grow.

The processes (server name, the Gym code each runs):

  orchestrator    PR #2647 metrics.record_active_servers; the rollout-outcome gym_metrics
                  lineage's record_rollout_completed (scored/failed/omitted, failure class, kind,
                  type); memory.py's MemoryProfiler (process trees of two stand-in server
                  processes, `sleep`, measured from /proc by Gym's own collector); startup.py's
                  SupervisorStartup (gym.server.startup_duration_ms, gym.startup spans); the
                  gym.job span (rollout_collection's managed_span).
  math_with_judge two Uvicorn workers of one resources server (same service.name and instance
  (x2)            id, different pids): startup.py's worker timeline (worker_start stage), PR
                  endpoints.traced_verify_endpoint (gym.verify span, gym.verify.duration_ms,
                  gym.verify.success_rate), spans.client_span as server_utils.request uses it.
  simple_agent    startup.py's server timeline (venv_setup, interpreter_start, uvicorn_startup),
                  endpoints.traced_rollout_endpoint (gym.rollout span, gym.rollout.duration_ms),
                  traced_endpoint gym.agent.responses.
  policy_model    the model-call gym_metrics lineage (record_model_call, three dialects), the PR's
                  gym.model.* spans, token_capture_metrics (520 implementation names, past its
                  512-attribute-set cap, so later points carry `other`; the observable
                  outcome/digest/cache instruments), that lineage's sandbox and connection-pool
                  recorders (queue_outcome) with gym.sandbox.start/exec spans.
  code_judge      gym_metrics @0cb5555: the connection-pool recorders with attempt_outcome, with
                  the values connection_pool.py @e40867e gives them, and its sandbox recorders.
  obs_agent       the observability branch: gym_metrics (concurrency gauges and queue wait,
                  rollout outcome success/failure, sandbox without buckets, gym.model.*, HTTP
                  timeout/retry, agent turns, tool calls, CPU/memory/GPU gauges),
                  concurrency.TimedSemaphore under real asyncio contention, cpu.py, memory.py
                  (MiB), gpu.py's nvidia-smi sampler.

Stand-ins (this machine has no GPU and no psutil for Python 3.12), each a reading, never a
recorder: `nvidia-smi` is a script on PATH that prints two GPUs in the CSV form gpu.py asks for;
`psutil` is a module reading /proc (virtual_memory, Process.cpu_percent, cpu_count);
socket.gethostname answers gym-node-01 so no machine name is committed; nemo_gym.rollout_correlation
(which pulls in Gym's whole config machinery) is one function returning the rollout id; the
observability and startup branches' span_groups.py add a `concurrency` and a `startup` group,
which PR #2646's does not have: the two names are added to GymSpanGroup before init.
Not run: the FastAPI and aiohttp instrumentors (http.server.* / http.client.*): FastAPI, aiohttp
and opentelemetry-instrumentation-* are not installed here.
"""

import asyncio
import http.server
import importlib.util
import os
import subprocess
import sys
import threading
import time
import types

SRC = os.environ.get("GYMREAL_SRC", "/tmp/gymsrc")
RUN_ID = "gymreal01"
ROLE_HEADER = "x-gym-capture-process"

# process name -> (server name, server type or None); math_with_judge runs twice (two workers).
PROCESSES = [
    ("orchestrator", "orchestrator", "orchestrator"),
    ("math_with_judge-w1", "math_with_judge", "resources_servers"),
    ("math_with_judge-w2", "math_with_judge", "resources_servers"),
    ("simple_agent", "simple_agent", "responses_api_agents"),
    ("policy_model", "policy_model", "responses_api_models"),
    ("code_judge", "code_judge", "resources_servers"),
    ("obs_agent", "obs_agent", "responses_api_agents"),
]

FAKE_NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *count*) printf '2\\n2\\n' ;;
  *) printf '0, GPU-5f1e7c1a-0d9b-4c3e-9a55-1b2f3c4d5e01, 87, 61234, 81559\\n1, GPU-5f1e7c1a-0d9b-4c3e-9a55-1b2f3c4d5e02, 12, 2048, 81559\\n' ;;
esac
"""


# ---------------------------------------------------------------------------------------------
# The parent: a capture server and the Gym processes.


class _Capture(http.server.BaseHTTPRequestHandler):
    lock = threading.Lock()
    seq = 0
    outdir = ""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        signal = self.path.rstrip("/").rsplit("/", 1)[-1]
        role = self.headers.get(ROLE_HEADER, "unknown")
        gz = ".gz" if self.headers.get("Content-Encoding") == "gzip" else ""
        with _Capture.lock:
            _Capture.seq += 1
            name = f"{_Capture.seq:03d}-{role}-{signal}.pb{gz}"
            with open(os.path.join(_Capture.outdir, name), "wb") as f:
                f.write(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def parent(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    for old in os.listdir(outdir):
        if old.endswith((".pb", ".pb.gz")):
            os.remove(os.path.join(outdir, old))
    _Capture.outdir = outdir
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    tools = os.path.join(outdir, ".tools")
    os.makedirs(tools, exist_ok=True)
    smi = os.path.join(tools, "nvidia-smi")
    with open(smi, "w") as f:
        f.write(FAKE_NVIDIA_SMI)
    os.chmod(smi, 0o755)

    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "NEMO_", "SLURM_"))}
    base.update(
        {
            # What configure_telemetry_env exports for `telemetry: {enabled: true, span_groups: all}`.
            "NEMO_GYM_OTEL_ENABLED": "1",
            "NEMO_GYM_OTEL_SPAN_GROUPS": "all",
            "NEMO_GYM_OTEL_EXPORT_STRATEGY": "all_ranks",
            "NEMO_GYM_OTEL_EXPORT_RANK": "-1",
            "NEMO_GYM_OTEL_TRACES_ENABLED": "1",
            "NEMO_GYM_OTEL_METRICS_ENABLED": "1",
            "NEMO_GYM_OTEL_LOGS_ENABLED": "0",
            "NEMO_GYM_OTEL_EXPORTER": "otlp",
            "NEMO_GYM_OTEL_RUN_ID": RUN_ID,
            "NEMO_GYM_OTEL_SERVICE_NAME_PER_SERVER": "1",
            "NEMO_GYM_OTEL_INSTRUMENT_AIOHTTP": "1",
            "OTEL_SERVICE_NAME": "nemo-gym",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            # The SDK's own gzip (a standard exporter setting): keeps the committed capture small.
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            # Exports happen at the script's flushes only, so the capture is the same every run.
            "OTEL_METRIC_EXPORT_INTERVAL": "600000",
            "SLURM_JOB_ID": "771234",
            "SLURM_JOB_NAME": "gym-eval-math",
            "SLURM_NODELIST": "gym-node-01",
            "SLURM_NNODES": "1",
            "SLURM_NTASKS": "1",
            "SLURM_PARTITION": "batch",
            "SLURM_CLUSTER_NAME": "gymcluster",
            "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
        }
    )
    serve_ns = str(time.time_ns())  # the math_with_judge main process handing off to Uvicorn
    # One process at a time, except the two workers, which run side by side as Uvicorn's do.
    groups = [[PROCESSES[0]], [PROCESSES[1], PROCESSES[2]], *[[p] for p in PROCESSES[3:]]]
    for group in groups:
        procs = []
        for role, name, server_type in group:
            env = dict(base)
            env["OTEL_EXPORTER_OTLP_HEADERS"] = f"{ROLE_HEADER}={role}"
            env["GYMREAL_SERVER"], env["GYMREAL_TYPE"] = name, server_type
            if role.startswith("math_with_judge"):
                env["NEMO_GYM_STARTUP_SERVE_NS"] = serve_ns
            if role == "simple_agent":
                spawn = time.time_ns()
                env["NEMO_GYM_STARTUP_SPAWN_NS"] = str(spawn - 2_400_000_000)
                env["NEMO_GYM_STARTUP_SETUP_DONE_NS"] = str(spawn - 700_000_000)
            if role == "obs_agent":
                env["PATH"] = tools + os.pathsep + env.get("PATH", "")
            procs.append(subprocess.Popen([sys.executable, __file__, "--process", role], env=env))
        for p in procs:
            if p.wait() != 0:
                raise SystemExit(f"a Gym process failed: {p.args}")
    server.shutdown()
    os.remove(smi)
    os.rmdir(tools)
    print(f"{_Capture.seq} requests written to {outdir}")
    summary(outdir)


def summary(outdir: str) -> None:
    """Prints, per file, its resource's process and each metric: name, kind, unit, points."""
    import gzip

    _paths()
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    for name in sorted(os.listdir(outdir)):
        with open(os.path.join(outdir, name), "rb") as f:
            body = gzip.decompress(f.read()) if name.endswith(".gz") else f.read()
        if "-traces." in name:
            req = ExportTraceServiceRequest.FromString(body)
            spans = sorted({s.name for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans})
            print(f"| {name} | spans: {', '.join(spans)} |")
            continue
        req = ExportMetricsServiceRequest.FromString(body)
        parts = []
        for rm in req.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    n = len(getattr(m, kind).data_points)
                    parts.append(f"{m.name} ({kind}, \"{m.unit}\", {n})")
        print(f"| {name} | {'; '.join(parts)} |")


# ---------------------------------------------------------------------------------------------
# A Gym process.


def _paths() -> None:
    otel = os.path.join(SRC, "otel")
    sys.path[:0] = [
        os.path.join(SRC, "gym-callsites"),
        os.path.join(SRC, "lens", "src"),
        os.path.join(otel, "opentelemetry-api", "src"),
        os.path.join(otel, "opentelemetry-sdk", "src"),
        os.path.join(otel, "opentelemetry-semantic-conventions", "src"),
        os.path.join(otel, "opentelemetry-proto", "src"),
        os.path.join(otel, "exporter", "opentelemetry-exporter-otlp-proto-common", "src"),
        os.path.join(otel, "exporter", "opentelemetry-exporter-otlp-proto-http", "src"),
        os.path.join(SRC, "site"),
    ]


def _stand_ins() -> None:
    import socket

    socket.gethostname = lambda: "gym-node-01"

    rollout_correlation = types.ModuleType("nemo_gym.rollout_correlation")
    rollout_correlation.current_rollout_id = lambda: _ROLLOUT_ID[0]
    sys.modules["nemo_gym.rollout_correlation"] = rollout_correlation

    psutil = types.ModuleType("psutil")

    class Error(Exception):
        pass

    def meminfo() -> dict:
        out = {}
        with open("/proc/meminfo") as f:
            for line in f:
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0]) * 1024
        return out

    def virtual_memory():
        m = meminfo()
        total, available = m["MemTotal"], m["MemAvailable"]
        return types.SimpleNamespace(total=total, available=available, used=total - m["MemFree"] - m.get("Buffers", 0) - m.get("Cached", 0))

    class Process:
        def __init__(self, pid=None):
            self._pid = pid or os.getpid()
            self._last = None

        def cpu_percent(self, interval=None):
            with open(f"/proc/{self._pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            now = time.monotonic()
            last, self._last = self._last, (now, ticks)
            if last is None or now == last[0]:
                return 0.0
            return round(100.0 * (ticks - last[1]) / (now - last[0]), 1)

    psutil.Error = Error
    psutil.Process = Process
    psutil.virtual_memory = virtual_memory
    psutil.cpu_count = lambda logical=True: os.cpu_count()
    sys.modules["psutil"] = psutil


_ROLLOUT_ID = [""]


def _load(name: str, relpath: str) -> types.ModuleType:
    """Loads a branch's module from SRC/branches as `name`."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(SRC, "branches", relpath))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _use_gym_metrics(name: str, relpath: str) -> types.ModuleType:
    """Loads a gym_metrics lineage (as `_load`) and makes it `nemo_gym.telemetry.gym_metrics`,
    what the branches' modules import."""
    module = _load(name, relpath)
    sys.modules["nemo_gym.telemetry.gym_metrics"] = module
    return module


def _flush() -> None:
    from opentelemetry import metrics, trace

    trace.get_tracer_provider().force_flush()
    metrics.get_meter_provider().force_flush()


def child(role: str) -> None:
    _paths()
    _stand_ins()
    import nemo_gym.telemetry  # noqa: F401 (the package, as a server imports it)
    from nemo_gym.telemetry.span_groups import GymSpanGroup

    # The startup and observability branches' span groups (see the docstring).
    GymSpanGroup.STARTUP, GymSpanGroup.CONCURRENCY = "startup", "concurrency"
    GymSpanGroup.ALL_GROUPS = GymSpanGroup.ALL_GROUPS | {"startup", "concurrency"}
    GymSpanGroup._PRESETS = {**GymSpanGroup._PRESETS, "all": GymSpanGroup.ALL_GROUPS}

    server, server_type = os.environ["GYMREAL_SERVER"], os.environ["GYMREAL_TYPE"]
    from nemo_gym.telemetry.setup import get_telemetry, init_telemetry, shutdown_telemetry

    # SimpleServer.initialize_telemetry / cli/env.py: one init per process.
    timeline = None
    if role.startswith("math_with_judge") or role == "simple_agent":
        _use_gym_metrics("gym_metrics_startup", "startup/gym_metrics.py")
        startup = _load("gym_startup", "startup/startup.py")
        timeline = startup.ServerStartupTimeline(server, server_type, worker=role.startswith("math_with_judge"))
    handle = init_telemetry(server_name=server, server_type=server_type)
    if handle is None or not handle.is_exporting:
        raise SystemExit("telemetry did not initialise")
    {
        "orchestrator": orchestrator,
        "math_with_judge-w1": resources_worker,
        "math_with_judge-w2": resources_worker,
        "simple_agent": agent,
        "policy_model": model,
        "code_judge": code_judge,
        "obs_agent": obs_agent,
    }[role](role, server, timeline)
    shutdown_telemetry()
    assert get_telemetry() is not None


def orchestrator(role, server, _timeline) -> None:
    from nemo_gym.telemetry._fallbacks import managed_span
    from nemo_gym.telemetry.metrics import record_active_servers
    from nemo_gym.telemetry.span_groups import GymSpanGroup

    _use_gym_metrics("gym_metrics_startup", "startup/gym_metrics.py")
    startup = _load("gym_startup", "startup/startup.py")
    rollout = _load("gym_metrics_rollout", "rollout/gym_metrics.py")
    memory = _load("gym_memory", "memory/memory.py")

    supervisor = startup.SupervisorStartup()
    supervisor.begin_trace()
    supervisor.mark("config_load")
    children = {}
    for name, server_type in (("math_with_judge", "resources_servers"), ("simple_agent", "responses_api_agents")):
        supervisor.server_env(name, server_type)
        children[name] = (server_type, subprocess.Popen(["sleep", "30"]))
    supervisor.server_env("policy_model", "responses_api_models")
    supervisor.mark("spawn_servers")
    time.sleep(0.2)
    for name in ("math_with_judge", "simple_agent", "policy_model"):
        supervisor.server_ready(name)
    supervisor.mark("wait_healthy")
    supervisor.finish()
    record_active_servers(3)  # cli/env.py, once the fleet is up

    targets = [memory.ServerMemoryTarget(name, st, p.pid) for name, (st, p) in children.items()]
    profiler = memory.MemoryProfiler(targets, interval_seconds=3600)
    profiler.sample_once()

    def attempts(scored: int, failure_class: str, failure_kind: str, failure_type: str) -> None:
        """`scored` scored attempts of math_with_judge, then one that failed so."""
        for _ in range(scored):
            rollout.record_rollout_completed("scored", dispatch_name="math_with_judge")
        rollout.record_rollout_completed(
            "failed",
            dispatch_name="math_with_judge",
            failure_class=failure_class,
            failure_kind=failure_kind,
            failure_type=failure_type,
        )

    with managed_span(GymSpanGroup.JOB, "gym.job"):
        attempts(5, "agent_request_failed", "transport_timeout", "TimeoutError")
        _flush()
        attempts(3, "judge_failed", "unregistered", "ValueError")
        rollout.record_rollout_completed("omitted", dispatch_name="simple_agent")
        profiler.sample_once()
    record_active_servers(0)  # cli/env.py, before the servers go
    for _, p in children.values():
        p.kill()
        p.wait()


def resources_worker(role, server, timeline) -> None:
    from nemo_gym.telemetry.endpoints import traced_verify_endpoint
    from nemo_gym.telemetry.spans import client_span

    timeline.mark("server_init")
    timeline.mark("uvicorn_startup")
    timeline.report()

    async def verify(score: float):
        await asyncio.sleep(0.005)
        if score < 0:
            raise RuntimeError("judge failed")
        return {"reward": score}

    handler = traced_verify_endpoint(verify, static_attributes={"nemo.gym.server.name": server})
    worker = 1 if role.endswith("w1") else 2

    async def serve(scores):
        for i, s in enumerate(scores):
            _ROLLOUT_ID[0] = f"r-{worker}-{i}"
            with client_span("HTTP POST") as span:  # server_utils.request to the judge model
                span.set_attribute("http.request.method", "POST")
                span.set_attribute("url.full", "http://127.0.0.1:8000/v1/chat/completions")
                span.set_attribute("nemo.gym.rollout.id", _ROLLOUT_ID[0])
                span.set_attribute("http.response.status_code", 200)
            try:
                await handler(s)
            except RuntimeError:
                pass

    asyncio.run(serve([1.0, 0.0, 1.0] if worker == 1 else [1.0, -1.0]))
    _flush()
    time.sleep(0.3)
    asyncio.run(serve([0.0, 1.0] if worker == 1 else [1.0, 1.0, 1.0]))


def agent(role, server, timeline) -> None:
    from nemo_gym.telemetry.endpoints import traced_endpoint, traced_rollout_endpoint
    from nemo_gym.telemetry.span_groups import GymSpanGroup

    timeline.mark("server_init")
    timeline.mark("uvicorn_startup")
    timeline.report()

    async def run(i):
        await asyncio.sleep(0.01 * (i + 1))
        return {"ok": True}

    attrs = {"nemo.gym.server.name": server}
    run_handler = traced_rollout_endpoint(run, attrs)
    responses = traced_endpoint(GymSpanGroup.AGENT, "gym.agent.responses", run, attrs)

    async def serve(n):
        for i in range(n):
            _ROLLOUT_ID[0] = f"r-agent-{i}"
            await run_handler(i)
            await responses(0)

    asyncio.run(serve(3))
    _flush()
    asyncio.run(serve(2))


class _TokenCaptureTotals:
    """What nemo_gym.token_id_capture keeps in process memory for the observable instruments."""

    def __init__(self):
        self.scale = 1

    def outcomes(self):
        return [
            (("captured", "ok"), 40 * self.scale),
            (("skipped", "not_requested"), 7 * self.scale),
            (("failed", "tokenizer_mismatch"), 1 * self.scale),
        ]

    def digests(self):
        return [("prompt", 40 * self.scale, 655360 * self.scale), ("completion", 40 * self.scale, 81920 * self.scale)]

    def cache_sizes(self):
        return [("prefix", 12 * self.scale), ("tokenizer", 1)]


def model(role, server, _timeline) -> None:
    from nemo_gym.telemetry._fallbacks import managed_span
    from nemo_gym.telemetry.endpoints import traced_endpoint
    from nemo_gym.telemetry.span_groups import GymSpanGroup

    gm = _use_gym_metrics("gym_metrics_modelcall", "modelcall/gym_metrics.py")
    tc = _load("gym_token_capture_metrics", "tokencap/token_capture_metrics.py")
    totals = _TokenCaptureTotals()
    tc.set_totals_source(totals)

    attrs = {"nemo.gym.server.name": server}

    async def call(dialect, latency, ttft, error, finish, tin, tout, treason):
        gm.record_model_call(
            server_name=server,
            dialect=dialect,
            latency_ms=latency,
            ttft_ms=ttft,
            error_category=error,
            finish_reason=finish,
            tokens_in=tin,
            tokens_out=tout,
            tokens_reasoning=treason,
        )

    spans = {
        "chat_completions": traced_endpoint(GymSpanGroup.MODEL_CALL, "gym.model.chat_completions", call, attrs),
        "responses": traced_endpoint(GymSpanGroup.MODEL_CALL, "gym.model.responses", call, attrs),
        "messages": traced_endpoint(GymSpanGroup.MODEL_CALL, "gym.model.messages", call, attrs),
    }

    async def serve(calls):
        for i, c in enumerate(calls):
            _ROLLOUT_ID[0] = f"r-model-{i}"
            await spans[c[0]](*c)

    asyncio.run(
        serve(
            [
                ("chat_completions", 1840.0, 212.0, None, "stop", 1200, 310, None),
                ("chat_completions", 9300.0, 480.0, None, "length", 3900, 4096, None),
                ("responses", 22000.0, None, None, "completed", 5200, 900, 2100),
                ("messages", 1300.0, 95.0, None, "end_turn", 800, 120, None),
            ]
        )
    )
    ops = tc.instruments()
    ops.record_operation("sink.put", "TokenCaptureStore", "", 1.7, 1500)
    ops.record_operation("sink.put.in_thread", "TokenCaptureStore", "", 0.9, 1500)
    ops.record_operation("ledger.record", "TokenCaptureLedger", "", 0.2, None)
    ops.record_operation("file_lock.wait", "TokenCaptureStore", "cancelled", 260.0, None)

    def provider(n):
        gm.record_sandbox_active(1, provider=n)
        with managed_span(GymSpanGroup.SANDBOX, "gym.sandbox.start", **{"nemo.gym.sandbox.provider": n}):
            gm.record_sandbox_startup(41000.0, provider=n)
        with managed_span(GymSpanGroup.SANDBOX, "gym.sandbox.exec", **{"nemo.gym.sandbox.provider": n}) as span:
            span.set_attribute("nemo.gym.sandbox.return_code", 0)
            gm.record_sandbox_exec_duration(3200.0, provider=n)

    provider("daytona")
    gm.record_sandbox_create_retry(provider="daytona")
    pool = {"math_with_judge": 3, "external": 1}
    gm.register_http_connection_pool_connect_counter(lambda: dict(pool))
    gm.record_http_connection_pool_queue_duration(0.3, queue_constraint="total", queue_outcome="ok", server_name="math_with_judge")
    _flush()

    asyncio.run(serve([("chat_completions", 700.0, None, "timeout", None, None, None, None)]))
    totals.scale = 2
    pool["math_with_judge"] = 9
    gm.record_http_connection_pool_queue_duration(12.0, queue_constraint="per_host", queue_outcome="abandoned", server_name="external")
    gm.record_http_connection_pool_queue_duration(4.0, queue_constraint="unknown", queue_outcome="ok", server_name="math_with_judge")
    gm.record_sandbox_active(-1, provider="daytona")
    # 520 implementation names: Gym's cache keeps 512 attribute sets per instrument, then `other`.
    for i in range(520):
        ops.record_operation("sink.put", f"FrameworkSink{i:03d}", "", 0.05 * (i % 7 + 1), 4096 + i)


def code_judge(role, server, _timeline) -> None:
    gm = _use_gym_metrics("gym_metrics_0cb5555", "pool/gym_metrics.py")
    # What connection_pool.py @e40867e records (its ConnectionQueueContext): every request attempt,
    # queued or not; queue_constraint none (never queued), total, per_host, mixed or unknown;
    # attempt_outcome ok, cancelled, timeout or error.
    pool = {"policy_model": 2}
    gm.register_http_connection_pool_connect_counter(lambda: dict(pool))
    gm.record_http_connection_pool_queue_duration(0.0, queue_constraint="none", attempt_outcome="ok", server_name="policy_model")
    gm.record_http_connection_pool_queue_duration(2.5, queue_constraint="per_host", attempt_outcome="ok", server_name="policy_model")
    gm.record_sandbox_active(1, provider="local_docker")
    gm.record_sandbox_startup(800.0, provider="local_docker")
    _flush()
    pool["policy_model"] = 5
    gm.record_http_connection_pool_queue_duration(0.0, queue_constraint="none", attempt_outcome="ok", server_name="policy_model")
    gm.record_http_connection_pool_queue_duration(31000.0, queue_constraint="mixed", attempt_outcome="timeout", server_name="policy_model")
    gm.record_http_connection_pool_queue_duration(4.0, queue_constraint="total", attempt_outcome="cancelled", server_name="external")
    gm.record_sandbox_exec_duration(150.0, provider="local_docker")
    gm.record_sandbox_active(-1, provider="local_docker")


def obs_agent(role, server, _timeline) -> None:
    gm = _use_gym_metrics("gym_metrics_observability", "obs/gym_metrics.py")
    concurrency = _load("gym_concurrency", "obs/concurrency.py")
    cpu = _load("gym_cpu", "obs/cpu.py")
    memory = _load("gym_memory_mib", "obs/memory.py")
    gpu = _load("gym_gpu", "obs/gpu.py")

    async def contend(site, limit, tasks):
        sem = concurrency.TimedSemaphore(limit, site=site)
        gm.record_concurrency_limit(limit, site=site)
        active = 0

        async def work():
            nonlocal active
            async with sem:
                active += 1
                gm.record_concurrency_active(active, site=site)
                gm.record_concurrency_available(limit - active, site=site)
                await asyncio.sleep(0.02)
                active -= 1

        jobs = [asyncio.create_task(work()) for _ in range(tasks)]
        await asyncio.sleep(0)
        gm.record_concurrency_queue_depth(max(tasks - limit, 0), site=site)
        jobs[-1].cancel()  # a caller's own timeout cancels its wait
        for j in jobs:
            try:
                await j
            except asyncio.CancelledError:
                gm.record_concurrency_admission_cancelled(site=site)
        gm.record_concurrency_queue_depth(0, site=site)
        gm.record_concurrency_active(0, site=site)
        gm.record_concurrency_available(limit, site=site)

    asyncio.run(contend("rollout_driver", 2, 5))
    asyncio.run(contend("model.policy_model", 4, 6))
    for outcome in ("success", "success", "failure"):
        gm.record_rollout_completed(outcome=outcome)
    gm.record_sandbox_startup(52000.0, provider="daytona")
    gm.record_sandbox_exec_duration(900.0, provider="daytona")
    gm.record_sandbox_create_retry(provider="daytona")
    gm.record_model_call_duration(2300.0, dialect="chat_completions", server_name="policy_model")
    gm.record_model_time_to_first_byte(180.0, dialect="chat_completions", server_name="policy_model")
    gm.record_http_timeout(internal=True)
    gm.record_http_timeout(internal=False)
    for reason in ("server_disconnected", "client_os_error", "timeout", "other"):
        gm.record_retry(reason=reason)
    gm.record_agent_turn_count(4, agent_name=server, benchmark="math")
    gm.record_agent_turn_duration(5100.0, agent_name=server)
    gm.record_tool_call_duration(35.0, tool_name="python_exec", server_name="code_judge")
    gm.record_tool_call_cpu_percent(63.5, tool_name="python_exec")
    gm.record_tool_call_memory_used_mib(412.0, tool_name="python_exec")
    cpu.sample_cpu_percent(0.0)  # priming read
    sum(i * i for i in range(200000))
    gm.record_process_cpu_percent(cpu.sample_cpu_percent(0.0))
    gm.record_process_tree_cpu_percent(cpu.sample_cpu_percent(0.0) or 0.0)
    used, total = memory.sample_host_memory_mib(0.0)
    gm.record_host_memory_used_mib(used)
    gm.record_host_memory_total_mib(total)
    gm.record_process_tree_memory_used_mib(123.5)
    gpu._sample_once()
    _flush()
    gm.record_rollout_completed(outcome="success")
    gm.record_retry(reason="timeout")
    asyncio.run(contend("rollout_driver", 2, 3))
    gpu._sample_once()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--process":
        child(sys.argv[2])
    elif len(sys.argv) == 2:
        parent(sys.argv[1])
    else:
        raise SystemExit(__doc__)
