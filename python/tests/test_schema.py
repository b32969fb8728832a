"""The emitter's copies of the schema agree with the collector's schema (metadata.yaml at the
top of the repository): bucket boundaries, enumerations the formatters enforce, and the
resource-line limits. Skipped when the package is tested outside its repository."""

from __future__ import annotations

import ast
import logging
import os
import re
import unittest

from otelcol_gym import _emitter
from otelcol_gym import gym_metrics as gm
from otelcol_gym import observer as ob

METADATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "metadata.yaml")


def schema() -> str:
    if not os.path.exists(METADATA):
        raise unittest.SkipTest("metadata.yaml is not beside the package")
    with open(METADATA, encoding="utf-8") as f:
        return f.read()


def flow_list(text: str, key: str) -> list:
    """The [a, b, ...] of the first line `key: [...]` (metadata.yaml's flow lists)."""
    m = re.search(r"^\s*%s:\s*\[([^\]]*)\]" % re.escape(key), text, re.M)
    assert m, key
    return [ast.literal_eval(v.strip()) if re.match(r"^-?[\d.e+]+$", v.strip()) else v.strip() for v in m.group(1).split(",")]


def attribute_values(text: str, attribute: str) -> frozenset:
    block = text[text.index("\n  %s:\n" % attribute):]
    return frozenset(flow_list(block, "values"))


class TestSchemaCopies(unittest.TestCase):
    def test_bucket_boundaries(self) -> None:
        text = schema()
        for name, got in {
            "LAG_MS": ob.EVENT_LOOP_LAG_BOUNDARIES_MS,
            "GC_PAUSE_MS": ob.GC_PAUSE_BOUNDARIES_MS,
            "DRIVER_MS": ob.DRIVER_DURATION_BOUNDARIES_MS,
            "WRITE_BYTES": ob.DRIVER_WRITE_BYTES_BOUNDARIES,
            "ROLLOUT_COUNT": ob.ROLLOUT_COUNT_BOUNDARIES,
            "SANDBOX_MS": gm.SANDBOX_DURATION_BOUNDARIES_MS,
            "STARTUP_MS": gm.SERVER_STARTUP_BOUNDARIES_MS,
            "POOL_MS": gm.HTTP_CONNECTION_POOL_QUEUE_DURATION_BOUNDARIES_MS,
        }.items():
            with self.subTest(name):
                self.assertEqual(tuple(float(b) for b in got), tuple(float(b) for b in flow_list(text, name)))

    def test_enumerations(self) -> None:
        text = schema()
        for attribute, got in {
            "nemo.gym.rollout.outcome": gm._ROLLOUT_OUTCOMES,
            "nemo.gym.health.verdict": gm._HEALTH_VERDICTS,
            "nemo.gym.http.connection_pool.queue_constraint": gm._QUEUE_CONSTRAINTS,
            "nemo.gym.http.connection_pool.queue_outcome": gm._QUEUE_OUTCOMES,
            "nemo.gym.http.connection_pool.connect_outcome": gm._CONNECT_OUTCOMES,
        }.items():
            with self.subTest(attribute):
                self.assertEqual(got, attribute_values(text, attribute))

    def test_resource_limits(self) -> None:
        text = schema()
        self.assertEqual(_emitter.RESOURCE_MAX_ATTRIBUTES, int(re.search(r"resource_max_attributes:\s*(\d+)", text).group(1)))
        self.assertEqual(_emitter.RESOURCE_MAX_KEY_BYTES, int(re.search(r"resource_max_key_bytes:\s*(\d+)", text).group(1)))

    def test_resource_over_the_limits(self) -> None:
        extra = {"attr.%02d" % i: "v" for i in range(40)}
        extra["k" * (_emitter.RESOURCE_MAX_KEY_BYTES + 1)] = "too long"
        with self.assertLogs("otelcol_gym", logging.WARNING) as logs:
            got = _emitter.build_resource(extra, "i0")
        self.assertEqual(len(got), _emitter.RESOURCE_MAX_ATTRIBUTES)
        self.assertEqual(got["process.pid"], os.getpid())  # kept: it comes first
        self.assertEqual(got["service.instance.id"], "i0")
        self.assertTrue(any("left out" in m for m in logs.output), logs.output)


if __name__ == "__main__":
    unittest.main()
