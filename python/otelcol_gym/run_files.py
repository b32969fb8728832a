"""The constants of the instruments the collector reads from Gym's run files (not Gym's).

Gym writes its rollouts to run files (one JSON row per rollout) and has no instrument for
what the rows report; the collector's ``rollouts`` source reads them (``docs/receiver.md``).
This package sends none of these instruments. The names come from the schema, for code
that queries them.
"""

from __future__ import annotations

from . import _schema

ROLLOUT_TOKENS_INSTRUMENT = _schema.GYM_ROLLOUT_TOKENS.name
ROLLOUT_FINISH_INSTRUMENT = _schema.GYM_ROLLOUT_FINISH_TOTAL.name
ROLLOUT_TOOL_CALLS_INSTRUMENT = _schema.GYM_ROLLOUT_TOOL_CALLS.name

GEN_AI_TOKEN_TYPE_ATTRIBUTE = _schema.ATTR_GEN_AI_TOKEN_TYPE.key
GEN_AI_RESPONSE_MODEL_ATTRIBUTE = _schema.ATTR_GEN_AI_RESPONSE_MODEL.key
ROLLOUT_FINISH_REASON_ATTRIBUTE = _schema.ATTR_NEMO_GYM_ROLLOUT_FINISH_REASON.key

ROLLOUT_TOKENS_BOUNDARIES: tuple[float, ...] = _schema.BUCKETS_GENAI_TOKENS
ROLLOUT_TOOL_CALLS_BOUNDARIES: tuple[float, ...] = _schema.BUCKETS_ROLLOUT_COUNT
