"""The transports, the bounded queue, a collector that is down and comes back, fork and exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import unittest

import otelcol_gym
from otelcol_gym import gym_metrics as gm

from support import HTTPCollector, StreamCollector, free_port, use, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)


def seq_of(col, event="sandbox.create_retry") -> list[int]:
    return [int(e["provider"][1:]) for e in col.events(event)]


class TestHTTP(unittest.TestCase):
    def setUp(self) -> None:
        self.col = HTTPCollector()
        otelcol_gym.flush(5)
        use(self.col.endpoint)

    def tearDown(self) -> None:
        otelcol_gym.flush(5)
        self.col.close()

    def test_bodies(self) -> None:
        for i in range(10000):
            gm.record_sandbox_create_retry("p%d" % i)
            if i % 2500 == 0:
                self.assertTrue(otelcol_gym.flush(10))
        self.assertTrue(otelcol_gym.flush(10))
        self.assertEqual(seq_of(self.col), list(range(10000)), "every line once, in order")
        self.assertGreater(len(self.col.bodies), 2, "batched in several bodies")
        for headers, body in self.col.bodies:
            self.assertEqual(headers["Content-Type"], "application/x-ndjson")
            first = json.loads(body.split("\n", 1)[0])
            self.assertEqual(first["event"], "resource", "the resource line first in every body")
            self.assertEqual(first["attributes"]["process.pid"], os.getpid())
            self.assertLessEqual(len(body), (1 << 20) + 70000)
        self.assertEqual(len(self.col.peers), 1, "one keep-alive connection")

    def test_headers_from_the_environment(self) -> None:
        from otelcol_gym import _sender, _settings

        saved = _sender.EMITTER.settings.headers
        _sender.EMITTER.settings.headers = _settings.parse_resource_attributes("authorization=Bearer%20s3cret,x-gym=1")
        try:
            use(self.col.endpoint)  # a new transport, with the headers
            gm.record_sandbox_create_retry("p0")
            self.assertTrue(otelcol_gym.flush(10))
            headers = self.col.bodies[-1][0]
            self.assertEqual(headers["authorization"], "Bearer s3cret")
            self.assertEqual(headers["x-gym"], "1")
            self.assertEqual(headers["Content-Type"], "application/x-ndjson")
        finally:
            _sender.EMITTER.settings.headers = saved
            use(self.col.endpoint)

    def test_503_retry_after_honoured(self) -> None:
        self.col.refuse = 1
        self.col.retry_after = "1"
        errors = otelcol_gym.stats()["send_errors"]
        gm.record_sandbox_create_retry("p0")
        start = time.monotonic()
        self.assertTrue(otelcol_gym.flush(10))
        waited = time.monotonic() - start
        self.assertEqual(self.col.refused, 1)
        self.assertEqual(seq_of(self.col), [0], "sent again after Retry-After, once")
        self.assertGreaterEqual(waited, 0.9, "Retry-After: 1 was honoured")
        self.assertEqual(otelcol_gym.stats()["send_errors"] - errors, 1)


class TestHTTPIdleClose(unittest.TestCase):
    def test_a_connection_closed_while_idle_is_opened_again(self) -> None:
        col = HTTPCollector(idle_timeout=0.2)
        try:
            otelcol_gym.flush(5)
            use(col.endpoint)
            lost = otelcol_gym.stats()["lost"]
            for i in range(5):
                gm.record_sandbox_create_retry("p%d" % i)
                self.assertTrue(otelcol_gym.flush(10), otelcol_gym.stats())
                time.sleep(0.5)  # the collector closes the idle connection meanwhile
            self.assertEqual(seq_of(col), list(range(5)), "each line once")
            self.assertEqual(otelcol_gym.stats()["lost"], lost)
            self.assertGreaterEqual(len(col.peers), 5, "a new connection after each idle close")
        finally:
            col.close()


class TestStreams(unittest.TestCase):
    def test_tcp_resource_first_on_each_connection_and_reconnect(self) -> None:
        port = free_port()
        col = StreamCollector("tcp", port=port)
        otelcol_gym.flush(5)
        use(col.endpoint)
        before = otelcol_gym.stats()
        gm.record_sandbox_create_retry("p0")
        self.assertTrue(otelcol_gym.flush(10))
        wait_for(lambda: len(col.lines()) == 2)
        col.close()  # the collector stops: the emitter sees the stream closed
        # Down: calls return, lines wait in the queue (or are dropped when it is full).
        for i in range(1, 101):
            gm.record_sandbox_create_retry("p%d" % i)
        self.assertFalse(otelcol_gym.flush(0.5))
        col2 = StreamCollector("tcp", port=port)  # back on the same port
        try:
            self.assertTrue(otelcol_gym.flush(15), otelcol_gym.stats())
            self.assertTrue(wait_for(lambda: len(seq_of(col2)) == 100))
            self.assertEqual(seq_of(col) + seq_of(col2), list(range(101)), "nothing lost, nothing twice")
            for c in col.connections + col2.connections:
                self.assertEqual(json.loads(c[0])["event"], "resource")
            s = otelcol_gym.stats()
            self.assertGreaterEqual(s["reconnects"] - before["reconnects"], 1)
            self.assertGreaterEqual(s["send_errors"] - before["send_errors"], 1)
            self.assertEqual(s["lost"], before["lost"])
        finally:
            col2.close()

    def test_collector_down_then_back_full_queue_drops_new_lines(self) -> None:
        col = StreamCollector("unix")
        path = col.path
        col.close()  # nobody listens: connection refused
        otelcol_gym.flush(5)
        use("unix://" + path, queue_size=100)
        before = otelcol_gym.stats()
        n = 20000
        for i in range(n):
            gm.record_sandbox_create_retry("p%d" % i)  # never raises, never blocks
        s = otelcol_gym.stats()
        self.assertLessEqual(s["in_queue"], 100, "the queue's bound holds during the outage")
        dropped = s["dropped"] - before["dropped"]
        self.assertGreaterEqual(dropped, n - 100 - 4096, "at most the queue and one batch are kept")
        self.assertEqual((s["queued"] - before["queued"]) + dropped, n, "every line queued or counted as dropped")
        col2 = StreamCollector("unix", path=path)
        try:
            self.assertTrue(otelcol_gym.flush(15), otelcol_gym.stats())
            kept = n - dropped
            self.assertTrue(wait_for(lambda: len(seq_of(col2)) == kept), (len(seq_of(col2)), kept))
            got = seq_of(col2)
            # What was queued is sent in order; the lines that found the queue full are the
            # ones missing (the last line of the burst among them), never an older one.
            self.assertEqual(got, sorted(set(got)), "in order, each once")
            self.assertEqual(got[:100], list(range(100)), "the oldest lines are kept")
            self.assertNotIn(n - 1, got, "the newest line found the queue full")
        finally:
            col2.close()
            use("unix://" + path, queue_size=65536)


class TestFork(unittest.TestCase):
    def test_child_has_its_own_queue_thread_and_resource(self) -> None:
        col = StreamCollector("unix")
        try:
            otelcol_gym.flush(5)
            use(col.endpoint)
            gm.record_sandbox_create_retry("parent-before")
            self.assertTrue(otelcol_gym.flush(10))
            gm.record_sandbox_create_retry("parent-queued")  # may still be queued at the fork
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    s = otelcol_gym.stats()
                    if s["sent"] == 0 and s["in_queue"] == 0:  # nothing of the parent's
                        gm.record_sandbox_create_retry("child")
                        code = 0 if otelcol_gym.flush(10) else 2
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0)
            self.assertTrue(otelcol_gym.flush(10))
            self.assertTrue(wait_for(lambda: len(col.events("sandbox.create_retry")) == 3))
            by_pid: dict[int, list[str]] = {}
            ids = {}
            for conn in col.connections:
                res = json.loads(conn[0])["attributes"]
                by_pid.setdefault(res["process.pid"], []).extend(json.loads(l)["provider"] for l in conn[1:])
                ids[res["process.pid"]] = res["service.instance.id"]
            self.assertEqual(sorted(by_pid[os.getpid()]), ["parent-before", "parent-queued"])
            self.assertEqual(by_pid[pid], ["child"])
            self.assertNotEqual(ids[pid], ids[os.getpid()])
        finally:
            col.close()


def run_script(code: str, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e["PYTHONPATH"] = PKG
    e.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, capture_output=True, text=True, timeout=timeout)


class TestExit(unittest.TestCase):
    def test_exit_flushes(self) -> None:
        col = StreamCollector("unix")
        try:
            r = run_script(
                """
                from otelcol_gym import gym_metrics as gm
                for i in range(1000):
                    gm.record_sandbox_create_retry("p%d" % i)
                """,
                {"OTELCOL_GYM_ENDPOINT": col.endpoint},
            )
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(wait_for(lambda: len(seq_of(col)) == 1000))
            self.assertEqual(seq_of(col), list(range(1000)))
        finally:
            col.close()

    def test_exit_with_the_collector_down_is_bounded(self) -> None:
        r = run_script(
            """
            import time, otelcol_gym
            from otelcol_gym import gym_metrics as gm
            for i in range(1000):
                gm.record_sandbox_create_retry("p%d" % i)
            ok = otelcol_gym.shutdown(0.3)
            s = otelcol_gym.stats()
            print(ok, s["sent"], s["dropped"], s["queued"])
            gm.record_sandbox_create_retry("after")  # a no-op after shutdown
            """,
            {"OTELCOL_GYM_ENDPOINT": "tcp://127.0.0.1:%d" % free_port(), "OTELCOL_GYM_EXIT_TIMEOUT": "0.5"},
        )
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "", "nothing raised or printed")
        self.assertEqual(r.stdout.split(), ["False", "0", "1000", "1000"], "what shutdown could not send is counted as dropped")

    def test_disabled_is_a_no_op(self) -> None:
        r = run_script(
            """
            import threading, otelcol_gym
            from otelcol_gym import gym_metrics as gm, observer as ob
            gm.record_sandbox_create_retry("p")
            gm.record_rollout_completed("scored", "m")
            print(otelcol_gym.stats()["queued"], ob.observer_settings(), threading.active_count())
            """,
            {"OTELCOL_GYM_ENABLED": "false"},
        )
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["0", "None", "1"], "nothing queued, no observer, no thread")

    def test_bad_endpoint_raises_in_configure_only(self) -> None:
        with self.assertRaises(ValueError):
            otelcol_gym.configure(endpoint="ftp://127.0.0.1:1")
        with self.assertRaises(ValueError):
            otelcol_gym.configure(queue_size=0)


if __name__ == "__main__":
    unittest.main()
