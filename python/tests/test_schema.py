"""The emitter's schema constants come from ``otelcol_gym._schema``, which cmd/schemagen
generates from metadata.yaml at the top of the repository (``make generate``; a Go test in
internal/schemagen fails when the committed module is stale). These tests pin how Gym's
constants and the checks of the formatters map onto it."""

from __future__ import annotations

import logging
import os
import unittest

from otelcol_gym import _lines, _schema, _settings, concurrency, lens, memory, otlp_only, run_files
from otelcol_gym import gym_metrics as gm
from otelcol_gym import observer as ob
from otelcol_gym import token_capture_metrics as tcm

# Every module that holds instrument and attribute constants: Gym's five, and the package's
# own three for what Gym has no module for (nemo-lens' instruments, the run files', the
# instruments Gym's code records with the SDK only).
MODULES = (gm, ob, concurrency, memory, tcm, lens, run_files, otlp_only)

# Gym defines these constants twice, under two names; every other attribute has one constant.
ALIASES = {frozenset({"otelcol_gym.gym_metrics.SERVER_NAME_ATTRIBUTE", "otelcol_gym.gym_metrics.MODEL_CALL_SERVER_NAME_ATTRIBUTE"})}


# The instruments the emitter never sends: the collector makes them (gymattrs'
# genai_conventions derives them; the gymrollouts connector makes them from Gym's spans; the gym
# receiver exports the user's price table), and the attributes only they carry.
COLLECTORS = ("derived", "spans", "prices")
EMITTED = {k: i for k, i in _schema.INSTRUMENTS.items() if i.source not in COLLECTORS}
DERIVED_ONLY = {a.key for i in _schema.INSTRUMENTS.values() if i.source in COLLECTORS for a in i.attributes} - {a.key for i in EMITTED.values() for a in i.attributes}
EMITTED_ATTRIBUTES = sorted(set(_schema.ATTRIBUTES) - DERIVED_ONLY)


def constants(suffix: str) -> dict[str, str]:
    """The constants of every module whose name ends with suffix, by name."""
    out = {}
    for m in MODULES:
        for k, v in vars(m).items():
            if k.endswith(suffix) and k.isupper():
                out["%s.%s" % (m.__name__, k)] = v
    return out


class TestGymConstants(unittest.TestCase):
    def test_every_instrument_has_its_constant(self) -> None:
        got = constants("_INSTRUMENT")
        self.assertEqual(sorted(got.values()), sorted(EMITTED), "one *_INSTRUMENT constant per instrument of the schema the emitter sends")
        self.assertEqual(len(EMITTED), len(_schema.INSTRUMENTS) - 8, "the three GenAI instruments, the four of rollouts in flight and the prices are the collector's")

    def test_every_attribute_has_its_constant(self) -> None:
        got = constants("_ATTRIBUTE")
        self.assertEqual(sorted(set(got.values())), EMITTED_ATTRIBUTES, "an *_ATTRIBUTE constant per attribute the emitter sends, and no other")
        by_value: dict[str, set[str]] = {}
        for k, v in got.items():
            by_value.setdefault(v, set()).add(k)
        shared = {frozenset(names) for names in by_value.values() if len(names) > 1}
        self.assertEqual(shared, ALIASES, "one constant per attribute, except Gym's own aliases")

    def test_bucket_boundaries_are_the_instruments_own(self) -> None:
        covered: set[str] = set()
        for got, instruments in [
            (ob.EVENT_LOOP_LAG_BOUNDARIES_MS, [_schema.GYM_EVENT_LOOP_LAG_MS]),
            (ob.GC_PAUSE_BOUNDARIES_MS, [_schema.GYM_GC_PAUSE_DURATION_MS]),
            (ob.DRIVER_DURATION_BOUNDARIES_MS, [_schema.GYM_DRIVER_ADMISSION_DURATION_MS, _schema.GYM_DRIVER_OUTPUT_WRITE_DURATION_MS, _schema.GYM_DRIVER_MATERIALIZE_DURATION_MS]),
            (ob.DRIVER_WRITE_BYTES_BOUNDARIES, [_schema.GYM_DRIVER_OUTPUT_WRITE_BYTES]),
            (ob.ROLLOUT_COUNT_BOUNDARIES, [_schema.GYM_DRIVER_ROLLOUT_INPUT_ITEMS, _schema.GYM_DRIVER_ROLLOUT_OUTPUT_ITEMS, _schema.GYM_DRIVER_ROLLOUT_TURNS, _schema.GYM_DRIVER_ROLLOUT_TOOL_CALLS]),
            (gm.SANDBOX_DURATION_BOUNDARIES_MS, [_schema.GYM_SANDBOX_STARTUP_DURATION_MS, _schema.GYM_SANDBOX_EXEC_DURATION_MS]),
            (gm.SERVER_STARTUP_BOUNDARIES_MS, [_schema.GYM_SERVER_STARTUP_STAGE_DURATION_MS, _schema.GYM_SERVER_STARTUP_DURATION_MS]),
            (gm.HTTP_CONNECTION_POOL_QUEUE_DURATION_BOUNDARIES_MS, [_schema.GYM_HTTP_CONNECTION_POOL_QUEUE_DURATION_MS, _schema.GYM_HTTP_CONNECTION_POOL_CONNECT_DURATION_MS]),
            (gm.MODEL_CALL_DURATION_BOUNDARIES_MS, [_schema.GYM_MODEL_CALL_DURATION_MS]),
            (gm.MODEL_CALL_TTFT_BOUNDARIES_MS, [_schema.GYM_MODEL_CALL_TTFT_MS]),
            (gm.MODEL_CALL_TOKEN_BOUNDARIES, [_schema.GYM_MODEL_CALL_TOKENS]),
            (lens.LENS_DURATION_BOUNDARIES_MS, [_schema.GYM_ROLLOUT_DURATION_MS, _schema.GYM_VERIFY_DURATION_MS]),
            (tcm.OPERATION_DURATION_BOUNDARIES_MS, [_schema.GYM_TOKEN_CAPTURE_OPERATION_DURATION_MS]),
            (run_files.ROLLOUT_TOKENS_BOUNDARIES, [_schema.GYM_ROLLOUT_TOKENS]),
            (run_files.ROLLOUT_TOOL_CALLS_BOUNDARIES, [_schema.GYM_ROLLOUT_TOOL_CALLS]),
            (run_files.EVIDENCE_MODEL_CALL_DURATION_BOUNDARIES_MS, [_schema.GYM_EVIDENCE_MODEL_CALL_DURATION_MS]),
            (run_files.EVIDENCE_MODEL_CALL_TTFT_BOUNDARIES_MS, [_schema.GYM_EVIDENCE_MODEL_CALL_TTFT_MS]),
            (run_files.EVIDENCE_MODEL_CALL_TOKEN_BOUNDARIES, [_schema.GYM_EVIDENCE_MODEL_CALL_TOKENS]),
            (run_files.EVIDENCE_TOOL_CALL_BOUNDARIES_MS, [_schema.GYM_EVIDENCE_TOOL_CALL_DURATION_MS]),
            (run_files.EVIDENCE_SANDBOX_TIME_BOUNDARIES_S, [_schema.GYM_EVIDENCE_SANDBOX_WALL_TIME_S, _schema.GYM_EVIDENCE_SANDBOX_CPU_TIME_S]),
            (run_files.EVIDENCE_SANDBOX_MEMORY_BOUNDARIES_MIB, [_schema.GYM_EVIDENCE_SANDBOX_PEAK_MEMORY_MIB]),
            (run_files.ROLLOUT_TOKENS_BOUNDARIES, [_schema.GYM_EVIDENCE_COMPACTION_TOKENS]),
            (
                otlp_only.SDK_DEFAULT_BOUNDARIES,
                [
                    _schema.GYM_CONCURRENCY_QUEUE_WAIT_DURATION_MS, _schema.GYM_MODEL_ROUTE_CALL_DURATION_MS, _schema.GYM_MODEL_TIME_TO_FIRST_BYTE_MS,
                    _schema.GYM_AGENT_TURN_COUNT, _schema.GYM_AGENT_TURN_DURATION_MS, _schema.GYM_TOOL_CALL_DURATION_MS, _schema.GYM_TOOL_CALL_CPU_PERCENT,
                    _schema.GYM_TOOL_CALL_MEMORY_USED_MIB, _schema.GYM_SERVER_REQUEST_DURATION_MS, _schema.HTTP_SERVER_DURATION, _schema.HTTP_CLIENT_DURATION,
                ],
            ),
            (otlp_only.HTTP_DURATION_BOUNDARIES_S, [_schema.HTTP_SERVER_REQUEST_DURATION, _schema.HTTP_CLIENT_REQUEST_DURATION]),
        ]:
            for inst in instruments:
                with self.subTest(inst.name):
                    self.assertEqual(got, inst.bounds)
                    covered.add(inst.name)
        histograms = {i.name for i in EMITTED.values() if i.kind == "histogram"}
        self.assertEqual(len(histograms), 45, "every histogram of the schema is in the table above")
        self.assertEqual(covered, histograms, "every histogram of the schema is in the table above")

    def test_token_capture_size_classes(self) -> None:
        self.assertEqual(tuple(label for _, label in tcm.SIZE_CLASSES) + (tcm.LARGEST_SIZE_CLASS, tcm.OVERFLOW_LABEL), _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_SIZE_CLASS.values)
        self.assertEqual(tcm.OVERFLOW_LABEL, "other", "Gym's own value past its cap, kept by the schema")
        self.assertIn(tcm.OVERFLOW_LABEL, _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_ERROR.values)
        self.assertEqual([tcm.size_class(n) for n in (0, 4095, 4096, 32767, 32768, 131071, 131072)], ["lt_4k", "lt_4k", "lt_32k", "lt_32k", "lt_128k", "lt_128k", "ge_128k"])

    def test_unregistered_failure_kind(self) -> None:
        self.assertEqual(gm.UNREGISTERED_FAILURE_KIND, _schema.ATTRIBUTES[gm.FAILURE_KIND_ATTRIBUTE].fallback)


class TestEnumerations(unittest.TestCase):
    """The formatters take every value the receiver takes, and refuse the others."""

    def check(self, fmt, make, allowed, refused) -> None:
        for v in allowed:
            with self.subTest(value=v):
                self.assertTrue(fmt(make(v)).endswith("}\n"))
        for v in refused:
            with self.subTest(value=v):
                with self.assertRaises(_lines.Invalid):
                    fmt(make(v))

    def test_rollout_outcome(self) -> None:
        values = _schema.ATTR_NEMO_GYM_ROLLOUT_OUTCOME.values
        self.assertEqual(_schema.GYM_ROLLOUT_COMPLETED_TOTAL.attribute_values(gm.ROLLOUT_OUTCOME_ATTRIBUTE), values)
        self.check(gm._fmt_completed, lambda v: (gm._COMPLETED, v, "math", None, None, None), values, ["done", ""])

    def test_health(self) -> None:
        outcomes = _schema.GYM_ROLLOUT_HEALTH_VERDICT_TOTAL.attribute_values(gm.ROLLOUT_OUTCOME_ATTRIBUTE)
        self.assertEqual(outcomes, _schema.GYM_ROLLOUT_HEALTH_FLAGGED_TOTAL.attribute_values(gm.ROLLOUT_OUTCOME_ATTRIBUTE))
        narrowed_out = set(_schema.ATTR_NEMO_GYM_ROLLOUT_OUTCOME.values) - set(outcomes)
        self.assertTrue(narrowed_out, "the health instruments narrow the outcomes")
        self.check(gm._fmt_health, lambda v: (gm._HEALTH, "healthy", v, ()), outcomes, sorted(narrowed_out))
        self.check(gm._fmt_health, lambda v: (gm._HEALTH, v, "scored", ()), _schema.ATTR_NEMO_GYM_HEALTH_VERDICT.values, ["fine"])

    def test_connection_pool(self) -> None:
        self.check(gm._fmt_queue, lambda v: (gm._QUEUE, 1.0, v, "ok", "m"), _schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_QUEUE_CONSTRAINT.values, ["global"])
        self.check(gm._fmt_queue, lambda v: (gm._QUEUE, 1.0, "total", v, "m"), _schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_QUEUE_OUTCOME.values, ["failed"])
        self.check(
            gm._fmt_connect,
            lambda v: (gm._CONNECT, 1.0, v, "m"),
            _schema.GYM_HTTP_CONNECTION_POOL_CONNECT_DURATION_MS.attribute_values(gm.HTTP_CONNECTION_POOL_CONNECT_OUTCOME_ATTRIBUTE),
            ["abandoned"],
        )

    def test_gc_generation(self) -> None:
        generations = _schema.ATTR_NEMO_GYM_GC_GENERATION.int_values
        self.check(ob._fmt_gc_pause, lambda v: (ob._GC_PAUSE, 1.0, v), generations, [max(generations) + 1, -1, True, "0"])

    def test_request_phase_and_status_codes(self) -> None:
        before, during = _schema.ATTR_NEMO_GYM_REQUEST_PHASE.values
        sc = _schema.ATTR_HTTP_RESPONSE_STATUS_CODE
        state = ob._ProcessObserver()
        rc = state.requests
        for code in (sc.min - 1, sc.min, sc.max, sc.max + 1):
            rc.count_response(code)
        rc.count_cancellation("/run", False)
        rc.count_cancellation("/run", True)
        rc.count_cancellation("/run", True)
        self.assertEqual(rc.cancelled_by_route_and_phase, {("/run", before): 1, ("/run", during): 2})
        invalid = ob._E.stats()["invalid"]
        line = ob._readings(state)["server.requests"]
        self.assertIn('"responses":{"%d":1,"%d":1}' % (sc.min, sc.max), line)
        self.assertEqual(ob._E.stats()["invalid"] - invalid, 2, "the codes outside the schema's range are left out and counted")
        self.assertIn('{"route":"/run","response_started":false,"count":1}', line)
        self.assertIn('{"route":"/run","response_started":true,"count":2}', line)


class TestResourceLimits(unittest.TestCase):
    def test_the_schemas_limits(self) -> None:
        self.assertEqual(_settings.RESOURCE_MAX_ATTRIBUTES, _schema.RESOURCE_MAX_ATTRIBUTES)
        self.assertEqual(_settings.RESOURCE_MAX_KEY_BYTES, _schema.RESOURCE_MAX_KEY_BYTES)

    def test_resource_over_the_limits(self) -> None:
        extra = {"attr.%02d" % i: "v" for i in range(_schema.RESOURCE_MAX_ATTRIBUTES + 8)}
        extra["k" * (_schema.RESOURCE_MAX_KEY_BYTES + 1)] = "too long"
        extra["k" * _schema.RESOURCE_MAX_KEY_BYTES] = "at the limit"
        with self.assertLogs("otelcol_gym", logging.WARNING) as logs:
            got = _settings.build_resource(extra, "i0")
        self.assertEqual(len(got), _schema.RESOURCE_MAX_ATTRIBUTES)
        self.assertEqual(got["process.pid"], os.getpid())  # kept: it comes first
        self.assertEqual(got["service.instance.id"], "i0")
        self.assertTrue(any("left out" in m for m in logs.output), logs.output)
        with self.assertLogs("otelcol_gym", logging.WARNING):
            few = _settings.build_resource({"k" * _schema.RESOURCE_MAX_KEY_BYTES: "at the limit", "k" * (_schema.RESOURCE_MAX_KEY_BYTES + 1): "too long"}, "i0")
        self.assertIn("k" * _schema.RESOURCE_MAX_KEY_BYTES, few)
        self.assertNotIn("k" * (_schema.RESOURCE_MAX_KEY_BYTES + 1), few)


if __name__ == "__main__":
    unittest.main()
