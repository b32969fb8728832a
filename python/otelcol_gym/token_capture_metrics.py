"""The constants of Gym's training-token capture instruments (``nemo_gym.telemetry.token_capture_metrics``).

Token capture runs on every captured model call. Gym records it with the OpenTelemetry SDK
itself (it caps each synchronous instrument at ``MAX_ATTRIBUTE_SETS`` attribute sets, with
the values ``other`` past it), so these instruments reach the collector by OTLP only: this
package sends none of them and has no recorder for them. It keeps Gym's names, bucket
boundaries and size classes, read from the schema, for code that refers to them.
"""

from __future__ import annotations

from . import _schema

__all__ = ["size_class"]

OPERATION_DURATION_INSTRUMENT = _schema.GYM_TOKEN_CAPTURE_OPERATION_DURATION_MS.name
OPERATION_TOKENS_INSTRUMENT = _schema.GYM_TOKEN_CAPTURE_OPERATION_TOKENS_TOTAL.name
OUTCOME_INSTRUMENT = _schema.GYM_TOKEN_CAPTURE_OUTCOME_TOTAL.name
DIGEST_CALLS_INSTRUMENT = _schema.GYM_TOKEN_CAPTURE_DIGEST_CALLS_TOTAL.name
DIGEST_BYTES_INSTRUMENT = _schema.GYM_TOKEN_CAPTURE_DIGEST_BYTES_TOTAL.name
CACHE_SIZE_INSTRUMENT = _schema.GYM_TOKEN_CAPTURE_CACHE_SIZE.name

OPERATION_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_OPERATION.key
IMPLEMENTATION_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_IMPLEMENTATION.key
SIZE_CLASS_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_SIZE_CLASS.key
ERROR_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_ERROR.key
OUTCOME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_OUTCOME.key
REASON_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_REASON.key
DIGEST_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_DIGEST.key
CACHE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_CACHE.key

OPERATION_DURATION_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_TOKEN_CAPTURE_MS

# Gym's token-count classes of the duration histogram: (exclusive upper bound, label), then the
# largest class, then Gym's overflow value. The labels are the schema's values of
# nemo.gym.token_capture.size_class.
_LT_4K, _LT_32K, _LT_128K, _GE_128K, _OVERFLOW = _schema.ATTR_NEMO_GYM_TOKEN_CAPTURE_SIZE_CLASS.values
SIZE_CLASSES: tuple[tuple[int, str], ...] = ((4_096, _LT_4K), (32_768, _LT_32K), (131_072, _LT_128K))
LARGEST_SIZE_CLASS = _GE_128K

# Gym's own cap of distinct attribute sets per synchronous instrument, and the value past it.
MAX_ATTRIBUTE_SETS = 512
OVERFLOW_LABEL = _OVERFLOW


def size_class(tokens: int) -> str:
    """The size class of a record of ``tokens`` tokens, as Gym computes it."""
    for bound, label in SIZE_CLASSES:
        if tokens < bound:
            return label
    return LARGEST_SIZE_CLASS
