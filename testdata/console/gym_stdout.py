"""Writes gym-server-stdout.log: a Gym resources server's stdout with console telemetry.

The records are written by hand, field by field, as the OpenTelemetry Python SDK's to_json
methods build them (metrics/_internal/point.py, trace/__init__.py ReadableSpan.to_json,
_logs LogRecord.to_json), and printed with json.dumps as its console exporters do: nemo-lens
passes indent=None for metrics and spans; its log exporter keeps the default (indent=4).
Run: python3 gym_stdout.py > gym-server-stdout.log
"""

import json

RES = {
    "attributes": {
        "telemetry.sdk.language": "python",
        "telemetry.sdk.name": "opentelemetry",
        "telemetry.sdk.version": "1.39.1",
        "service.name": "nemo-gym/math_with_judge",
        "service.version": "0.3.0",
        "dl.rank": 0,
        "dl.world_size": 1,
        "nemo.run.id": "run-7f3a",
        "service.instance.id": "run-7f3a-rank0",
        "nemo.gym.server.name": "math_with_judge",
        "nemo.gym.server.type": "resources_servers",
        "host.name": "node-03",
        "process.pid": 4242,
    },
    "schema_url": "",
}
SCOPE = {"name": "nemo.lens", "version": "0.3.0", "schema_url": "", "attributes": None}
T0 = 1764615600000000000  # 2025-12-01T19:00:00Z
S = 1_000_000_000


def sum_(name, unit, mono, points, desc=""):
    return {"name": name, "description": desc, "unit": unit,
            "data": {"data_points": points, "aggregation_temporality": 2, "is_monotonic": mono}}


def num(attrs, t, v, exemplars=()):
    return {"attributes": attrs, "start_time_unix_nano": T0, "time_unix_nano": t, "value": v,
            "exemplars": list(exemplars)}


def batch(t, completed_failed, completed_scored, tasks, lag_counts, lag_sum, lag_min, lag_max):
    bounds = [0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0, 10000.0]
    metrics = [
        sum_("gym.rollout.completed_total", "1", True, [
            num({"nemo.gym.rollout.outcome": "failed", "nemo.gym.rollout.dispatch.name": "math",
                 "nemo.gym.failure_kind": "Judge Timeout!", "failure_reason": "judge at 10.0.0.7 timed out after 30s"},
                t, completed_failed),
            num({"nemo.gym.rollout.outcome": "scored", "nemo.gym.rollout.dispatch.name": "math"}, t, completed_scored,
                [{"filtered_attributes": {"rollout.id": "r-19"}, "value": 1, "time_unix_nano": t - 3 * S,
                  "span_id": 0x5FB397BE34D26B51, "trace_id": 0x4BF92F3577B34DA6A3CE929D0E0E4736}]),
        ], "Rollouts completed, by outcome and dispatch."),
        sum_("gym.server.requests.in_flight", "{request}", False, [num({}, t, 2)]),
        {"name": "gym.event_loop.tasks", "description": "", "unit": "{task}",
         # A synchronous gauge's points have no start: the SDK writes None.
         "data": {"data_points": [dict(num({"nemo.gym.event_loop": "main"}, t, tasks), start_time_unix_nano=None)]}},
        {"name": "gym.event_loop.lag_ms", "description": "", "unit": "ms",
         "data": {"data_points": [
             {"attributes": {"nemo.gym.event_loop": "main"}, "start_time_unix_nano": T0, "time_unix_nano": t,
              "count": sum(lag_counts), "sum": lag_sum, "bucket_counts": lag_counts, "explicit_bounds": bounds,
              "min": lag_min, "max": lag_max, "exemplars": []},
             {"attributes": {"nemo.gym.event_loop": "judge"}, "start_time_unix_nano": T0, "time_unix_nano": t,
              "count": 0, "sum": 0, "bucket_counts": [0] * 16, "explicit_bounds": bounds,
              "min": float("inf"), "max": float("-inf"), "exemplars": []},
         ], "aggregation_temporality": 2}},
        {"name": "http.server.request.duration", "description": "Duration of HTTP server requests.", "unit": "s",
         "data": {"data_points": [
             {"attributes": {"http.request.method": "POST", "http.route": "/verify", "http.response.status_code": 200},
              "start_time_unix_nano": T0, "time_unix_nano": t, "count": 4, "sum": 1.25, "scale": 3, "zero_count": 0,
              "positive": {"offset": -9, "bucket_counts": [1, 0, 2, 1]}, "negative": {"offset": 0, "bucket_counts": []},
              "flags": 0, "min": 0.125, "max": 0.5, "exemplars": []},
         ], "aggregation_temporality": 2}},
        {"name": "process.cpu.utilization", "description": "", "unit": "1",
         "data": {"data_points": [num({}, t, float("nan"))]}},
    ]
    md = {"resource_metrics": [{"resource": RES, "scope_metrics": [
        {"scope": SCOPE, "metrics": metrics, "schema_url": ""}], "schema_url": ""}]}
    return json.dumps(md, indent=None)


def span(name, trace_id, span_id, kind, parent, start, end, status, attrs, events=(), links=(), trace_state="[]"):
    return json.dumps({
        "name": name,
        "context": {"trace_id": trace_id, "span_id": span_id, "trace_state": trace_state},
        "kind": kind,
        "parent_id": parent,
        "start_time": start,
        "end_time": end,
        "status": status,
        "attributes": attrs,
        "events": list(events),
        "links": list(links),
        "resource": RES,
    }, indent=None)


def log(body, sev_n, sev_t, attrs, ts, obs, trace_id, span_id, flags, indent):
    return json.dumps({
        "body": body,
        "severity_number": sev_n,
        "severity_text": sev_t,
        "attributes": attrs,
        "dropped_attributes": 0,
        "timestamp": ts,
        "observed_timestamp": obs,
        "trace_id": trace_id,
        "span_id": span_id,
        "trace_flags": flags,
        "resource": RES,
        "event_name": "",
    }, indent=indent)


TID = "0x4bf92f3577b34da6a3ce929d0e0e4736"
lines = [
    "INFO:     Started server process [4242]",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    '{"level": "info", "msg": "judge model loaded", "model": "qwen3-8b"}',
    batch(T0 + 10 * S, 1, 2, 7, [0, 3, 1] + [0] * 13, 17.5, 1.5, 9.0),
    "INFO:     127.0.0.1:53422 - \"POST /verify HTTP/1.1\" 200 OK",
    span("POST /verify", TID, "0x00f067aa0ba902b7", "SpanKind.CLIENT", "0x5fb397be34d26b51",
         "2025-12-01T19:00:12.250000Z", "2025-12-01T19:00:12.750125Z",
         {"status_code": "ERROR", "description": "TimeoutError: judge did not answer"},
         {"http.request.method": "POST", "server.address": "10.0.0.7", "http.response.status_code": 504,
          "nemo.gym.retry": [1, 2]},
         events=[{"name": "exception", "timestamp": "2025-12-01T19:00:12.750000Z",
                  "attributes": {"exception.type": "TimeoutError", "exception.message": "judge did not answer",
                                 "exception.escaped": "False"}}]),
    span("rollout", TID, "0x5fb397be34d26b51", "SpanKind.SERVER", None,
         "2025-12-01T19:00:12.000000Z", "2025-12-01T19:00:13.000001Z", {"status_code": "UNSET"},
         {"nemo.gym.rollout.id": "r-19", "nemo.gym.rollout.reward": 0.0, "nemo.gym.rollout.masked": False},
         links=[{"context": {"trace_id": "0x0af7651916cd43dd8448eb211c80319c", "span_id": "0xb7ad6b7169203331",
                             "trace_state": "['{key=nemo, value=batch-3}']"},
                 "attributes": {"nemo.gym.link": "batch"}}],
         trace_state="['{key=nemo, value=r19}', '{key=gym, value=1}']"),
    "Traceback (most recent call last):",
    '  File "/opt/gym/resources_servers/math_with_judge/app.py", line 88, in verify',
    "    reward = await self.judge(body)",
    '  File "/opt/gym/resources_servers/math_with_judge/judge.py", line 41, in judge',
    '    raise TimeoutError("judge did not answer")',
    "TimeoutError: judge did not answer",
    log("judge did not answer; rollout r-19 failed", 17, "ERROR",
        {"code.file.path": "/opt/gym/resources_servers/math_with_judge/app.py", "code.line.number": 90,
         "code.function.name": "verify"},
        "2025-12-01T19:00:12.800000Z", "2025-12-01T19:00:12.800100Z", TID, "0x5fb397be34d26b51", 1, 4),
    '{"resource_metrics": [{"resource": {"attributes": {"service.name": "nemo-gym/math_with_j',
    batch(T0 + 20 * S, 3, 2, 5, [0, 4, 2, 1] + [0] * 12, 40.0, 1.5, 19.0),
    log("server shutting down", 9, "INFO", None, "2025-12-01T19:00:21.000000Z", "2025-12-01T19:00:21.000050Z",
        "", "", None, None),
    "INFO:     Shutting down",
    "INFO:     Finished server process [4242]",
]
print("\n".join(lines))
