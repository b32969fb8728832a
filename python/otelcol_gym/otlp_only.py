"""The constants of the instruments Gym's own code records with the OpenTelemetry SDK only.

Gym's older observability modules (``gym_metrics``, ``cpu``, ``memory``, ``gpu`` and
``concurrency``'s ``TimedSemaphore``), nemo-lens' request duration and OpenTelemetry's HTTP
instrumentations (FastAPI, aiohttp) in Gym's servers create these instruments themselves, so they
reach the collector by OTLP only: this package sends none of them and has no recorder for them
(events-v1 has no event for them either). It keeps their names, attribute keys and bucket
boundaries, read from the schema, for code that refers to them.
"""

from __future__ import annotations

from . import _schema

__all__: list[str] = []

# The OpenTelemetry SDK's default boundaries (every histogram Gym leaves at the default), and the
# HTTP conventions' boundaries of a duration in seconds.
SDK_DEFAULT_BOUNDARIES: tuple[float, ...] = _schema.BUCKETS_SDK_DEFAULT
HTTP_DURATION_BOUNDARIES_S: tuple[float, ...] = _schema.BUCKETS_HTTP_DURATION_S

# Gym's older gym_metrics module.
QUEUE_WAIT_INSTRUMENT = _schema.GYM_CONCURRENCY_QUEUE_WAIT_DURATION_MS.name
MODEL_CALL_DURATION_INSTRUMENT = _schema.GYM_MODEL_ROUTE_CALL_DURATION_MS.name
MODEL_TIME_TO_FIRST_BYTE_INSTRUMENT = _schema.GYM_MODEL_TIME_TO_FIRST_BYTE_MS.name
HTTP_TIMEOUT_INSTRUMENT = _schema.GYM_HTTP_TIMEOUT_TOTAL.name
HTTP_RETRY_INSTRUMENT = _schema.GYM_HTTP_RETRY_TOTAL.name
AGENT_TURN_COUNT_INSTRUMENT = _schema.GYM_AGENT_TURN_COUNT.name
AGENT_TURN_DURATION_INSTRUMENT = _schema.GYM_AGENT_TURN_DURATION_MS.name
TOOL_CALL_DURATION_INSTRUMENT = _schema.GYM_TOOL_CALL_DURATION_MS.name
TOOL_CALL_CPU_PERCENT_INSTRUMENT = _schema.GYM_TOOL_CALL_CPU_PERCENT.name
TOOL_CALL_MEMORY_USED_MIB_INSTRUMENT = _schema.GYM_TOOL_CALL_MEMORY_USED_MIB.name

CONCURRENCY_SITE_ATTRIBUTE = _schema.ATTR_NEMO_GYM_CONCURRENCY_SITE.key
# Gym's older connection-pool code names the queued attempt's outcome so (by OTLP only).
POOL_ATTEMPT_OUTCOME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HTTP_CONNECTION_POOL_ATTEMPT_OUTCOME.key
MODEL_DIALECT_ATTRIBUTE = _schema.ATTR_NEMO_GYM_MODEL_DIALECT.key
HTTP_INTERNAL_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HTTP_INTERNAL.key
HTTP_RETRY_REASON_ATTRIBUTE = _schema.ATTR_NEMO_GYM_HTTP_RETRY_REASON.key
AGENT_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_AGENT_NAME.key
BENCHMARK_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_BENCHMARK_NAME.key
TOOL_NAME_ATTRIBUTE = _schema.ATTR_NEMO_GYM_TOOL_NAME.key

# Gym's older cpu, memory and gpu samplers (gauges in Gym's units: % of one core, MiB).
PROCESS_CPU_PERCENT_INSTRUMENT = _schema.GYM_PROCESS_CPU_PERCENT.name
PROCESS_TREE_CPU_PERCENT_INSTRUMENT = _schema.GYM_PROCESS_TREE_CPU_PERCENT.name
PROCESS_TREE_MEMORY_USED_MIB_INSTRUMENT = _schema.GYM_PROCESS_TREE_MEMORY_USED_MIB.name
HOST_MEMORY_USED_MIB_INSTRUMENT = _schema.GYM_HOST_MEMORY_USED_MIB.name
HOST_MEMORY_TOTAL_MIB_INSTRUMENT = _schema.GYM_HOST_MEMORY_TOTAL_MIB.name
GPU_UTILIZATION_PERCENT_INSTRUMENT = _schema.GYM_PROCESS_GPU_UTILIZATION_PERCENT.name
GPU_MEMORY_USED_MIB_INSTRUMENT = _schema.GYM_PROCESS_GPU_MEMORY_USED_MIB.name
GPU_MEMORY_TOTAL_MIB_INSTRUMENT = _schema.GYM_PROCESS_GPU_MEMORY_TOTAL_MIB.name

GPU_INDEX_ATTRIBUTE = _schema.ATTR_NEMO_GYM_GPU_INDEX.key
GPU_UUID_ATTRIBUTE = _schema.ATTR_NEMO_GYM_GPU_UUID.key

# nemo-lens' request duration (declared, not recorded by Gym's code).
SERVER_REQUEST_DURATION_INSTRUMENT = _schema.GYM_SERVER_REQUEST_DURATION_MS.name

# OpenTelemetry's HTTP instrumentations: the new conventions, then the old ones.
HTTP_SERVER_REQUEST_DURATION_INSTRUMENT = _schema.HTTP_SERVER_REQUEST_DURATION.name
HTTP_CLIENT_REQUEST_DURATION_INSTRUMENT = _schema.HTTP_CLIENT_REQUEST_DURATION.name
HTTP_SERVER_ACTIVE_REQUESTS_INSTRUMENT = _schema.HTTP_SERVER_ACTIVE_REQUESTS.name
HTTP_SERVER_DURATION_INSTRUMENT = _schema.HTTP_SERVER_DURATION.name
HTTP_CLIENT_DURATION_INSTRUMENT = _schema.HTTP_CLIENT_DURATION.name

HTTP_REQUEST_METHOD_ATTRIBUTE = _schema.ATTR_HTTP_REQUEST_METHOD.key
URL_SCHEME_ATTRIBUTE = _schema.ATTR_URL_SCHEME.key
NETWORK_PROTOCOL_VERSION_ATTRIBUTE = _schema.ATTR_NETWORK_PROTOCOL_VERSION.key
ERROR_TYPE_ATTRIBUTE = _schema.ATTR_ERROR_TYPE.key
HTTP_METHOD_ATTRIBUTE = _schema.ATTR_HTTP_METHOD.key
HTTP_STATUS_CODE_ATTRIBUTE = _schema.ATTR_HTTP_STATUS_CODE.key
HTTP_SCHEME_ATTRIBUTE = _schema.ATTR_HTTP_SCHEME.key
HTTP_FLAVOR_ATTRIBUTE = _schema.ATTR_HTTP_FLAVOR.key
