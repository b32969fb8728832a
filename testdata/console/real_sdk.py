"""Writes real-sdk-stdout.log with the real OpenTelemetry Python SDK (not available from PyPI here:
run it with the SDK on PYTHONPATH, e.g. opentelemetry-api/src, opentelemetry-sdk/src and
opentelemetry-semantic-conventions/src of an opentelemetry-python checkout), configured as
nemo-lens configures it for exporter: console. Run: python3 real_sdk.py > real-sdk-stdout.log
"""

import logging, sys, time
from opentelemetry import trace, metrics
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader, ConsoleMetricExporter
from opentelemetry.sdk.metrics.view import View, ExponentialBucketHistogramAggregation
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter
from opentelemetry._logs import set_logger_provider
from opentelemetry.trace import Status, StatusCode, SpanKind, Link

res = Resource.create({"service.name": "nemo-gym/math_with_judge", "nemo.run.id": "run-real",
    "service.instance.id": "run-real-rank0", "nemo.gym.server.name": "math_with_judge",
    "nemo.gym.server.type": "resources_servers", "host.name": "node-03", "process.pid": 4242, "dl.rank": 0})
tp = TracerProvider(resource=res)
tp.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(formatter=lambda s: s.to_json(indent=None) + "\n")))
trace.set_tracer_provider(tp)
reader = PeriodicExportingMetricReader(ConsoleMetricExporter(formatter=lambda m: m.to_json(indent=None) + "\n"), export_interval_millis=300)
mp = MeterProvider(resource=res, metric_readers=[reader], views=[View(instrument_name="http.server.request.duration", aggregation=ExponentialBucketHistogramAggregation())])
metrics.set_meter_provider(mp)
lp = LoggerProvider(resource=res)
lp.add_log_record_processor(BatchLogRecordProcessor(ConsoleLogRecordExporter()))
set_logger_provider(lp)
log = logging.getLogger("gym")
log.addHandler(LoggingHandler(logger_provider=lp))
log.setLevel(logging.INFO)

m = metrics.get_meter("nemo.lens", "0.3.0")
c = m.create_counter("gym.rollout.completed_total", unit="1", description="Rollouts completed, by outcome and dispatch.")
ud = m.create_up_down_counter("gym.server.requests.in_flight", unit="{request}")
g = m.create_gauge("gym.event_loop.tasks", unit="{task}")
h = m.create_histogram("gym.event_loop.lag_ms", unit="ms")
e = m.create_histogram("http.server.request.duration", unit="s")
print("INFO:     Started server process [4242]", flush=True)
tr = trace.get_tracer("nemo.lens")
with tr.start_as_current_span("rollout", kind=SpanKind.SERVER, links=[Link(trace.SpanContext(0x0af7651916cd43dd8448eb211c80319c, 0xb7ad6b7169203331, True), {"nemo.gym.link": "batch"})]) as root:
    root.set_attribute("nemo.gym.rollout.id", "r-19")
    with tr.start_as_current_span("POST /verify", kind=SpanKind.CLIENT) as sp:
        sp.set_attribute("nemo.gym.retry", [1, 2])
        try:
            raise TimeoutError("judge did not answer")
        except TimeoutError as ex:
            sp.record_exception(ex)
            sp.set_status(Status(StatusCode.ERROR, "TimeoutError: judge did not answer"))
        log.error("judge did not answer; rollout r-19 failed")
        c.add(1, {"nemo.gym.rollout.outcome": "failed", "nemo.gym.rollout.dispatch.name": "math", "failure_reason": "judge timed out"})
c.add(2, {"nemo.gym.rollout.outcome": "scored", "nemo.gym.rollout.dispatch.name": "math"})
ud.add(2)
g.set(7, {"nemo.gym.event_loop": "main"})
for v in (1.5, 3, 9): h.record(v, {"nemo.gym.event_loop": "main"})
for v in (0.125, 0.25, 0.5): e.record(v, {"http.route": "/verify"})
time.sleep(0.7)
print("INFO:     127.0.0.1:53422 - \"POST /verify HTTP/1.1\" 200 OK", flush=True)
c.add(2, {"nemo.gym.rollout.outcome": "failed", "nemo.gym.rollout.dispatch.name": "math", "failure_reason": "judge timed out"})
time.sleep(0.7)
tp.shutdown(); lp.shutdown(); mp.shutdown()
