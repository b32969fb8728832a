"""Gym's model-call recorder (``gym_metrics.record_model_call``) and nemo-lens' instruments
(``lens``): the exact line of each, the values refused, and the lines through a real
Unix-socket listener."""

from __future__ import annotations

import inspect
import unittest

from otelcol_gym import _lines, lens
from otelcol_gym import gym_metrics as gm

from test_lines import LineTest


def call(**kw: object) -> tuple:
    """The queued tuple of record_model_call(**kw), every argument None unless given."""
    a = dict(server_name=None, dialect=None, latency_ms=None, ttft_ms=None, error_category=None, finish_reason=None, tokens_in=None, tokens_out=None, tokens_reasoning=None)
    a.update(kw)
    return (gm._MODEL_CALL, a["server_name"], a["dialect"], a["latency_ms"], a["ttft_ms"], a["error_category"], a["finish_reason"], a["tokens_in"], a["tokens_out"], a["tokens_reasoning"])


class TestModelCallLine(unittest.TestCase):
    def line(self, **kw: object) -> str:
        return gm._fmt_model_call(call(**kw))

    def test_streamed_call(self) -> None:
        self.assertEqual(
            self.line(server_name="policy_model", dialect="responses", latency_ms=1834.25, ttft_ms=212.5, finish_reason="completed", tokens_in=1200, tokens_out=310, tokens_reasoning=128),
            '{"event":"model_call","server_name":"policy_model","dialect":"responses","outcome":"ok","duration_ms":1834.25,"ttft_ms":212.5,'
            '"tokens":{"input":1200,"output":310,"reasoning":128},"finish_reason":"completed"}\n',
        )

    def test_not_streamed_no_ttft_and_only_the_reported_types(self) -> None:
        # A type the provider did not report records nothing; a reported 0 is recorded.
        self.assertEqual(
            self.line(server_name="judge", dialect="chat", latency_ms=950, tokens_in=80, tokens_out=0, finish_reason="stop"),
            '{"event":"model_call","server_name":"judge","dialect":"chat","outcome":"ok","duration_ms":950,"tokens":{"input":80,"output":0},"finish_reason":"stop"}\n',
        )

    def test_nothing_reported(self) -> None:
        self.assertEqual(self.line(server_name="m", dialect="messages"), '{"event":"model_call","server_name":"m","dialect":"messages","outcome":"ok"}\n')

    def test_failed_call_records_no_tokens_and_no_finish_reason(self) -> None:
        self.assertEqual(
            self.line(server_name="policy_model", dialect="chat", latency_ms=30000.0, error_category="timeout", finish_reason="length", tokens_in=5, tokens_out=1),
            '{"event":"model_call","server_name":"policy_model","dialect":"chat","outcome":"timeout","duration_ms":30000.0}\n',
        )

    def test_unknown_server_and_dialect(self) -> None:
        # Gym's recorder applies the default: a call that names no server is "unknown".
        for sn, d in ((None, None), ("", "")):
            with self.subTest(server_name=sn):
                self.assertEqual(self.line(server_name=sn, dialect=d, latency_ms=1.5), '{"event":"model_call","server_name":"unknown","dialect":"unknown","outcome":"ok","duration_ms":1.5}\n')

    def test_empty_finish_reason_is_not_reported(self) -> None:
        self.assertEqual(self.line(server_name="m", dialect="chat", finish_reason=""), '{"event":"model_call","server_name":"m","dialect":"chat","outcome":"ok"}\n')

    def test_refusals(self) -> None:
        for kw in (
            dict(latency_ms=-1.0),
            dict(latency_ms=float("nan")),
            dict(latency_ms=float("inf")),
            dict(latency_ms="12"),
            dict(latency_ms=True),
            dict(ttft_ms=-0.5),
            dict(tokens_in=-1),
            dict(tokens_out=1.5),
            dict(tokens_reasoning=True),
            dict(tokens_in=1 << 63),
            dict(tokens_in="3"),
            dict(server_name=7),
            dict(dialect=["chat"]),
            dict(error_category=3),
            dict(finish_reason=1),
        ):
            with self.subTest(**{k: repr(v) for k, v in kw.items()}):
                with self.assertRaises((_lines.Invalid, TypeError, ValueError, AttributeError)):
                    self.line(server_name="m", dialect="chat", **kw)

    def test_integral_float_tokens_are_integers(self) -> None:
        self.assertIn('"tokens":{"input":3}', self.line(server_name="m", dialect="chat", tokens_in=3.0))


class TestLensLines(unittest.TestCase):
    def test_lines(self) -> None:
        self.assertEqual(lens._fmt_rollout_duration((lens._ROLLOUT_DURATION, 95000.5)), '{"event":"rollout.duration","duration_ms":95000.5}\n')
        self.assertEqual(lens._fmt_verify((lens._VERIFY, 412, True)), '{"event":"verify","duration_ms":412,"completed":true}\n')
        self.assertEqual(lens._fmt_verify((lens._VERIFY, None, False)), '{"event":"verify","completed":false}\n')
        self.assertEqual(lens._fmt_servers_active((lens._SERVERS_ACTIVE, 5)), '{"event":"servers.active","count":5}\n')

    def test_refusals(self) -> None:
        for fmt, it in (
            (lens._fmt_rollout_duration, (0, -1)),
            (lens._fmt_rollout_duration, (0, float("nan"))),
            (lens._fmt_rollout_duration, (0, None)),
            (lens._fmt_verify, (0, -3.0, True)),
            (lens._fmt_verify, (0, "3", True)),
            (lens._fmt_servers_active, (0, -1)),
            (lens._fmt_servers_active, (0, 2.5)),
            (lens._fmt_servers_active, (0, True)),
        ):
            with self.subTest(fmt=fmt.__name__, it=it):
                with self.assertRaises((_lines.Invalid, TypeError, ValueError, AttributeError)):
                    fmt(it)


class TestThroughTheListener(LineTest):
    def test_model_calls(self) -> None:
        gm.record_model_call(server_name="policy_model", dialect="chat", latency_ms=812.5, ttft_ms=90.25, error_category=None, finish_reason="tool_calls", tokens_in=900, tokens_out=45, tokens_reasoning=None)
        gm.record_model_call(server_name=None, dialect="responses", latency_ms=None, ttft_ms=None, error_category="connection_error", finish_reason=None, tokens_in=None, tokens_out=None, tokens_reasoning=None)
        gm.record_model_call(server_name="m", dialect="chat", latency_ms=-5.0, ttft_ms=None, error_category=None, finish_reason=None, tokens_in=None, tokens_out=None, tokens_reasoning=None)
        got = self.sent("model_call")
        self.assertEqual(got, [
            {"event": "model_call", "server_name": "policy_model", "dialect": "chat", "outcome": "ok", "duration_ms": 812.5, "ttft_ms": 90.25, "tokens": {"input": 900, "output": 45}, "finish_reason": "tool_calls"},
            {"event": "model_call", "server_name": "unknown", "dialect": "responses", "outcome": "connection_error"},
        ])

    def test_lens(self) -> None:
        lens.record_rollout_duration(1500.0)
        lens.record_verify(20.5, True)
        lens.record_verify(None, False)
        lens.set_servers_active(3)
        lens.set_servers_active(2)
        self.assertEqual(self.one("rollout.duration"), {"event": "rollout.duration", "duration_ms": 1500.0})
        self.assertEqual(self.sent("verify"), [{"event": "verify", "duration_ms": 20.5, "completed": True}, {"event": "verify", "completed": False}])
        self.assertEqual([e["count"] for e in self.sent("servers.active")], [3, 2])


class TestSignatures(unittest.TestCase):
    def test_gyms_signature(self) -> None:
        self.assertEqual(
            str(inspect.signature(gm.record_model_call)),
            "(*, server_name: 'Optional[str]', dialect: 'Optional[str]', latency_ms: 'Optional[float]', ttft_ms: 'Optional[float]', error_category: 'Optional[str]', "
            "finish_reason: 'Optional[str]', tokens_in: 'Optional[int]', tokens_out: 'Optional[int]', tokens_reasoning: 'Optional[int]') -> 'None'",
        )
        self.assertEqual(gm.MODEL_CALL_OUTCOME_OK, "ok")
        self.assertEqual(gm.MODEL_CALL_SERVER_NAME_ATTRIBUTE, gm.SERVER_NAME_ATTRIBUTE)
        self.assertTrue(gm.metrics_exporting())

    def test_lens_signatures(self) -> None:
        self.assertEqual(str(inspect.signature(lens.record_rollout_duration)), "(duration_ms: 'float') -> 'None'")
        self.assertEqual(str(inspect.signature(lens.record_verify)), "(duration_ms: 'Optional[float]', completed: 'bool' = True) -> 'None'")
        self.assertEqual(str(inspect.signature(lens.set_servers_active)), "(count: 'int') -> 'None'")


if __name__ == "__main__":
    unittest.main()
