"""The events-v1 corpus the emitter and the collector's decoder share:
``testdata/events-v1/emitter-corpus.jsonl`` at the top of the repository.

Each line of the corpus is one case: ``name``, ``line`` (the events-v1 line the emitter writes
for it, without its newline) and ``want`` (what the collector's decoder must make of it: the
fields of its Go ``events.Event`` that are set, by their Go names; bytes as strings, NaN and
the infinities as ``"NaN"``, ``"+Inf"``, ``"-Inf"``). This test writes every line through the
emitter's own code and fails when one differs from the committed corpus; the Go test
``TestEmitterCorpus`` (internal/events) decodes every line of the same file and compares the
event with ``want``, so that neither side can drift from the other.

How a line is written: a recorder's call (``gym_metrics``, ``lens``, the observer's
instruments, the memory profiler) goes through the real emitter to a real Unix-socket
listener; a snapshot (``http.pool.connects``, ``concurrency.limits``, ``server.requests``,
``driver.counts``, ``gc.stats``) is the snapshot function the emitter's thread reads, with
the process's own GC counters fixed; the resource line is ``resource_line`` of fixed
attributes (the emitter adds this process's pid and host).

After a deliberate change of the format, rewrite the corpus with
``OTELCOL_GYM_UPDATE_CORPUS=1 python3 -m unittest test_corpus`` (from python/, with
``-s tests`` or tests on the path), review the diff, then run the Go test
(``go test -run TestEmitterCorpus ./internal/events/``).
"""

from __future__ import annotations

import json
import os
import unittest
from typing import Any, Callable
from unittest import mock

import otelcol_gym
from otelcol_gym import _lines, concurrency as cc, gym_metrics as gm, lens, memory as mm, observer as ob

from support import StreamCollector, use, wait_for

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "events-v1", "emitter-corpus.jsonl")
UPDATE = os.environ.get("OTELCOL_GYM_UPDATE_CORPUS") == "1"

E_ACUTE_150 = "\u00e9" * 150  # 300 bytes of UTF-8: the decoder cuts a resource value at 256
KEY_128 = "k" * 128  # the longest resource key the decoder takes


class Emitted:
    """The lines the emitter sends to a real Unix-socket listener, case by case."""

    def __init__(self) -> None:
        self.col = StreamCollector("unix")
        otelcol_gym.flush(5)
        use(self.col.endpoint, interval=60)  # no snapshot meanwhile: the cases read their own

    def close(self) -> None:
        otelcol_gym.flush(5)
        self.col.close()

    def line(self, event: str, call: Callable[[], Any]) -> str:
        """The one line of ``event`` that ``call`` makes the emitter send."""
        prefix = '{"event":"%s"' % event

        def of_event() -> list[str]:
            return [l for l in self.col.lines() if l.startswith(prefix + ",") or l == prefix + "}"]

        before = len(of_event())
        sent = otelcol_gym.stats()["sent"]
        call()
        if not otelcol_gym.flush(10) or not wait_for(lambda: len(of_event()) > before, 5):
            raise AssertionError("no %s line sent: %s" % (event, otelcol_gym.stats()))
        got = of_event()[before:]
        if len(got) != 1 or otelcol_gym.stats()["sent"] - sent != 1:
            raise AssertionError("want one %s line, got %r" % (event, got))
        return got[0] + "\n"


def _observer_readings(key: str, fill: Callable[[Any], None]) -> Callable[[], str]:
    """The observer's snapshot line ``key`` of a fresh process state that ``fill`` sets, the
    interpreter's GC counts fixed."""

    def read() -> str:
        state = ob._ProcessObserver()
        fill(state)
        with mock.patch.object(ob.gc, "get_count", return_value=(701, 3, 1)):
            return ob._readings(state)[key]

    return read


def _fill_requests(s: Any) -> None:
    rc = s.requests
    for code in (200, 200, 200, 422, 503):
        rc.count_response(code)
    for route, started in (("/run", False), ("/run", True), ("/v1/responses", True)):
        rc.count_cancellation(route, started)
    rc.in_flight, rc.unhandled_exceptions, rc.outbound_in_flight = 2, 1, 3


def _fill_driver(s: Any) -> None:
    s.driver.offered, s.driver.resident, s.driver.active = 5, 3, 2


def _fill_gc(s: Any) -> None:
    s.gc.collections[:] = [120, 11, 2]
    s.gc.collected[:] = [4000, 300, 20]
    s.gc.uncollectable[:] = [0, 0, 1]


def _connects() -> str:
    gm.register_http_connection_pool_connect_counter(lambda: {"policy_model": 3, "judge": 0, "m\u00fcnchen": 9223372036854775807})
    try:
        return gm._connects_line()["http.pool.connects"]
    finally:
        gm._reset_for_testing()


def _limits() -> str:
    cc._reset_for_testing()
    try:
        kept = [  # referenced while the snapshot is read: a live semaphore's limit counts
            cc.MeteredSemaphore(4, component="resources_server", limit_name="upstream_requests", server_name="math"),
            cc.MeteredSemaphore(2, component="agent", limit_name="per_request", admission_timeout=1.5),
        ]
        lines = cc._limits_lines()
        del kept
        return lines["concurrency.limits"]
    finally:
        cc._reset_for_testing()


def _memory(e: Emitted) -> str:
    prof = mm.MemoryProfiler(
        60,
        collector=lambda pid: mm.ProcessTreeMemory(1000 * pid, 600 * pid if pid == 4242 else None, 3),
        host_collector=lambda: mm.HostMemory(8000, 2000, 16000),
    )
    prof.add_target(mm.ServerMemoryTarget("math", "resources_servers", 4242))
    prof.add_target(mm.ServerMemoryTarget("policy_model", "responses_api_models", 4250))
    return e.line("memory.sample", prof.sample)


def cases(e: Emitted) -> list[tuple[str, Callable[[], str], dict[str, Any]]]:
    """Every case: its name, how the emitter writes its line, and the event it decodes to."""
    obs = ob._ProcessObserver()
    loop = {ob.EVENT_LOOP_ATTRIBUTE: "driver"}
    return [
        ("resource", lambda: _lines.resource_line({"service.name": "nemo-gym/math", "process.pid": 4242, "neg": -7, "debug": True, "off": False, KEY_128: E_ACUTE_150}),
         {"Type": "resource", "Attrs": [
             {"Key": "service.name", "Kind": "string", "Str": "nemo-gym/math"},
             {"Key": "process.pid", "Kind": "int", "Int": 4242},
             {"Key": "neg", "Kind": "int", "Int": -7},
             {"Key": "debug", "Kind": "bool", "Bool": True},
             {"Key": "off", "Kind": "bool"},
             {"Key": KEY_128, "Kind": "string", "Str": "\u00e9" * 128},
         ]}),
        ("rollout.completed failed", lambda: e.line("rollout.completed", lambda: gm.record_rollout_completed("failed", "math", "agent_request_failed", "transport_timeout", "Timeout\u2713Error")),
         {"Type": "rollout.completed", "Outcome": "failed", "DispatchName": "math", "FailureClass": "agent_request_failed", "FailureKind": "transport_timeout", "FailureType": "Timeout\u2713Error"}),
        ("rollout.completed scored", lambda: e.line("rollout.completed", lambda: gm.record_rollout_completed("scored", "math")),
         {"Type": "rollout.completed", "Outcome": "scored", "DispatchName": "math"}),
        ("rollout.reward", lambda: e.line("rollout.reward", lambda: gm.record_rollout_reward(0.5, "math", False)),
         {"Type": "rollout.reward", "DispatchName": "math", "Reward": 0.5, "HasReward": True}),
        ("rollout.reward integer masked", lambda: e.line("rollout.reward", lambda: gm.record_rollout_reward(1, "math", True)),
         {"Type": "rollout.reward", "DispatchName": "math", "Reward": 1, "HasReward": True, "Masked": True}),
        ("rollout.reward NaN", lambda: e.line("rollout.reward", lambda: gm.record_rollout_reward(float("nan"), "code", False)),
         {"Type": "rollout.reward", "DispatchName": "code", "Reward": "NaN", "HasReward": True}),
        ("rollout.reward Infinity", lambda: e.line("rollout.reward", lambda: gm.record_rollout_reward(float("inf"), "code", False)),
         {"Type": "rollout.reward", "DispatchName": "code", "Reward": "+Inf", "HasReward": True}),
        ("rollout.reward -Infinity", lambda: e.line("rollout.reward", lambda: gm.record_rollout_reward(-float("inf"), "code", False)),
         {"Type": "rollout.reward", "DispatchName": "code", "Reward": "-Inf", "HasReward": True}),
        ("rollout.health", lambda: e.line("rollout.health", lambda: gm.record_rollout_health("unhealthy", "scored", ["agent_turn_hollow", "model_call_failed"])),
         {"Type": "rollout.health", "Verdict": "unhealthy", "Outcome": "scored", "Flagged": ["agent_turn_hollow", "model_call_failed"]}),
        ("rollout.health nothing flagged", lambda: e.line("rollout.health", lambda: gm.record_rollout_health("healthy", "failed", [])),
         {"Type": "rollout.health", "Verdict": "healthy", "Outcome": "failed"}),
        ("rollout.size one", lambda: e.line("rollout.size", lambda: obs.input_items.record(12)),
         {"Type": "rollout.size", "SizeFields": 1, "InputItems": 12}),
        ("rollout.size all", lambda: e.line("rollout.size", lambda: obs.record_rollout_size(input_items=1, output_items=2, turns=3, tool_calls=4)),
         {"Type": "rollout.size", "SizeFields": 15, "InputItems": 1, "OutputItems": 2, "Turns": 3, "ToolCalls": 4}),
        ("sandbox.active", lambda: e.line("sandbox.active", lambda: gm.record_sandbox_active(1, "docker")),
         {"Type": "sandbox.active", "Provider": "docker", "Delta": 1}),
        ("sandbox.active int64 minimum", lambda: e.line("sandbox.active", lambda: gm.record_sandbox_active(-(1 << 63), "docker")),
         {"Type": "sandbox.active", "Provider": "docker", "Delta": -(1 << 63)}),
        ("sandbox.startup", lambda: e.line("sandbox.startup", lambda: gm.record_sandbox_startup(1532.25, "docker")),
         {"Type": "sandbox.startup", "Provider": "docker", "DurationMS": 1532.25}),
        ("sandbox.exec integer duration", lambda: e.line("sandbox.exec", lambda: gm.record_sandbox_exec_duration(88, "modal")),
         {"Type": "sandbox.exec", "Provider": "modal", "DurationMS": 88}),
        ("sandbox.create_retry escapes", lambda: e.line("sandbox.create_retry", lambda: gm.record_sandbox_create_retry('d\u00f6"cker\n\t\\\u2603\U0001f600\ud800')),
         {"Type": "sandbox.create_retry", "Provider": 'd\u00f6"cker\n\t\\\u2603\U0001f600\ufffd'}),
        ("sandbox.create_retry long", lambda: e.line("sandbox.create_retry", lambda: gm.record_sandbox_create_retry("p" * 1000)),
         {"Type": "sandbox.create_retry", "Provider": "p" * 1000}),
        ("server.startup_stage", lambda: e.line("server.startup_stage", lambda: gm.record_server_startup_stage(412.5, "import", "math", "resources_servers")),
         {"Type": "server.startup_stage", "Stage": "import", "ServerName": "math", "ServerType": "resources_servers", "DurationMS": 412.5}),
        ("server.startup_stage worker", lambda: e.line("server.startup_stage", lambda: gm.record_server_startup_stage(-0.0, "uvicorn", "math", None, worker=True)),
         {"Type": "server.startup_stage", "Stage": "uvicorn", "ServerName": "math", "Worker": True}),
        ("http.pool.queue", lambda: e.line("http.pool.queue", lambda: gm.record_http_connection_pool_queue_duration(0.042, "per_host", "ok", "policy_model")),
         {"Type": "http.pool.queue", "QueueConstraint": "per_host", "QueueOutcome": "ok", "ServerName": "policy_model", "DurationMS": 0.042}),
        ("http.pool.connect", lambda: e.line("http.pool.connect", lambda: gm.record_http_connection_pool_connect_duration(1e-07, "failed", "judge")),
         {"Type": "http.pool.connect", "ConnectOutcome": "failed", "ServerName": "judge", "DurationMS": 1e-07}),
        ("http.pool.connects", _connects,
         {"Type": "http.pool.connects", "Counts": [{"Name": "policy_model", "Count": 3}, {"Name": "judge"}, {"Name": "m\u00fcnchen", "Count": 9223372036854775807}]}),
        ("event_loop.lag", lambda: e.line("event_loop.lag", lambda: obs.lag.record(2.5, loop)),
         {"Type": "event_loop.lag", "Loop": "driver", "DurationMS": 2.5}),
        ("event_loop.tasks", lambda: e.line("event_loop.tasks", lambda: obs.tasks.set(17, loop)),
         {"Type": "event_loop.tasks", "Loop": "driver", "Tasks": 17}),
        ("gc.pause", lambda: e.line("gc.pause", lambda: obs.gc_pause.record(3.25, {ob.GC_GENERATION_ATTRIBUTE: 2})),
         {"Type": "gc.pause", "Generation": 2, "DurationMS": 3.25}),
        ("gc.stats", _observer_readings("gc.stats", _fill_gc),
         {"Type": "gc.stats", "GCCollections": [120, 11, 2], "GCCollected": [4000, 300, 20], "GCUncollectable": [0, 0, 1], "GCCount": [701, 3, 1]}),
        ("server.requests", _observer_readings("server.requests", _fill_requests),
         {"Type": "server.requests", "InFlight": 2, "UnhandledExceptions": 1, "OutboundInFlight": 3, "HasOutboundInFlight": True,
          "Responses": [{"Code": 200, "Count": 3}, {"Code": 422, "Count": 1}, {"Code": 503, "Count": 1}],
          "Cancelled": [{"Route": "/run", "Count": 1}, {"Route": "/run", "ResponseStarted": True, "Count": 1}, {"Route": "/v1/responses", "ResponseStarted": True, "Count": 1}]}),
        ("server.requests idle", _observer_readings("server.requests", lambda s: None),
         {"Type": "server.requests", "HasOutboundInFlight": True}),
        ("driver.counts", _observer_readings("driver.counts", _fill_driver),
         {"Type": "driver.counts", "Offered": 5, "Resident": 3, "Active": 2}),
        ("driver.admission", lambda: e.line("driver.admission", lambda: obs.admission.record(12.5)),
         {"Type": "driver.admission", "DurationMS": 12.5}),
        ("driver.materialize", lambda: e.line("driver.materialize", lambda: obs.materialize.record(0.75)),
         {"Type": "driver.materialize", "DurationMS": 0.75}),
        ("driver.output_write", lambda: e.line("driver.output_write", lambda: obs.record_output_write(2.25, 48213)),
         {"Type": "driver.output_write", "DurationMS": 2.25, "Bytes": 48213}),
        ("concurrency.limits", _limits,
         {"Type": "concurrency.limits", "Limits": [
             {"Component": "resources_server", "LimitName": "upstream_requests", "ServerName": "math", "Limit": 4},
             {"Component": "agent", "LimitName": "per_request", "Limit": 2, "HasTimeouts": True},
         ]}),
        ("model_call ok", lambda: e.line("model_call", lambda: gm.record_model_call(
            server_name="policy_model", dialect="responses", latency_ms=1834.5, ttft_ms=212.25, error_category=None,
            finish_reason="stop", tokens_in=1200, tokens_out=0, tokens_reasoning=None)),
         {"Type": "model_call", "ServerName": "policy_model", "Dialect": "responses", "CallOutcome": "ok", "FinishReason": "stop",
          "DurationMS": 1834.5, "HasDuration": True, "TTFTMS": 212.25, "HasTTFT": True, "Tokens": [1200, 0, 0], "HasTokens": [True, True, False]}),
        ("model_call failed", lambda: e.line("model_call", lambda: gm.record_model_call(
            server_name=None, dialect=None, latency_ms=None, ttft_ms=None, error_category="timeout",
            finish_reason="stop", tokens_in=5, tokens_out=None, tokens_reasoning=None)),
         {"Type": "model_call", "ServerName": "unknown", "Dialect": "unknown", "CallOutcome": "timeout"}),
        ("memory.sample", lambda: _memory(e),
         {"Type": "memory.sample", "HasHost": True, "Host": {"Usage": 8000, "Available": 2000, "Total": 16000, "Peak": 8000}, "Servers": [
             {"ServerName": "math", "ServerType": "resources_servers", "PID": 4242, "RSS": 4242000, "RSSPeak": 4242000, "PSS": 2545200, "PSSPeak": 2545200, "HasPSS": True, "HasPSSPeak": True, "Processes": 3},
             {"ServerName": "policy_model", "ServerType": "responses_api_models", "PID": 4250, "RSS": 4250000, "RSSPeak": 4250000, "Processes": 3},
         ]}),
        ("rollout.duration", lambda: e.line("rollout.duration", lambda: lens.record_rollout_duration(41234.5)),
         {"Type": "rollout.duration", "DurationMS": 41234.5}),
        ("verify", lambda: e.line("verify", lambda: lens.record_verify(230.5, True)),
         {"Type": "verify", "DurationMS": 230.5, "HasDuration": True, "Completed": True}),
        ("verify without duration", lambda: e.line("verify", lambda: lens.record_verify(None, False)),
         {"Type": "verify"}),
        ("servers.active", lambda: e.line("servers.active", lambda: lens.set_servers_active(4)),
         {"Type": "servers.active", "ServersActive": 4}),
        ("servers.active large integral float", lambda: e.line("servers.active", lambda: lens.set_servers_active(1e18)),
         {"Type": "servers.active", "ServersActive": 10 ** 18}),
    ]


def corpus_text(rows: list[tuple[str, str, dict[str, Any]]]) -> str:
    return "".join(json.dumps({"name": n, "line": l, "want": w}, ensure_ascii=True, allow_nan=False) + "\n" for n, l, w in rows)


class TestEmitterCorpus(unittest.TestCase):
    def test_corpus(self) -> None:
        e = Emitted()
        try:
            rows = []
            for name, write, want in cases(e):
                line = write()
                self.assertTrue(line.endswith("\n") and "\n" not in line[:-1], (name, line))
                rows.append((name, line[:-1], want))
        finally:
            e.close()
        self.assertEqual(len({n for n, _, _ in rows}), len(rows), "case names are unique")
        text = corpus_text(rows)
        if UPDATE:
            with open(CORPUS, "w", encoding="ascii") as f:
                f.write(text)
        with open(CORPUS, encoding="ascii") as f:
            committed = f.read()
        if committed != text:
            old = {r["name"]: r for r in map(json.loads, committed.splitlines())}
            for name, line, want in rows:
                self.assertEqual(old.get(name), {"name": name, "line": line, "want": want}, "case %r differs from %s (OTELCOL_GYM_UPDATE_CORPUS=1 rewrites it)" % (name, CORPUS))
            self.assertEqual(committed, text, "the corpus has other cases (OTELCOL_GYM_UPDATE_CORPUS=1 rewrites it)")


if __name__ == "__main__":
    unittest.main()
