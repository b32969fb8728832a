"""The memory sampler (``memory``) on real processes and the real /proc: a tree of sleeping
``python3`` children, its RSS and PSS, the host, the peaks, the ``memory.sample`` line and
its refusals, the bounds, and the switch that is off by default."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import unittest
from typing import Optional
from unittest import mock

import otelcol_gym
from otelcol_gym import _lines
from otelcol_gym import memory as mm

from proctree import kill_tree, spawn_tree
from support import wait_for
from test_lines import LineTest


@unittest.skipUnless(mm.process_tree_memory_supported(), "needs Linux procfs")
class TestProcfs(unittest.TestCase):
    def setUp(self) -> None:
        self.p, self.kids = spawn_tree()

    def tearDown(self) -> None:
        kill_tree(self.p, self.kids)

    def test_descendants(self) -> None:
        self.assertEqual(sorted(mm._descendant_pids(self.p.pid)), sorted([self.p.pid] + self.kids))
        self.assertEqual(mm._descendant_pids(self.p.pid)[0], self.p.pid, "the root first")
        # Both ways to find the children: the kernel's children files and the ppid scan.
        self.assertEqual(sorted(mm._descendant_pids(self.p.pid, mm._parent_map())), sorted([self.p.pid] + self.kids))
        self.assertEqual(mm._descendant_pids(self.kids[0]), [self.kids[0]])

    def test_a_child_started_by_another_thread(self) -> None:
        # The kernel lists a child under the thread that forked it (task/<tid>/children).
        code = (
            "import subprocess, sys, threading, time\n"
            "kids = []\n"
            "def start():\n"
            "    k = subprocess.Popen([sys.executable, '-c', 'import time; print(1, flush=True); time.sleep(30)'], stdout=subprocess.PIPE)\n"
            "    k.stdout.readline()\n"
            "    kids.append(k)\n"
            "    time.sleep(30)\n"
            "threading.Thread(target=start, daemon=True).start()\n"
            "while not kids:\n"
            "    time.sleep(0.01)\n"
            "print(kids[0].pid, flush=True)\n"
            "time.sleep(30)\n"
        )
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None
        kid = int(p.stdout.readline())
        try:
            self.assertEqual(sorted(mm._descendant_pids(p.pid)), sorted([p.pid, kid]))
            self.assertEqual(mm.collect_process_tree_memory(p.pid).processes, 2)
        finally:
            kill_tree(p, [kid])

    def test_tree_memory(self) -> None:
        m = mm.collect_process_tree_memory(self.p.pid)
        self.assertEqual(m.processes, 4)
        each = [mm._read_process_memory(pid) for pid in [self.p.pid] + self.kids]
        for r in each:
            assert r is not None
            self.assertGreater(r[0], 1 << 20, "a python3 has more than 1 MiB resident")
        self.assertGreater(m.rss_bytes, 4 << 20)
        if os.path.exists("/proc/self/smaps_rollup"):
            assert m.pss_bytes is not None
            self.assertGreater(m.pss_bytes, 0)
            self.assertLessEqual(m.pss_bytes, m.rss_bytes, "PSS shares out what RSS counts in full")
        # Each reading is close to the others' sum (the processes sleep; pages barely move).
        self.assertAlmostEqual(m.rss_bytes, sum(r[0] for r in each if r), delta=m.rss_bytes * 0.05)

    def test_statm_when_smaps_rollup_cannot_be_read(self) -> None:
        real_open = open

        def no_rollup(path, *a, **kw):  # type: ignore[no-untyped-def]
            if str(path).endswith("/smaps_rollup"):
                raise PermissionError(path)
            return real_open(path, *a, **kw)

        with mock.patch("builtins.open", no_rollup):
            m = mm.collect_process_tree_memory(self.p.pid)
        self.assertIsNone(m.pss_bytes, "no PSS when a process of the tree reports none")
        self.assertEqual(m.processes, 4)
        self.assertGreater(m.rss_bytes, 4 << 20)
        with open("/proc/%d/statm" % self.p.pid) as f:
            pages = int(f.read().split()[1])
        r = mm._read_process_memory(self.p.pid)
        assert r is not None
        self.assertAlmostEqual(r[0], pages * os.sysconf("SC_PAGE_SIZE"), delta=r[0] * 0.05)

    def test_an_exited_root(self) -> None:
        kill_tree(self.p, self.kids)
        self.assertIsNone(mm._read_process_memory(self.p.pid))
        with self.assertRaises(ProcessLookupError):
            mm.collect_process_tree_memory(self.p.pid)
        self.p, self.kids = spawn_tree()

    def test_host(self) -> None:
        h = mm.collect_host_memory()
        self.assertEqual(h.total_bytes, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        self.assertTrue(0 < h.used_bytes < h.total_bytes)
        self.assertTrue(0 < h.available_bytes <= h.total_bytes)

    def test_profiler_sample_and_peaks(self) -> None:
        prof = mm.MemoryProfiler(10)
        self.assertTrue(prof.add_target(mm.ServerMemoryTarget("math", "resources_servers", self.p.pid)))
        it = prof.sample()
        assert it is not None
        (server,), host = it[1], it[2]
        self.assertEqual(server[:3], ("math", "resources_servers", self.p.pid))
        self.assertEqual(server[7], 4)
        self.assertEqual(server[5], server[3], "the first sample is its own peak")
        self.assertIsNotNone(host)
        self.assertEqual(prof.peaks(self.p.pid), (server[5], server[6]))
        # The root exits: the next sample drops it, and it is no longer a target.
        kill_tree(self.p, self.kids)
        it = prof.sample()
        assert it is not None
        self.assertEqual(it[1], ())
        self.assertEqual(prof.targets(), [])
        self.p, self.kids = spawn_tree()


class TestProfiler(unittest.TestCase):
    def fake(self, readings: list[mm.ProcessTreeMemory]) -> mm.MemoryProfiler:
        it = iter(readings)
        return mm.MemoryProfiler(1, collector=lambda pid: next(it), host_collector=None)

    def test_peaks_are_the_highest_sampled(self) -> None:
        prof = self.fake([mm.ProcessTreeMemory(300, 200, 2), mm.ProcessTreeMemory(500, 100, 3), mm.ProcessTreeMemory(400, 150, 3)])
        prof.add_target(mm.ServerMemoryTarget("judge", "resources_servers", 4242))
        got = [prof.sample() for _ in range(3)]
        self.assertEqual([g[1][0][3:] for g in got if g], [(300, 200, 300, 200, 2), (500, 100, 500, 200, 3), (400, 150, 500, 200, 3)])

    def test_no_pss_no_pss_peak(self) -> None:
        prof = self.fake([mm.ProcessTreeMemory(300, 200, 2), mm.ProcessTreeMemory(310, None, 2)])
        prof.add_target(mm.ServerMemoryTarget("judge", "resources_servers", 4242))
        prof.sample()
        it = prof.sample()
        assert it is not None
        self.assertEqual(it[1][0][3:], (310, None, 310, None, 2))
        self.assertNotIn('"pss', mm._fmt_sample(it))

    def test_bounds(self) -> None:
        self.assertEqual(mm.MemoryProfiler(0.01).interval_seconds, mm.MIN_INTERVAL_SECONDS)
        self.assertEqual(mm.MemoryProfiler(-5).interval_seconds, mm.MIN_INTERVAL_SECONDS)
        self.assertEqual(mm.MemoryProfiler(2.5).interval_seconds, 2.5)
        prof = mm.MemoryProfiler(1, max_servers=2)
        self.assertTrue(prof.add_target(mm.ServerMemoryTarget("a", "t", 1)))
        self.assertTrue(prof.add_target(mm.ServerMemoryTarget("b", "t", 2)))
        with self.assertLogs("otelcol_gym.memory", "WARNING"):
            self.assertFalse(prof.add_target(mm.ServerMemoryTarget("c", "t", 3)))
        self.assertTrue(prof.add_target(mm.ServerMemoryTarget("b2", "t", 2)), "a known pid is replaced, not refused")
        self.assertEqual(len(prof.targets()), 2)
        self.assertEqual(mm.MAX_SERVERS, 64)
        self.assertEqual(mm.MemoryProfiler(1, max_servers=10_000).max_servers, mm.MAX_SERVERS)
        self.assertEqual(mm.MemoryProfiler(1, max_servers=None).max_servers, mm.MAX_SERVERS)  # type: ignore[arg-type]

    def test_thread_starts_and_stops(self) -> None:
        calls: list[float] = []

        def collector(pid: int) -> mm.ProcessTreeMemory:
            calls.append(time.monotonic())
            return mm.ProcessTreeMemory(1, 1, 1)

        prof = mm.MemoryProfiler(1, collector=collector, host_collector=None)
        prof.add_target(mm.ServerMemoryTarget("a", "t", 1))
        prof.start()
        try:
            deadline = time.monotonic() + 5
            while len(calls) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertTrue(prof.running)
            self.assertGreaterEqual(len(calls), 2)
            self.assertGreaterEqual(calls[1] - calls[0], 0.9, "one sample per interval, at most")
        finally:
            prof.stop()
        self.assertFalse(prof.running)

    def test_off_by_default(self) -> None:
        env = dict(os.environ)
        env.pop("OTELCOL_GYM_MEMORY_PROFILING", None)
        code = (
            "import os, threading\n"
            "from otelcol_gym import memory\n"
            "print(memory.memory_profiling_enabled(), memory.register_server('m', 't', os.getpid()), memory.memory_profiler(), "
            "[t.name for t in threading.enumerate() if t.name.startswith('otelcol-gym-memory')])\n"
        )
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), "False False None []")
        env["OTELCOL_GYM_MEMORY_PROFILING"] = "true"
        env["OTELCOL_GYM_ENDPOINT"] = "unix:///nonexistent/otelcol-gym.sock"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        if mm.process_tree_memory_supported():
            self.assertTrue(out.startswith("True True <otelcol_gym.memory.MemoryProfiler"), out)
            self.assertTrue(out.strip().endswith("['otelcol-gym-memory']"), out)


class TestSampleLine(unittest.TestCase):
    def test_lines(self) -> None:
        servers = (("math", "resources_servers", 4242, 1000, 600, 1200, 700, 3), ("policy_model", "responses_api_models", 4250, 5000, None, 5000, None, 1))
        self.assertEqual(
            mm._fmt_sample((mm._SAMPLE, servers, (8000, 16000, 32000, 9000))),
            '{"event":"memory.sample","servers":['
            '{"server_name":"math","server_type":"resources_servers","pid":4242,"rss":1000,"pss":600,"rss_peak":1200,"pss_peak":700,"processes":3},'
            '{"server_name":"policy_model","server_type":"responses_api_models","pid":4250,"rss":5000,"rss_peak":5000,"processes":1}],'
            '"host":{"usage":8000,"available":16000,"total":32000,"peak":9000}}\n',
        )
        self.assertEqual(mm._fmt_sample((mm._SAMPLE, (), (1, 2, 3, 4))), '{"event":"memory.sample","host":{"usage":1,"available":2,"total":3,"peak":4}}\n')
        self.assertEqual(mm._fmt_sample((mm._SAMPLE, servers[1:], None)), '{"event":"memory.sample","servers":[{"server_name":"policy_model","server_type":"responses_api_models","pid":4250,"rss":5000,"rss_peak":5000,"processes":1}]}\n')

    def test_refusals(self) -> None:
        good = ("math", "resources_servers", 4242, 1000, 600, 1200, 700, 3)
        for i, bad in ((0, ""), (1, ""), (1, None), (2, -1), (3, -5), (3, 1.5), (4, -1), (7, True)):
            s = list(good)
            s[i] = bad
            with self.subTest(field=i, value=bad):
                with self.assertRaises((_lines.Invalid, TypeError, ValueError, AttributeError)):
                    mm._server_entry(tuple(s))
                self.assertEqual(mm._fmt_sample((mm._SAMPLE, (tuple(s),), None)), '{"event":"memory.sample"}\n', "the entry is left out")
        with self.assertRaises(_lines.Invalid):
            mm._fmt_sample((mm._SAMPLE, (), (1, -2, 3, 4)))

    def test_a_bad_server_entry_is_left_out_and_counted(self) -> None:
        good = ("math", "resources_servers", 4242, 1000, 600, 1200, 700, 3)
        bad = ("judge", None, 4243, 1000, 600, 1200, 700, 3)
        before = otelcol_gym.stats()["invalid"]
        self.assertEqual(
            mm._fmt_sample((mm._SAMPLE, (bad, good), (1, 2, 3, 4))),
            '{"event":"memory.sample","servers":[{"server_name":"math","server_type":"resources_servers","pid":4242,"rss":1000,"pss":600,"rss_peak":1200,"pss_peak":700,"processes":3}],'
            '"host":{"usage":1,"available":2,"total":3,"peak":4}}\n',
        )
        self.assertEqual(otelcol_gym.stats()["invalid"] - before, 1)


@unittest.skipUnless(mm.process_tree_memory_supported(), "needs Linux procfs")
class TestThroughTheListener(LineTest):
    def test_register_server(self) -> None:
        p, kids = spawn_tree()
        settings = otelcol_gym._E.settings  # type: ignore[attr-defined]
        settings.memory_profiling = True
        try:
            with self.assertLogs("otelcol_gym.memory", "WARNING"):
                self.assertFalse(mm.register_server("", "resources_servers", p.pid))
            with self.assertLogs("otelcol_gym.memory", "WARNING"):
                self.assertFalse(mm.register_server("math", None, p.pid))  # type: ignore[arg-type]
            self.assertIsNone(mm.memory_profiler(), "nothing started for a refused server")
            self.assertTrue(mm.register_server("math", "resources_servers", p.pid))
            prof = mm.memory_profiler()
            assert prof is not None
            self.assertTrue(prof.running)
            self.assertTrue(wait_for(lambda: prof.samples >= 1, 10), "the thread samples at once")
            got: list = []

            def arrived() -> bool:
                got[:] = [e for e in self.sent("memory.sample") if [s["pid"] for s in e.get("servers", [])] == [p.pid]]
                return bool(got)

            self.assertTrue(wait_for(arrived, 10))
            (server,) = got[-1]["servers"]
            self.assertEqual((server["server_name"], server["server_type"], server["pid"], server["processes"]), ("math", "resources_servers", p.pid, 4))
            self.assertGreater(server["rss"], 0)
            self.assertEqual(set(got[-1]["host"]), {"usage", "available", "total", "peak"})
            mm.unregister_server(p.pid)
            self.assertIsNone(mm.memory_profiler())
            self.assertFalse(prof.running)
        finally:
            settings.memory_profiling = False
            mm._reset_for_testing()
            kill_tree(p, kids)


if __name__ == "__main__":
    unittest.main()
