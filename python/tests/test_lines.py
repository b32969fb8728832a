"""Every recorder and every observer reading ends as the right events-v1 line (parsed as JSON
by a real Unix-socket listener)."""

from __future__ import annotations

import asyncio
import gc
import math
import os
import socket
import unittest

import otelcol_gym
from otelcol_gym import gym_metrics as gm
from otelcol_gym import observer as ob

from support import StreamCollector, use, wait_for


class LineTest(unittest.TestCase):
    def setUp(self) -> None:
        self.col = StreamCollector("unix")
        otelcol_gym.flush(5)
        use(self.col.endpoint)
        self.base = otelcol_gym.stats()["sent"]

    def tearDown(self) -> None:
        otelcol_gym.flush(5)
        self.col.close()

    def sent(self, event: str) -> list[dict]:
        self.assertTrue(otelcol_gym.flush(10), otelcol_gym.stats())
        # Every line sent has been read by the listener (resource lines: one per connection).
        want = otelcol_gym.stats()["sent"] - self.base
        wait_for(lambda: len(self.col.lines()) - len(self.col.connections) >= want, 5)
        return self.col.events(event)

    def one(self, event: str) -> dict:
        got = self.sent(event)
        self.assertEqual(len(got), 1, got)
        return got[0]


class TestRecorders(LineTest):
    def test_resource_line_first(self) -> None:
        os.environ["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment=test,nemo.gym.server.name=math%2Fv2"
        try:
            use(self.col.endpoint, resource={"nemo.gym.server.type": "resources_servers"})
            gm.record_sandbox_create_retry("docker")
            self.sent("sandbox.create_retry")
        finally:
            del os.environ["OTEL_RESOURCE_ATTRIBUTES"]
        first = [c[0] for c in self.col.connections if c]
        self.assertTrue(first)
        for line in first:
            import json

            r = json.loads(line)
            self.assertEqual(r["event"], "resource")
            a = r["attributes"]
            self.assertEqual(a["process.pid"], os.getpid())
            self.assertEqual(a["host.name"], socket.gethostname())
            self.assertEqual(a["service.name"], os.environ.get("OTEL_SERVICE_NAME", "nemo-gym"))
            self.assertTrue(a["service.instance.id"])
        last = json.loads(first[-1])["attributes"]
        self.assertEqual(last["deployment.environment"], "test")
        self.assertEqual(last["nemo.gym.server.name"], "math/v2")
        self.assertEqual(last["nemo.gym.server.type"], "resources_servers")

    def test_rollout_completed_with_failure(self) -> None:
        gm.record_rollout_completed("failed", "math", "agent_request_failed", "transport_timeout", "TimeoutError")
        self.assertEqual(
            self.one("rollout.completed"),
            {"event": "rollout.completed", "outcome": "failed", "dispatch_name": "math", "failure_class": "agent_request_failed", "failure_kind": "transport_timeout", "failure_type": "TimeoutError"},
        )

    def test_rollout_completed_scored_has_no_reward(self) -> None:
        gm.record_rollout_completed("scored", "math")
        self.assertEqual(self.one("rollout.completed"), {"event": "rollout.completed", "outcome": "scored", "dispatch_name": "math"})

    def test_rollout_reward(self) -> None:
        gm.record_rollout_reward(0.5, "math", False)
        gm.record_rollout_reward(1, "math", True)
        gm.record_rollout_reward(float("nan"), "code", False)
        gm.record_rollout_reward(float("inf"), "code", False)
        gm.record_rollout_reward(-float("inf"), "code", False)
        got = self.sent("rollout.reward")
        self.assertEqual(len(got), 5)
        self.assertEqual(got[0], {"event": "rollout.reward", "reward": 0.5, "dispatch_name": "math", "masked": False})
        self.assertEqual(got[1], {"event": "rollout.reward", "reward": 1, "dispatch_name": "math", "masked": True})
        self.assertTrue(math.isnan(got[2]["reward"]))
        self.assertEqual(got[3]["reward"], math.inf)
        self.assertEqual(got[4]["reward"], -math.inf)
        raw = [l for l in self.col.lines() if '"rollout.reward"' in l]
        self.assertIn('"reward":NaN', raw[2])
        self.assertIn('"reward":Infinity', raw[3])
        self.assertIn('"reward":-Infinity', raw[4])

    def test_rollout_health(self) -> None:
        gm.record_rollout_health("unhealthy", "scored", (c for c in ["agent_turn_hollow", "model_call_failed"]))
        gm.record_rollout_health("healthy", "failed", [])
        got = self.sent("rollout.health")
        self.assertEqual(got[0], {"event": "rollout.health", "verdict": "unhealthy", "outcome": "scored", "flagged_checks": ["agent_turn_hollow", "model_call_failed"]})
        self.assertEqual(got[1], {"event": "rollout.health", "verdict": "healthy", "outcome": "failed", "flagged_checks": []})

    def test_sandboxes(self) -> None:
        gm.record_sandbox_active(1, "docker")
        gm.record_sandbox_active(-1, "docker")
        gm.record_sandbox_startup(1532.25, "docker")
        gm.record_sandbox_exec_duration(88, "modal")
        gm.record_sandbox_create_retry("modal")
        self.assertEqual([e["delta"] for e in self.sent("sandbox.active")], [1, -1])
        self.assertEqual(self.one("sandbox.startup"), {"event": "sandbox.startup", "provider": "docker", "duration_ms": 1532.25})
        self.assertEqual(self.one("sandbox.exec"), {"event": "sandbox.exec", "provider": "modal", "duration_ms": 88})
        self.assertEqual(self.one("sandbox.create_retry"), {"event": "sandbox.create_retry", "provider": "modal"})

    def test_server_startup_stage(self) -> None:
        gm.record_server_startup_stage(412.5, "import", "math", "resources_servers")
        gm.record_server_startup_stage(10, "uvicorn", "math", None, worker=True)
        got = self.sent("server.startup_stage")
        self.assertEqual(got[0], {"event": "server.startup_stage", "stage": "import", "server_name": "math", "server_type": "resources_servers", "worker": False, "duration_ms": 412.5})
        self.assertEqual(got[1], {"event": "server.startup_stage", "stage": "uvicorn", "server_name": "math", "worker": True, "duration_ms": 10})

    def test_connection_pool(self) -> None:
        gm.record_http_connection_pool_queue_duration(0.042, "per_host", "ok", "policy_model")
        gm.record_http_connection_pool_connect_duration(1.75, "failed", "judge")
        self.assertEqual(self.one("http.pool.queue"), {"event": "http.pool.queue", "queue_constraint": "per_host", "queue_outcome": "ok", "server_name": "policy_model", "duration_ms": 0.042})
        self.assertEqual(self.one("http.pool.connect"), {"event": "http.pool.connect", "outcome": "failed", "server_name": "judge", "duration_ms": 1.75})

    def test_connect_counter_snapshot(self) -> None:
        counts = {"policy_model": 3, "judge": 1}
        gm.register_http_connection_pool_connect_counter(lambda: counts)
        try:
            got = self.sent("http.pool.connects")
            self.assertEqual(got[-1], {"event": "http.pool.connects", "counts": {"policy_model": 3, "judge": 1}})
            counts["policy_model"] = 7
            self.assertEqual(self.sent("http.pool.connects")[-1]["counts"], {"policy_model": 7, "judge": 1})
        finally:
            gm._reset_for_testing()

    def test_invalid_values_are_not_sent_and_counted(self) -> None:
        before = otelcol_gym.stats()["invalid"]
        gm.record_sandbox_exec_duration(-1, "docker")
        gm.record_sandbox_exec_duration(float("nan"), "docker")
        gm.record_sandbox_exec_duration(True, "docker")
        gm.record_sandbox_exec_duration("12", "docker")  # not a number
        gm.record_sandbox_startup(1, "")
        gm.record_sandbox_active(0.5, "docker")
        gm.record_rollout_completed("done", "math")
        gm.record_rollout_health("fine", "scored", [])
        gm.record_rollout_health("healthy", "scored", 7)  # not iterable
        gm.record_http_connection_pool_queue_duration(1, "global", "ok", "m")
        gm.record_http_connection_pool_connect_duration(1, "ok", None)  # type: ignore[arg-type]
        gm.record_rollout_reward(None, "math", False)  # type: ignore[arg-type]
        gm.record_server_startup_stage(1, "import", "x" * 70000, None)  # line over 64 KiB
        gm.record_sandbox_exec_duration(2, "docker")  # the good line after them
        self.assertEqual([e["duration_ms"] for e in self.sent("sandbox.exec")], [2])
        self.assertEqual(otelcol_gym.stats()["invalid"] - before, 13)
        self.assertEqual(self.col.events("rollout.completed"), [])

    def test_numbers_like_pythons_json(self) -> None:
        gm.record_sandbox_exec_duration(-0.0, "docker")
        gm.record_sandbox_exec_duration(1e-7, "docker")
        gm.record_sandbox_active(3.0, "docker")  # an integral float is its integer
        gm.record_sandbox_startup(10**20, "docker")
        self.assertEqual([e["duration_ms"] for e in self.sent("sandbox.exec")], [0.0, 1e-7])
        self.assertEqual(self.one("sandbox.active")["delta"], 3)
        self.assertEqual(self.one("sandbox.startup")["duration_ms"], 10**20)

    def test_repeated_lines_and_the_line_cache(self) -> None:
        from otelcol_gym import _sender

        for _ in range(3):
            gm.record_rollout_completed("failed", "math", "c", "k", "T")
        gm.record_sandbox_active(1, "docker")
        gm.record_sandbox_active(True, "docker")  # a bool is no delta, even after a cached 1
        for i in range(_sender.LINE_CACHE_SIZE + 10):
            gm.record_sandbox_active(i % 7 - 3, "p%d" % i)  # more distinct lines than the cache holds
        got = self.sent("rollout.completed")
        self.assertEqual(len(got), 3)
        self.assertEqual(len({str(sorted(g.items())) for g in got}), 1)
        self.assertEqual(len(self.sent("sandbox.active")), _sender.LINE_CACHE_SIZE + 11)
        self.assertLessEqual(len(_sender.EMITTER._line_cache), _sender.LINE_CACHE_SIZE)

    def test_strings_escaped(self) -> None:
        gm.record_sandbox_create_retry('dö"cker\n\ud800')
        self.assertEqual(self.one("sandbox.create_retry")["provider"], 'dö"cker\n\ud800')
        for line in self.col.lines():
            line.encode("ascii")  # every line is ASCII: escapes as json writes them


class TestObserver(LineTest):
    def run_loop(self, body, interval: float = 0.05, count_tasks: bool = True) -> None:
        use(self.col.endpoint, interval=interval, count_tasks=count_tasks)

        async def main() -> None:
            async with ob.observe_event_loop("driver"):
                await body()

        asyncio.run(main())

    def test_settings_and_state(self) -> None:
        use(self.col.endpoint, interval=0.5, count_tasks=False)
        self.assertEqual(ob.observer_settings(), (0.5, False))
        self.assertIsNone(ob.request_counts())
        self.assertIsNone(ob.driver_metrics())

        async def body() -> None:
            self.assertIsInstance(ob.request_counts(), ob.RequestCounts)
            self.assertIsNotNone(ob.driver_metrics())

        self.run_loop(body)
        self.assertIsNone(ob.request_counts())
        self.assertNotIn(self.get_gc_callbacks(), [True])

    def get_gc_callbacks(self) -> bool:
        return any(isinstance(c, ob._GcRecorder) for c in gc.callbacks)

    def test_lag_tasks_and_gc(self) -> None:
        async def body() -> None:
            self.assertTrue(self.get_gc_callbacks())
            gc.collect()
            await asyncio.sleep(0.3)

        self.run_loop(body)
        self.assertFalse(self.get_gc_callbacks(), "the last loop removes the GC callback")
        lags = self.sent("event_loop.lag")
        self.assertGreaterEqual(len(lags), 2)
        for l in lags:
            self.assertEqual(l["loop"], "driver")
            self.assertGreaterEqual(l["lag_ms"], 0)
        tasks = self.sent("event_loop.tasks")
        self.assertTrue(tasks and all(t["tasks"] >= 2 and t["loop"] == "driver" for t in tasks), tasks)
        pauses = self.sent("gc.pause")
        self.assertIn(2, [p["generation"] for p in pauses])
        stats = self.sent("gc.stats")[-1]
        self.assertGreaterEqual(stats["collections"][2], 1)
        for k in ("collections", "collected", "uncollectable", "count"):
            self.assertEqual(len(stats[k]), 3)

    def test_request_counts(self) -> None:
        async def body() -> None:
            rc = ob.request_counts()
            assert rc is not None
            for _ in range(5):
                rc.count_response(200)
            rc.count_response(422)
            rc.count_response(700)  # outside 100..599: left out of the snapshot
            rc.count_cancellation("/run", False)
            rc.count_cancellation("/run", True)
            rc.count_cancellation("/run", True)
            rc.in_flight += 2
            rc.unhandled_exceptions += 1
            rc.outbound_in_flight += 3

        self.run_loop(body)
        got = self.sent("server.requests")[-1]
        self.assertEqual(got["responses"], {"200": 5, "422": 1})
        self.assertEqual(sorted(got["cancelled"], key=lambda c: c["response_started"]), [
            {"route": "/run", "response_started": False, "count": 1},
            {"route": "/run", "response_started": True, "count": 2},
        ])
        self.assertEqual((got["in_flight"], got["unhandled_exceptions"], got["outbound_in_flight"]), (2, 1, 3))

    def test_request_counts_folded_by_the_emitter_thread(self) -> None:
        # Nobody reads responses: the emitter's thread still empties the buffer, so it stays
        # bounded between snapshots.
        async def body() -> None:
            rc = ob.request_counts()
            assert rc is not None
            for _ in range(1000):
                rc.count_response(204)
            self.assertTrue(wait_for(lambda: not rc._pending, 5), len(rc._pending))
            self.assertEqual(rc._responses.get(204), 1000)

        self.run_loop(body, interval=60)  # no snapshot meanwhile: only the thread's wake folds
        self.assertEqual(self.sent("server.requests")[-1]["responses"], {"204": 1000})

    def test_driver(self) -> None:
        async def rollout(i: int) -> int:
            await asyncio.sleep(0.01)
            return i

        async def body() -> None:
            obs = ob.driver_metrics()
            assert obs is not None
            sem = asyncio.Semaphore(2)
            admission = ob.MeteredAdmission(sem, obs)

            async def one(i: int) -> int:
                obs.driver.offered += 1
                async with admission:
                    self.assertLessEqual(obs.driver.active, 2)
                    return await rollout(i)

            got = await asyncio.gather(*(ob.count_resident(one(i), obs) for i in range(5)))
            self.assertEqual(got, [0, 1, 2, 3, 4])
            self.assertEqual((obs.driver.resident, obs.driver.active), (0, 0))
            obs.write_duration.record(2.25)
            obs.write_bytes.record(48213)
            obs.write_bytes.record(10)
            obs.write_duration.record(1.0)
            obs.materialize.record(0.75)
            obs.input_items.record(12)
            obs.turns.record(6)
            obs.record_rollout_size(input_items=1, output_items=2, turns=3, tool_calls=4)

        self.run_loop(body)
        self.assertEqual(len(self.sent("driver.admission")), 5)
        self.assertEqual(self.sent("driver.output_write"), [
            {"event": "driver.output_write", "duration_ms": 2.25, "bytes": 48213},
            {"event": "driver.output_write", "duration_ms": 1.0, "bytes": 10},
        ])
        self.assertEqual(self.one("driver.materialize")["duration_ms"], 0.75)
        self.assertEqual(self.sent("rollout.size"), [
            {"event": "rollout.size", "input_items": 12},
            {"event": "rollout.size", "turns": 6},
            {"event": "rollout.size", "input_items": 1, "output_items": 2, "turns": 3, "tool_calls": 4},
        ])
        self.assertEqual(self.sent("driver.counts")[-1], {"event": "driver.counts", "offered": 5, "resident": 0, "active": 0})

    def test_app_lifespan_kept(self) -> None:
        import contextlib

        order = []

        @contextlib.asynccontextmanager
        async def lifespan(app):
            order.append("app start")
            yield {"k": 1}
            order.append("app stop")

        class Router:
            lifespan_context = staticmethod(lifespan)

        class App:
            router = Router()

        app = App()
        use(self.col.endpoint, interval=0.05)
        ob.observe_app_event_loop(app, "server")

        async def main() -> None:
            async with app.router.lifespan_context(app) as state:
                self.assertEqual(state, {"k": 1})
                self.assertIsNotNone(ob.request_counts())
                await asyncio.sleep(0.2)

        asyncio.run(main())
        self.assertEqual(order, ["app start", "app stop"])
        self.assertTrue(all(l["loop"] == "server" for l in self.sent("event_loop.lag")))

    def test_two_loops_share_the_process_state(self) -> None:
        import threading

        use(self.col.endpoint, interval=0.05)
        states = []
        inside = threading.Barrier(2)

        def run(name: str) -> None:
            async def main() -> None:
                async with ob.observe_event_loop(name):
                    states.append(ob.driver_metrics())
                    await asyncio.get_running_loop().run_in_executor(None, inside.wait)
                    await asyncio.sleep(0.15)

            asyncio.run(main())

        ts = [threading.Thread(target=run, args=(n,)) for n in ("server", "head_server")]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertIs(states[0], states[1])
        self.assertIsNone(ob.driver_metrics())
        self.assertEqual({l["loop"] for l in self.sent("event_loop.lag")}, {"server", "head_server"})


class TestAPI(unittest.TestCase):
    """The public names, signatures and defaults of Gym's two modules."""

    def test_signatures(self) -> None:
        import inspect

        sig = lambda f: str(inspect.signature(f))
        self.assertEqual(sig(gm.record_rollout_completed), "(outcome: 'str', dispatch_name: 'str', failure_class: 'str | None' = None, failure_kind: 'str | None' = None, failure_type: 'str | None' = None) -> 'None'")
        self.assertEqual(sig(gm.record_rollout_reward), "(reward: 'float', dispatch_name: 'str', masked: 'bool') -> 'None'")
        self.assertEqual(sig(gm.record_rollout_health), "(verdict: 'str', outcome: 'str', flagged_checks: 'Iterable[str]') -> 'None'")
        self.assertEqual(sig(gm.record_sandbox_active), "(delta: 'int', provider: 'str') -> 'None'")
        self.assertEqual(sig(gm.record_server_startup_stage), "(duration_ms: 'float', stage: 'str', server_name: 'str', server_type: 'Optional[str]', worker: 'bool' = False) -> 'None'")
        self.assertEqual(sig(gm.record_http_connection_pool_queue_duration), "(duration_ms: 'float', queue_constraint: 'str', queue_outcome: 'str', server_name: 'str') -> 'None'")
        self.assertEqual(sig(gm.record_http_connection_pool_connect_duration), "(duration_ms: 'float', outcome: 'str', server_name: 'str') -> 'None'")
        self.assertEqual(sig(ob.RequestCounts.count_cancellation), "(self, route: 'str', response_started: 'bool') -> 'None'")
        self.assertEqual(sig(ob.MeteredAdmission), "(semaphore: 'Any', observer: '_ProcessObserver') -> 'None'")

    def test_constants(self) -> None:
        self.assertEqual(gm.HTTP_CONNECTION_POOL_QUEUE_DURATION_BOUNDARIES_MS, (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000))
        self.assertEqual(gm.SANDBOX_DURATION_BOUNDARIES_MS[-1], 1800000)
        self.assertEqual(gm.SERVER_STARTUP_BOUNDARIES_MS[-1], 3600000)
        self.assertEqual(gm.UNREGISTERED_FAILURE_KIND, "unregistered")
        self.assertEqual(ob.EVENT_LOOP_LAG_BOUNDARIES_MS, (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000))
        self.assertEqual(ob._MAX_BUFFERED_GC_PAUSES, 10000)
        self.assertEqual(ob.REQUESTS_UNHANDLED_EXCEPTIONS_INSTRUMENT, "gym.server.requests.unhandled_exceptions_total")


if __name__ == "__main__":
    unittest.main()


class TestRequestCountsBuffer(unittest.TestCase):
    """``count_response`` is a bounded buffer's append, folded into ``responses``."""

    def test_fold_is_exact_under_a_concurrent_caller(self) -> None:
        import threading

        rc = ob.RequestCounts()
        n = 200_000
        half, resume, done = threading.Event(), threading.Event(), threading.Event()

        def serve() -> None:
            for i in range(n):
                if i == n // 2:
                    # Wait (bounded) for a fold in the middle of the run: the fold below is then
                    # concurrent with appends however the threads are scheduled.
                    half.set()
                    resume.wait(30)
                rc.count_response(200 if i % 4 else 503)
            done.set()

        t = threading.Thread(target=serve)
        t.start()
        folds, at_half = 0, -1
        while not done.is_set():
            paused = half.is_set() and not resume.is_set()
            rc.fold()
            folds += 1
            if paused:
                at_half = sum(rc.responses.values())
                resume.set()
        t.join()
        self.assertEqual(at_half, n // 2)  # a fold ran between the halves, exact at that point
        self.assertEqual(rc.responses, {200: n * 3 // 4, 503: n // 4})
        self.assertGreater(folds, 1)
        self.assertEqual(rc.response_buffer_overflows, 0)

    def test_a_full_buffer_is_counted_and_stays_bounded(self) -> None:
        class Small(ob.RequestCounts):
            RESPONSE_BUFFER = 8

        rc = Small()
        for _ in range(20):
            rc.count_response(200)
        self.assertEqual(len(rc._pending), 8)  # bounded: the oldest 12 went
        with self.assertLogs("otelcol_gym.observer", "WARNING"):
            self.assertEqual(rc.responses, {200: 8})
        self.assertEqual(rc.response_buffer_overflows, 1)
        rc.count_response(200)
        self.assertEqual(rc.responses, {200: 9})
        self.assertEqual(rc.response_buffer_overflows, 1)

    def test_bad_statuses_never_raise(self) -> None:
        from http import HTTPStatus

        rc = ob.RequestCounts()
        before = otelcol_gym.stats()["invalid"]
        rc.count_response(HTTPStatus.OK)  # an IntEnum is its code
        rc.count_response(200)
        rc.count_response([200])  # type: ignore[arg-type]  # unhashable: counted as invalid
        rc.count_response(404)
        self.assertEqual(rc.responses, {200: 2, 404: 1})
        self.assertEqual(otelcol_gym.stats()["invalid"], before + 1)

    def test_the_class_method_counts_too(self) -> None:
        rc = ob.RequestCounts()
        ob.RequestCounts.count_response(rc, 201)
        self.assertEqual(rc.responses, {201: 1})

    def test_responses_can_be_replaced(self) -> None:
        rc = ob.RequestCounts()
        rc.count_response(200)
        old = rc.responses
        rc.count_response(200)
        rc.responses = {500: 7}
        rc.count_response(500)
        self.assertEqual(old, {200: 2})
        self.assertEqual(rc.responses, {500: 8})
