"""Gym's attributed recorders (``nemo_gym.telemetry.gym_metrics``), as events-v1 lines.

Same names, parameters, defaults and constants as Gym's module, so a call site changes only
its import. Each call appends one small tuple to the emitter's bounded queue and returns; the
emitter's thread validates and formats it (a value the receiver would reject is not sent, and
is counted in ``otelcol_gym.stats()["invalid"]``) and sends it; the collector aggregates. No
recorder raises, blocks or does I/O on the caller's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Optional

from . import _schema
from ._lines import CACHE, CACHE_TYPED, boolean, duration, enc, integer, name, number, one_of, register_kind
from ._sender import EMITTER as _E

__all__ = [
    "metrics_exporting",
    "record_http_connection_pool_connect_duration",
    "record_http_connection_pool_queue_duration",
    "record_model_call",
    "record_rollout_completed",
    "record_rollout_health",
    "record_rollout_reward",
    "record_sandbox_active",
    "record_sandbox_create_retry",
    "record_sandbox_exec_duration",
    "record_sandbox_startup",
    "record_server_startup_stage",
    "register_http_connection_pool_connect_counter",
]

logger = logging.getLogger(__name__)

# ---- the constants of Gym's module, from the schema (metadata.yaml, through _schema) ----

DISPATCH_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_ROLLOUT_DISPATCH_NAME.key
FAILURE_CLASS_ATTRIBUTE = _schema.ATTR_NEMO_GYM_FAILURE_CLASS.key
FAILURE_KIND_ATTRIBUTE = _schema.ATTR_NEMO_GYM_FAILURE_KIND.key
FAILURE_TYPE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_FAILURE_TYPE.key
HEALTH_CHECK_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HEALTH_CHECK.key
HEALTH_VERDICT_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HEALTH_VERDICT.key
HTTP_CONNECTION_POOL_CONNECT_DURATION_INSTRUMENT = _schema.GYM_HTTP_CONNECTION_POOL_CONNECT_DURATION_MS.name
HTTP_CONNECTION_POOL_CONNECT_INSTRUMENT = _schema.GYM_HTTP_CONNECTION_POOL_CONNECT_TOTAL.name
HTTP_CONNECTION_POOL_CONNECT_OUTCOME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_CONNECT_OUTCOME.key
HTTP_CONNECTION_POOL_QUEUE_CONSTRAINT_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_QUEUE_CONSTRAINT.key
HTTP_CONNECTION_POOL_QUEUE_DURATION_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_POOL_MS
HTTP_CONNECTION_POOL_QUEUE_DURATION_INSTRUMENT = _schema.GYM_HTTP_CONNECTION_POOL_QUEUE_DURATION_MS.name
HTTP_CONNECTION_POOL_QUEUE_OUTCOME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_QUEUE_OUTCOME.key
HTTP_DESTINATION_SERVER_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HTTP_DESTINATION_SERVER_NAME.key
MODEL_CALL_DIALECT_ATTRIBUTE = _schema.ATTR_NEMO_GYM_MODEL_CALL_DIALECT.key
MODEL_CALL_DURATION_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_MODEL_CALL_MS
MODEL_CALL_DURATION_INSTRUMENT = _schema.GYM_MODEL_CALL_DURATION_MS.name
MODEL_CALL_FINISH_INSTRUMENT = _schema.GYM_MODEL_CALL_FINISH_TOTAL.name
MODEL_CALL_FINISH_REASON_ATTRIBUTE = _schema.ATTR_NEMO_GYM_MODEL_CALL_FINISH_REASON.key
MODEL_CALL_OUTCOME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_MODEL_CALL_OUTCOME.key
MODEL_CALL_OUTCOME_OK = "ok"
# Gym's alias of SERVER_NAME_ATTRIBUTE: the model server's span attribute, so that span- and
# metric-derived series share the label.
MODEL_CALL_SERVER_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_SERVER_NAME.key
MODEL_CALL_TOKEN_BOUNDARIES: tuple[float, ...] = _schema.BUCKETS_MODEL_TOKENS
MODEL_CALL_TOKEN_TYPE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_MODEL_CALL_TOKEN_TYPE.key
MODEL_CALL_TOKENS_INSTRUMENT = _schema.GYM_MODEL_CALL_TOKENS.name
MODEL_CALL_TTFT_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_MODEL_TTFT_MS
MODEL_CALL_TTFT_INSTRUMENT = _schema.GYM_MODEL_CALL_TTFT_MS.name
REWARD_RANGE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_ROLLOUT_REWARD_RANGE.key
ROLLOUT_COMPLETED_INSTRUMENT = _schema.GYM_ROLLOUT_COMPLETED_TOTAL.name
ROLLOUT_HEALTH_FLAGGED_INSTRUMENT = _schema.GYM_ROLLOUT_HEALTH_FLAGGED_TOTAL.name
ROLLOUT_HEALTH_VERDICT_INSTRUMENT = _schema.GYM_ROLLOUT_HEALTH_VERDICT_TOTAL.name
ROLLOUT_MASKED_ATTRIBUTE = _schema.ATTR_NEMO_GYM_ROLLOUT_MASKED.key
ROLLOUT_OUTCOME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_ROLLOUT_OUTCOME.key
ROLLOUT_REWARDED_INSTRUMENT = _schema.GYM_ROLLOUT_REWARDED_TOTAL.name
SANDBOX_ACTIVE_INSTRUMENT = _schema.GYM_SANDBOX_ACTIVE.name
SANDBOX_CREATE_RETRY_INSTRUMENT = _schema.GYM_SANDBOX_CREATE_RETRY_TOTAL.name
SANDBOX_DURATION_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_SANDBOX_MS
SANDBOX_EXEC_INSTRUMENT = _schema.GYM_SANDBOX_EXEC_DURATION_MS.name
SANDBOX_PROVIDER_ATTRIBUTE = _schema.ATTR_NEMO_GYM_SANDBOX_PROVIDER.key
SANDBOX_STARTUP_INSTRUMENT = _schema.GYM_SANDBOX_STARTUP_DURATION_MS.name
SERVER_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_SERVER_NAME.key
SERVER_STARTUP_BOUNDARIES_MS: tuple[float, ...] = _schema.BUCKETS_STARTUP_MS
# Recorded by Gym's supervisor with the SDK (OTLP only): no recorder here.
SERVER_STARTUP_INSTRUMENT = _schema.GYM_SERVER_STARTUP_DURATION_MS.name
SERVER_STARTUP_STAGE_INSTRUMENT = _schema.GYM_SERVER_STARTUP_STAGE_DURATION_MS.name
SERVER_TYPE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_SERVER_TYPE.key
STARTUP_STAGE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_STARTUP_STAGE.key
UNREGISTERED_FAILURE_KIND = _schema.ATTR_NEMO_GYM_FAILURE_KIND.fallback
WORKER_ATTRIBUTE = _schema.ATTR_NEMO_GYM_SERVER_WORKER.key

# The enumerations the receiver enforces (a line outside them would be rejected there), taken
# as the receiver takes them: an instrument's values where it narrows an attribute's.
_ROLLOUT_OUTCOMES = frozenset(_schema.GYM_ROLLOUT_COMPLETED_TOTAL.attribute_values(ROLLOUT_OUTCOME_ATTRIBUTE))
_HEALTH_OUTCOMES = frozenset(_schema.GYM_ROLLOUT_HEALTH_VERDICT_TOTAL.attribute_values(ROLLOUT_OUTCOME_ATTRIBUTE))
_HEALTH_VERDICTS = frozenset(_schema.ATTR_NEMO_GYM_HEALTH_VERDICT.values)
_QUEUE_CONSTRAINTS = frozenset(_schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_QUEUE_CONSTRAINT.values)
_QUEUE_OUTCOMES = frozenset(_schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_QUEUE_OUTCOME.values)
_UNKNOWN = "unknown"  # a model call's server name or dialect when it names none (Gym's)
_CONNECT_OUTCOMES = frozenset(_schema.GYM_HTTP_CONNECTION_POOL_CONNECT_DURATION_MS.attribute_values(HTTP_CONNECTION_POOL_CONNECT_OUTCOME_ATTRIBUTE))


# ---- formatters (the emitter's thread): one queued tuple -> one events-v1 line ----


def _opt(key: str, v: Any) -> str:
    return "" if v is None else ',"%s":%s' % (key, enc(v))


def _fmt_completed(it: tuple) -> str:
    _, outcome, dispatch_name, failure_class, failure_kind, failure_type = it
    return '{"event":"rollout.completed","outcome":%s,"dispatch_name":%s%s%s%s}\n' % (
        one_of(outcome, _ROLLOUT_OUTCOMES),
        name(dispatch_name),
        _opt("failure_class", failure_class),
        _opt("failure_kind", failure_kind),
        _opt("failure_type", failure_type),
    )


def _fmt_reward(it: tuple) -> str:
    return '{"event":"rollout.reward","reward":%s,"dispatch_name":%s,"masked":%s}\n' % (number(it[1]), name(it[2]), boolean(it[3]))


def _fmt_health(it: tuple) -> str:
    _, verdict, outcome, checks = it
    return '{"event":"rollout.health","verdict":%s,"outcome":%s,"flagged_checks":[%s]}\n' % (
        one_of(verdict, _HEALTH_VERDICTS),
        one_of(outcome, _HEALTH_OUTCOMES),
        ",".join([enc(c) for c in checks]),
    )


def _fmt_active(it: tuple) -> str:
    return '{"event":"sandbox.active","provider":%s,"delta":%s}\n' % (name(it[2]), integer(it[1], nonneg=False))


def _fmt_startup(it: tuple) -> str:
    return '{"event":"sandbox.startup","provider":%s,"duration_ms":%s}\n' % (name(it[2]), duration(it[1]))


def _fmt_exec(it: tuple) -> str:
    return '{"event":"sandbox.exec","provider":%s,"duration_ms":%s}\n' % (name(it[2]), duration(it[1]))


def _fmt_retry(it: tuple) -> str:
    return '{"event":"sandbox.create_retry","provider":%s}\n' % name(it[1])


def _fmt_stage(it: tuple) -> str:
    _, duration_ms, stage, server_name, server_type, worker = it
    return '{"event":"server.startup_stage","stage":%s,"server_name":%s%s,"worker":%s,"duration_ms":%s}\n' % (
        name(stage),
        name(server_name),
        _opt("server_type", server_type),
        boolean(worker),
        duration(duration_ms),
    )


def _fmt_queue(it: tuple) -> str:
    _, duration_ms, constraint, outcome, server_name = it
    return '{"event":"http.pool.queue","queue_constraint":%s,"queue_outcome":%s,"server_name":%s,"duration_ms":%s}\n' % (
        one_of(constraint, _QUEUE_CONSTRAINTS),
        one_of(outcome, _QUEUE_OUTCOMES),
        name(server_name),
        duration(duration_ms),
    )


def _fmt_connect(it: tuple) -> str:
    _, duration_ms, outcome, server_name = it
    return '{"event":"http.pool.connect","outcome":%s,"server_name":%s,"duration_ms":%s}\n' % (
        one_of(outcome, _CONNECT_OUTCOMES),
        name(server_name),
        duration(duration_ms),
    )


def _fmt_model_call(it: tuple) -> str:
    _, server_name, dialect, latency_ms, ttft_ms, error_category, finish_reason, tokens_in, tokens_out, tokens_reasoning = it
    # Gym's defaults: a call that names no model server or dialect is "unknown", one without
    # an error category is "ok". A failed call records no tokens and no finish reason.
    parts = ['{"event":"model_call","server_name":%s,"dialect":%s,"outcome":%s' % (
        name(server_name or _UNKNOWN),
        name(dialect or _UNKNOWN),
        name(error_category or MODEL_CALL_OUTCOME_OK),
    )]
    if latency_ms is not None:
        parts.append(',"duration_ms":%s' % duration(latency_ms))
    if ttft_ms is not None:
        parts.append(',"ttft_ms":%s' % duration(ttft_ms))
    if not error_category:
        tokens = ['"%s":%s' % (k, integer(v)) for k, v in (("input", tokens_in), ("output", tokens_out), ("reasoning", tokens_reasoning)) if v is not None]
        if tokens:
            parts.append(',"tokens":{%s}' % ",".join(tokens))
        if finish_reason:
            parts.append(',"finish_reason":%s' % enc(finish_reason))
    parts.append("}\n")
    return "".join(parts)


_COMPLETED = register_kind(_fmt_completed, CACHE)
_REWARD = register_kind(_fmt_reward, CACHE_TYPED)
_HEALTH = register_kind(_fmt_health, CACHE)
_ACTIVE = register_kind(_fmt_active, CACHE_TYPED)
_STARTUP = register_kind(_fmt_startup)
_EXEC = register_kind(_fmt_exec)
_RETRY = register_kind(_fmt_retry, CACHE)
_STAGE = register_kind(_fmt_stage)
_QUEUE = register_kind(_fmt_queue)
_CONNECT = register_kind(_fmt_connect)
_MODEL_CALL = register_kind(_fmt_model_call)

# ---- the recorders (the caller's thread: one tuple, one append) ----
#
# Each is written out in full rather than through a shared helper: a second Python call would
# double the cost of the call site.


def record_rollout_completed(
    outcome: str,
    dispatch_name: str,
    failure_class: str | None = None,
    failure_kind: str | None = None,
    failure_type: str | None = None,
) -> None:
    """Count one finished rollout attempt in ``gym.rollout.completed_total``.

    Sends ``rollout.completed`` without a reward: the reward is ``record_rollout_reward``'s.
    """
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_COMPLETED, outcome, dispatch_name, failure_class, failure_kind, failure_type))
        else:
            e.overflow((_COMPLETED, outcome, dispatch_name, failure_class, failure_kind, failure_type))


def record_rollout_reward(reward: float, dispatch_name: str, masked: bool) -> None:
    """Count one scored attempt in ``gym.rollout.rewarded_total`` by the range its reward
    falls in (a NaN reward is unscored: the collector counts nothing)."""
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_REWARD, reward, dispatch_name, masked))
        else:
            e.overflow((_REWARD, reward, dispatch_name, masked))


def record_rollout_health(verdict: str, outcome: str, flagged_checks: Iterable[str]) -> None:
    """Count one health-evaluated rollout and each distinct check that flagged it."""
    e = _E
    if e.on:
        if type(flagged_checks) is not tuple:
            try:
                flagged_checks = tuple(flagged_checks)
            except Exception:
                e.count_invalid()
                return
        q = e.queue
        if len(q) < e.cap:
            q.append((_HEALTH, verdict, outcome, flagged_checks))
        else:
            e.overflow((_HEALTH, verdict, outcome, flagged_checks))


def record_sandbox_active(delta: int, provider: str) -> None:
    """Add ``delta`` (``+1`` on start, ``-1`` on stop) to ``gym.sandbox.active`` for ``provider``."""
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_ACTIVE, delta, provider))
        else:
            e.overflow((_ACTIVE, delta, provider))


def record_sandbox_startup(duration_ms: float, provider: str) -> None:
    """Record one sandbox's provisioning wall-clock, by provider."""
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_STARTUP, duration_ms, provider))
        else:
            e.overflow((_STARTUP, duration_ms, provider))


def record_sandbox_exec_duration(duration_ms: float, provider: str) -> None:
    """Record one command's wall-clock inside an already-provisioned sandbox, by provider."""
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_EXEC, duration_ms, provider))
        else:
            e.overflow((_EXEC, duration_ms, provider))


def record_sandbox_create_retry(provider: str) -> None:
    """Count one retried sandbox-create attempt, by provider."""
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_RETRY, provider))
        else:
            e.overflow((_RETRY, provider))


def record_server_startup_stage(
    duration_ms: float,
    stage: str,
    server_name: str,
    server_type: Optional[str],
    worker: bool = False,
) -> None:
    """Record one stage of one server's own startup, from the process that ran it.

    ``worker`` is true for a Uvicorn worker of a multi-worker server.
    """
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_STAGE, duration_ms, stage, server_name, server_type, worker))
        else:
            e.overflow((_STAGE, duration_ms, stage, server_name, server_type, worker))


def record_http_connection_pool_queue_duration(
    duration_ms: float,
    queue_constraint: str,
    queue_outcome: str,
    server_name: str,
) -> None:
    """Record one queued connection acquisition."""
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_QUEUE, duration_ms, queue_constraint, queue_outcome, server_name))
        else:
            e.overflow((_QUEUE, duration_ms, queue_constraint, queue_outcome, server_name))


def record_http_connection_pool_connect_duration(duration_ms: float, outcome: str, server_name: str) -> None:
    """Record the setup time of one new pooled connection."""
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_CONNECT, duration_ms, outcome, server_name))
        else:
            e.overflow((_CONNECT, duration_ms, outcome, server_name))


def metrics_exporting() -> bool:
    """True when a recorder here would send its line (telemetry is on in this process): the
    call-site gate for work done only for metrics, as Gym's."""
    return _E.on


def record_model_call(
    *,
    server_name: Optional[str],
    dialect: Optional[str],
    latency_ms: Optional[float],
    ttft_ms: Optional[float],
    error_category: Optional[str],
    finish_reason: Optional[str],
    tokens_in: Optional[int],
    tokens_out: Optional[int],
    tokens_reasoning: Optional[int],
) -> None:
    """Record one captured model call (``model_call``): its duration with its outcome, its
    time to first token, its tokens and its finish reason, as Gym's rules say.

    - One call per captured exchange, failures included: ``error_category`` is the failure's
      category (the outcome), None for a call that succeeded (outcome ``ok``).
    - ``latency_ms``: None when the latency is not known (nothing recorded).
    - ``ttft_ms``: recorded as given; pass None for a response that was not streamed.
    - ``tokens_in``, ``tokens_out``, ``tokens_reasoning``: None for a type the provider did not
      report, which records nothing (never a zero); a reported 0 is recorded.
    - A failed call records no tokens and no finish reason, whatever is passed.
    - ``server_name`` and ``dialect``: ``unknown`` when None or empty, as Gym's recorder does.
    """
    e = _E
    if e.on:
        q = e.queue
        if len(q) < e.cap:
            q.append((_MODEL_CALL, server_name, dialect, latency_ms, ttft_ms, error_category, finish_reason, tokens_in, tokens_out, tokens_reasoning))
        else:
            e.overflow((_MODEL_CALL, server_name, dialect, latency_ms, ttft_ms, error_category, finish_reason, tokens_in, tokens_out, tokens_reasoning))


# ---- the connection-attempt counter: a snapshot read on the emitter's thread ----

_connect_snapshot: Optional[Callable[[], dict[str, int]]] = None


def _connects_line() -> dict:
    snap = _connect_snapshot
    if snap is None:
        return {}
    counts = dict(snap())
    parts = []
    bad = 0
    for server, count in counts.items():
        try:
            parts.append("%s:%s" % (name(server), integer(count)))
        except (ValueError, TypeError, AttributeError):
            bad += 1  # an entry the receiver would reject, with the whole line
    if bad:
        _E.count_invalid(bad)
    if not parts:
        return {}
    return {"http.pool.connects": '{"event":"http.pool.connects","counts":{%s}}\n' % ",".join(parts)}


def register_http_connection_pool_connect_counter(snapshot: Callable[[], dict[str, int]]) -> None:
    """Export cumulative connection-attempt counts without a call on each connect.

    ``snapshot()`` is called on the emitter's thread every interval (and at ``flush``) and
    must return ``{server name: cumulative attempts}``; a later registration replaces an
    earlier one.
    """
    global _connect_snapshot
    _connect_snapshot = snapshot
    _E.ensure_started()


def _reset_for_testing() -> None:
    """Forget the registered connection-attempt snapshot. Test-only."""
    global _connect_snapshot
    _connect_snapshot = None


_E.snapshot_sources.append(_connects_line)
