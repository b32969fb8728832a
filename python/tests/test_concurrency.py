"""``concurrency.MeteredSemaphore`` passes the tests an ``asyncio.BoundedSemaphore`` passes,
keeps its limit's totals, and they reach the collector as one ``concurrency.limits`` line."""

from __future__ import annotations

import asyncio
import gc
import inspect
import unittest
from typing import Any, Callable

import otelcol_gym
from otelcol_gym import _lines
from otelcol_gym import concurrency as cc

from test_lines import LineTest


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 10))


class SemaphoreContract:
    """What asyncio.BoundedSemaphore does; each subclass runs it on one class."""

    make: Callable[..., asyncio.BoundedSemaphore]

    def test_is_a_bounded_semaphore(self) -> None:
        self.assertIsInstance(self.make(1), asyncio.BoundedSemaphore)  # type: ignore[attr-defined]

    def test_acquire_release_and_locked(self) -> None:
        async def main() -> None:
            s = self.make(2)
            self.assertFalse(s.locked())  # type: ignore[attr-defined]
            self.assertTrue(await s.acquire())  # type: ignore[attr-defined]
            self.assertFalse(s.locked())  # type: ignore[attr-defined]
            self.assertTrue(await s.acquire())  # type: ignore[attr-defined]
            self.assertTrue(s.locked())  # type: ignore[attr-defined]
            s.release()
            self.assertFalse(s.locked())  # type: ignore[attr-defined]
            s.release()

        run(main())

    def test_async_with(self) -> None:
        async def main() -> None:
            s = self.make(1)
            async with s:
                self.assertTrue(s.locked())  # type: ignore[attr-defined]
            self.assertFalse(s.locked())  # type: ignore[attr-defined]
            with self.assertRaises(RuntimeError):  # type: ignore[attr-defined]
                async with s:
                    raise RuntimeError("the body's exception goes through")
            self.assertFalse(s.locked())  # type: ignore[attr-defined]

        run(main())

    def test_default_value_is_one(self) -> None:
        async def main() -> None:
            s = self.make()
            await s.acquire()
            self.assertTrue(s.locked())  # type: ignore[attr-defined]
            s.release()

        run(main())

    def test_negative_value_raises(self) -> None:
        with self.assertRaises(ValueError):  # type: ignore[attr-defined]
            self.make(-1)

    def test_zero_value_waits_for_a_release(self) -> None:
        async def main() -> None:
            s = self.make(0)
            self.assertTrue(s.locked())  # type: ignore[attr-defined]
            with self.assertRaises(asyncio.TimeoutError):  # type: ignore[attr-defined]
                await asyncio.wait_for(s.acquire(), 0.05)

        run(main())

    def test_over_release_raises(self) -> None:
        async def main() -> None:
            s = self.make(1)
            with self.assertRaises(ValueError):  # type: ignore[attr-defined]
                s.release()
            await s.acquire()
            s.release()
            with self.assertRaises(ValueError):  # type: ignore[attr-defined]
                s.release()
            await s.acquire()  # still one slot, no more
            self.assertTrue(s.locked())  # type: ignore[attr-defined]

        run(main())

    def test_waiters_wake_in_order(self) -> None:
        async def main() -> None:
            s = self.make(1)
            order: list[int] = []
            await s.acquire()

            async def waiter(i: int) -> None:
                async with s:
                    order.append(i)
                    await asyncio.sleep(0)

            tasks = [asyncio.ensure_future(waiter(i)) for i in range(5)]
            await asyncio.sleep(0.01)
            self.assertEqual(order, [])  # type: ignore[attr-defined]
            s.release()
            await asyncio.gather(*tasks)
            self.assertEqual(order, [0, 1, 2, 3, 4])  # type: ignore[attr-defined]
            self.assertFalse(s.locked())  # type: ignore[attr-defined]

        run(main())

    def test_bounds_concurrency(self) -> None:
        async def main() -> None:
            s = self.make(3)
            running = peak = 0

            async def work() -> None:
                nonlocal running, peak
                async with s:
                    running += 1
                    peak = max(peak, running)
                    await asyncio.sleep(0.001)
                    running -= 1

            await asyncio.gather(*(work() for _ in range(30)))
            self.assertEqual(peak, 3)  # type: ignore[attr-defined]

        run(main())

    def test_cancelled_waiter_leaks_no_slot(self) -> None:
        async def main() -> None:
            s = self.make(1)
            await s.acquire()
            t = asyncio.ensure_future(s.acquire())
            await asyncio.sleep(0.01)
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):  # type: ignore[attr-defined]
                await t
            s.release()
            self.assertFalse(s.locked())  # type: ignore[attr-defined]
            await asyncio.wait_for(s.acquire(), 1)  # the one slot is free
            s.release()

        run(main())

    def test_cancelled_after_wake_up_gives_the_slot_on(self) -> None:
        async def main() -> None:
            s = self.make(1)
            await s.acquire()
            first = asyncio.ensure_future(s.acquire())
            second = asyncio.ensure_future(s.acquire())
            await asyncio.sleep(0.01)
            s.release()  # hands the slot to first...
            first.cancel()  # ...which is cancelled before it runs: second gets it
            await asyncio.sleep(0.01)
            self.assertTrue(second.done() and second.result())  # type: ignore[attr-defined]
            s.release()
            self.assertFalse(s.locked())  # type: ignore[attr-defined]

        run(main())


class TestBoundedSemaphore(SemaphoreContract, unittest.TestCase):
    make = staticmethod(asyncio.BoundedSemaphore)


def _metered(value: int = 1) -> cc.MeteredSemaphore:
    return cc.MeteredSemaphore(value, component="test", limit_name="contract")


class TestMeteredSemaphoreContract(SemaphoreContract, unittest.TestCase):
    make = staticmethod(_metered)


class TestMeteredSemaphoreContractWithoutTheFastPath(SemaphoreContract, unittest.TestCase):
    """The same, where asyncio's semaphore has other internals: every acquire calls the base."""

    make = staticmethod(_metered)

    def setUp(self) -> None:
        self.fast, cc._FAST = cc._FAST, False

    def tearDown(self) -> None:
        cc._FAST = self.fast


class TestMeteredSemaphore(unittest.TestCase):
    def test_the_fast_path_is_taken_here(self) -> None:
        self.assertTrue(cc._FAST, "CPython 3.10 to 3.13 keep _value and _waiters")

    def setUp(self) -> None:
        cc._reset_for_testing()

    tearDown = setUp

    def test_signature(self) -> None:
        self.assertEqual(
            str(inspect.signature(cc.MeteredSemaphore)),
            "(value: 'int' = 1, *, component: 'Any', limit_name: 'str', server_name: 'Optional[str]' = None, admission_timeout: 'Optional[float]' = None) -> 'None'",
        )
        with self.assertRaises(ValueError):
            cc.MeteredSemaphore(1, component="c", limit_name="l", admission_timeout=-1)

    def test_counts(self) -> None:
        async def main() -> None:
            s = cc.MeteredSemaphore(2, component="rollout_driver", limit_name="rollouts")
            self.assertEqual((s.limit, s.active, s.queue_depth), (2, 0, 0))
            await s.acquire()
            await s.acquire()
            waiters = [asyncio.ensure_future(s.acquire()) for _ in range(3)]
            await asyncio.sleep(0.01)
            self.assertEqual((s.active, s.queue_depth), (2, 3))
            s.release()
            await asyncio.sleep(0.01)
            self.assertEqual((s.active, s.queue_depth), (2, 2))
            for w in waiters[1:]:
                w.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
            self.assertEqual((s.active, s.queue_depth, s.admission_cancelled, s.admission_timeouts), (2, 0, 2, 0))
            s.release()
            s.release()
            self.assertEqual(s.active, 0)
            with self.assertRaises(ValueError):
                s.release()
            self.assertEqual(s.active, 0, "a refused release changes nothing")

        run(main())

    def test_admission_timeout(self) -> None:
        async def main() -> None:
            s = cc.MeteredSemaphore(1, component="model_server", limit_name="upstream_requests", server_name="policy", admission_timeout=0.02)
            async with s:
                with self.assertRaises(asyncio.TimeoutError):
                    await s.acquire()
                self.assertEqual((s.active, s.queue_depth, s.admission_timeouts, s.admission_cancelled), (1, 0, 1, 0))
                later = asyncio.ensure_future(s.acquire())
                await asyncio.sleep(0.005)
            self.assertTrue(await later)  # a slot freed within the timeout
            self.assertEqual((s.active, s.admission_timeouts), (1, 1))
            s.release()
            self.assertFalse(s.locked())

        run(main())

    def test_cancelled_while_waiting_with_a_timeout(self) -> None:
        async def main() -> None:
            s = cc.MeteredSemaphore(1, component="c", limit_name="l", admission_timeout=5)
            await s.acquire()
            t = asyncio.ensure_future(s.acquire())
            await asyncio.sleep(0.01)
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
            self.assertEqual((s.admission_cancelled, s.admission_timeouts, s.queue_depth), (1, 0, 0))
            s.release()
            self.assertFalse(s.locked())

        run(main())

    def test_the_snapshot_line(self) -> None:
        async def main() -> dict:
            a = cc.MeteredSemaphore(4, component="resources_server", limit_name="judge_requests", server_name="math")
            b = cc.MeteredSemaphore(2, component="resources_server", limit_name="judge_requests", server_name="math", admission_timeout=1)
            d = cc.MeteredSemaphore(8, component="rollout_driver", limit_name="rollouts")
            await a.acquire()
            await b.acquire()
            await b.acquire()
            w = asyncio.ensure_future(b.acquire())
            await asyncio.sleep(0.005)
            lines = cc._limits_lines()
            w.cancel()
            await asyncio.gather(w, return_exceptions=True)
            del a, b, d
            return lines

        lines = run(main())
        self.assertEqual(lines, {"concurrency.limits": (
            '{"event":"concurrency.limits","limits":['
            '{"component":"resources_server","limit_name":"judge_requests","server_name":"math","limit":6,"active":3,"queue_depth":1,"admission_timeouts":0,"admission_cancelled":0},'
            '{"component":"rollout_driver","limit_name":"rollouts","limit":8,"active":0,"queue_depth":0,"admission_cancelled":0}]}\n'
        )})

    def test_totals_outlive_the_semaphore(self) -> None:
        async def main() -> None:
            s = cc.MeteredSemaphore(1, component="c", limit_name="l", admission_timeout=0.01)
            await s.acquire()
            with self.assertRaises(asyncio.TimeoutError):
                await s.acquire()

        run(main())
        gc.collect()
        line = '{"event":"concurrency.limits","limits":[{"component":"c","limit_name":"l","limit":0,"active":0,"queue_depth":0,"admission_timeouts":1,"admission_cancelled":0}]}\n'
        self.assertEqual(cc._limits_lines(), {"concurrency.limits": line})
        self.assertEqual(len(cc._STATES), 1)
        self.assertEqual(cc._limits_lines(), {"concurrency.limits": line}, "the folded totals stay")
        again = cc.MeteredSemaphore(3, component="c", limit_name="l")
        self.assertIn('"limit":3,"active":0,"queue_depth":0,"admission_timeouts":1', cc._limits_lines()["concurrency.limits"])
        del again

    def test_a_semaphore_per_request_keeps_the_records_bounded(self) -> None:
        async def request() -> None:
            s = cc.MeteredSemaphore(1, component="c", limit_name="per_request", admission_timeout=1)
            async with s:
                pass

        async def main() -> None:
            for _ in range(cc._COMPACT_AT * 2 + 10):
                await request()

        run(main())
        self.assertLessEqual(len(cc._STATES), cc._COMPACT_AT)
        self.assertEqual(cc._limits_lines(), {"concurrency.limits": '{"event":"concurrency.limits","limits":[{"component":"c","limit_name":"per_request","limit":0,"active":0,"queue_depth":0,"admission_timeouts":0,"admission_cancelled":0}]}\n'})
        self.assertEqual(len(cc._STATES), 1)

    def test_not_registered_while_telemetry_is_off(self) -> None:
        e = cc._E
        on, e.on = e.on, False
        try:
            s = cc.MeteredSemaphore(2, component="c", limit_name="l")
        finally:
            e.on = on
        self.assertEqual(cc._STATES, [])
        self.assertEqual(cc._limits_lines(), {})

        async def main() -> None:
            async with s:  # it limits and counts all the same
                self.assertEqual(s.active, 1)

        run(main())

    def test_an_enumeration_component(self) -> None:
        import enum

        class Component(str, enum.Enum):
            MODEL_SERVER = "model_server"

        s = cc.MeteredSemaphore(1, component=Component.MODEL_SERVER, limit_name="upstream_requests")
        self.assertIn('"component":"model_server"', cc._limits_lines()["concurrency.limits"])
        del s

    def test_refusals(self) -> None:
        before = otelcol_gym.stats()["invalid"]
        keep = [
            cc.MeteredSemaphore(1, component="", limit_name="l"),
            cc.MeteredSemaphore(1, component="c", limit_name=None),  # type: ignore[arg-type]
            cc.MeteredSemaphore(1, component=3, limit_name="l"),
            cc.MeteredSemaphore(1, component="c", limit_name="l", server_name=""),
            cc.MeteredSemaphore(1, component="ok", limit_name="ok"),
        ]
        lines = cc._limits_lines()
        self.assertEqual(otelcol_gym.stats()["invalid"] - before, 4, "each entry the receiver would reject is left out and counted")
        self.assertEqual(lines["concurrency.limits"].count('"component"'), 1)
        with self.assertRaises(_lines.Invalid):
            cc._entry(("c", "l", None), [1, -1, 0, None, 0])
        with self.assertRaises(_lines.Invalid):
            cc._entry(("c", "l", None), [1.5, 0, 0, None, 0])
        del keep

    def test_no_limits_no_line(self) -> None:
        self.assertEqual(cc._limits_lines(), {})

    def test_long_snapshots_are_split(self) -> None:
        keep = [cc.MeteredSemaphore(1, component="c", limit_name="limit_%04d" % i, server_name="s" * 200) for i in range(400)]
        lines = cc._limits_lines()
        self.assertGreater(len(lines), 1)
        self.assertEqual(sorted(lines), sorted(["concurrency.limits"] + ["concurrency.limits/%d" % i for i in range(1, len(lines))]))
        self.assertTrue(all(len(l) <= _lines.MAX_LINE_BYTES for l in lines.values()))
        self.assertEqual(sum(l.count('"limit_name"') for l in lines.values()), 400)
        del keep

    def test_bounded_number_of_limits(self) -> None:
        keep = [cc.MeteredSemaphore(1, component="c", limit_name="l%d" % i) for i in range(cc.MAX_LIMITS)]
        with self.assertLogs("otelcol_gym.concurrency", "WARNING"):
            extra = cc.MeteredSemaphore(1, component="c", limit_name="one_more")
        self.assertEqual(len(cc._STATES), cc.MAX_LIMITS)
        self.assertNotIn('"one_more"', "".join(cc._limits_lines().values()))

        async def main() -> None:
            async with extra:  # it still limits
                self.assertTrue(extra.locked())

        run(main())
        del keep


class TestThroughTheListener(LineTest):
    def setUp(self) -> None:
        cc._reset_for_testing()
        super().setUp()

    def tearDown(self) -> None:
        super().tearDown()
        cc._reset_for_testing()

    def test_the_snapshot_is_sent(self) -> None:
        async def main() -> None:
            s = cc.MeteredSemaphore(2, component="agent_server", limit_name="runs", server_name="simple_agent")
            await s.acquire()
            got = self.sent("concurrency.limits")
            self.assertEqual(got[-1], {"event": "concurrency.limits", "limits": [
                {"component": "agent_server", "limit_name": "runs", "server_name": "simple_agent", "limit": 2, "active": 1, "queue_depth": 0, "admission_cancelled": 0},
            ]})
            s.release()

        run(main())


if __name__ == "__main__":
    unittest.main()
