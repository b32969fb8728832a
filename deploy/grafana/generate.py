#!/usr/bin/env python3
"""Write the Grafana dashboards of deploy/grafana/dashboards/ from the definitions below.

The dashboards are data: each is a list of panels, each panel a title, a kind and its PromQL
queries. This script turns them into Grafana's dashboard JSON (schema 39, Grafana 10 and
later), with a ``${datasource}`` variable, the run, service and instance variables, and the
attribute variables (dispatch, server, model) of the instruments the dashboard reads.
``--check`` compares instead of writing and fails when a file is stale (make
test-prometheus). The end-to-end test (e2e/dashboards_test.go) runs every query of every
written dashboard against a real Prometheus, and checks every selector against metadata.yaml.

Which instrument carries which attribute is read from schema_tables.json, which make generate
writes from the repository's metadata.yaml (the schema's source of truth): every selector of a
Gym instrument gets the matcher of each attribute variable whose attribute the instrument
carries, so a variable filters every panel it can and no other. Metric names are the Prometheus exporter's translation of the Gym
schema with translation_strategy UnderscoreEscapingWithoutSuffixes (docs/gym.md): `.`
becomes `_`, no unit or type suffix is added, a histogram has `_bucket`, `_sum`, `_count`.
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "dashboards")
# The instrument table of metadata.yaml (kind, unit, attribute keys), written by
# cmd/schemagen (make generate).
TABLES = os.path.join(HERE, "schema_tables.json")


def load_instruments(path):
    """name -> {"kind", "unit", "attributes": [keys]}, in metadata.yaml's order."""
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)["instruments"]
    return {r["name"]: {k: r[k] for k in ("kind", "unit", "attributes") if k in r} for r in rows}


INSTRUMENTS = load_instruments(TABLES)


def prom_names(name, kind):
    """The Prometheus series names of an instrument (UnderscoreEscapingWithoutSuffixes)."""
    base = re.sub(r"[^a-zA-Z0-9_:]+", "_", name)
    return [base + s for s in ("_bucket", "_sum", "_count")] if kind == "histogram" else [base]


# Prometheus series name -> instrument name.
SERIES = {p: n for n, i in INSTRUMENTS.items() for p in prom_names(n, i["kind"])}

# The attribute variables: name, label, the attribute (as in metadata.yaml). A dashboard gets
# one when a panel reads an instrument that carries the attribute, and every selector of such
# an instrument gets its matcher (filled in by scope_selectors).
ATTR_VARIABLES = [
    ("dispatch", "Dispatch", "nemo.gym.rollout.dispatch.name"),
    ("server", "Server", "nemo.gym.server.name"),
    ("model", "Model", "gen_ai.response.model"),
]


def label_of(attr):
    return re.sub(r"[^a-zA-Z0-9_]", "_", attr)


def carriers(attr, instruments):
    """The series a variable of attr reads its values from: those of the dashboard's
    instruments that carry it (a histogram's _count), so that it offers only values that
    filter something there."""
    return sorted(prom_names(n, INSTRUMENTS[n]["kind"])[-1] for n in instruments if attr in INSTRUMENTS[n]["attributes"])


# The selectors of a Gym process: run, service (job) and instance. Every variable's "All"
# is the regex .*, which also matches a series without the label.
PROC = 'nemo_run_id=~"$run", job=~"$service", instance=~"$instance"'
# The run's selector alone, for series made in the collector with one resource per run (the
# flight recorder's, from Gym's spans): their job and instance are the collector's scrape
# target, no Gym process's, so a dashboard of them has the run variable and no service or
# instance variable.
RUN = 'nemo_run_id=~"$run"'
# The collector's own metrics (otelcol_*), from its telemetry endpoint.
COL = 'job=~"$collector", receiver=~"$receiver"'
RI = "$__rate_interval"


def q(expr, legend="", instant=False, fmt=None):
    return {"expr": expr, "legend": legend, "instant": instant, "format": fmt}


def timeseries(title, targets, unit="short", stack=False, description=""):
    return {"kind": "timeseries", "title": title, "targets": targets, "unit": unit,
            "stack": stack, "description": description}


def stat(title, targets, unit="short", description=""):
    return {"kind": "stat", "title": title, "targets": targets, "unit": unit,
            "description": description}


def table(title, targets, description=""):
    """The series of instant queries (format table) as rows, one column per label."""
    return {"kind": "table", "title": title, "targets": targets, "unit": "short",
            "description": description}


def heatmap(title, expr, unit="ms", description=""):
    return {"kind": "heatmap", "title": title,
            "targets": [q(expr, "{{le}}", fmt="heatmap")], "unit": unit,
            "description": description}



def rate_by(by, metric, legend, sel=PROC):
    """The per-second rate of a counter (or of a histogram's _count or _sum), summed by labels."""
    return q(f"sum by ({by}) (rate({metric}{{{sel}}}[{RI}]))", legend)


def value_by(by, metric, legend, sel=PROC, agg="sum"):
    """The current value of a gauge (or a counter's total), aggregated by labels with agg
    (sum, or max for samples that several processes report alike)."""
    return q(f"{agg} by ({by}) ({metric}{{{sel}}})", legend)


def mean_by(by, metric, legend):
    """A histogram's mean over the rate interval, by labels: the rate of its _sum over the
    rate of its _count."""
    return q(f"sum by ({by}) (rate({metric}_sum{{{PROC}}}[{RI}]))"
             f" / sum by ({by}) (rate({metric}_count{{{PROC}}}[{RI}]))", legend)

def quantiles(metric, by, sel, qs=(0.5, 0.99), legend=""):
    """histogram_quantile targets of metric (a _bucket series) by the labels of by."""
    out = []
    for x in qs:
        keys = ", ".join(by + ["le"])
        out.append(q(f"histogram_quantile({x}, sum by ({keys}) (rate({metric}{{{sel}}}[{RI}])))",
                     (legend + " " if legend else "") + f"p{int(x * 100)}"))
    return out


LAG = "gym_event_loop_lag_ms_bucket"
GC_PAUSE = "gym_gc_pause_duration_ms_bucket"
QUEUE = "gym_http_connection_pool_queue_duration_ms"
CONNECT = "gym_http_connection_pool_connect_duration_ms"

# Run-file rollouts (gym.rollout.tokens, .finish_total, .tool_calls); their selectors get the
# dispatch and model matchers from metadata.yaml. gen_ai.token.type: reasoning is part of output
# and cached_input of input, so every token panel is split by type and never sums across types.
TOKENS = "gym_rollout_tokens"
FINISH = "gym_rollout_finish_total"
# Finish reasons that mean the response was cut at its token limit: Responses'
# incomplete_details.reason max_output_tokens, Chat's length, Messages' max_tokens.
TRUNCATED = 'nemo_gym_rollout_finish_reason=~"max_output_tokens|length|max_tokens"'
MODEL_CALL = "gym_model_call_duration_ms"
TTFT = "gym_model_call_ttft_ms"
MC_TOKENS = "gym_model_call_tokens"
# The run files' rollout evidence (ng_trajectory, ng_agent_observations): one resource per run.
EV = "gym_evidence"
# Concurrency limits (MeteredSemaphore), one series per component, limit and server.
LIMIT_BY = "nemo_gym_concurrency_component, nemo_gym_concurrency_limit_name, nemo_gym_server_name"
LIMIT_LEGEND = "{{nemo_gym_concurrency_component}}/{{nemo_gym_concurrency_limit_name}} {{nemo_gym_server_name}}"
# Gym's own GPU samples (nvidia-smi), one series per process and GPU: a server is its job
# (service.name), a GPU its index on that host and its UUID everywhere.
GPU_BY = "job, nemo_gym_gpu_index"
GPU_LEGEND = "{{job}} GPU {{nemo_gym_gpu_index}}"


def share(num_sel, all_sel, metric, by, rate=True):
    """num / all of a counter, 0 (not absent) where num has no series; by: a label list."""
    grp = f"sum by ({by}) " if by else "sum "
    def f(sel):
        return f"{grp}(rate({metric}{{{sel}}}[{RI}]))" if rate else f"{grp}({metric}{{{sel}}})"
    return f"({f(num_sel)} or 0 * {f(all_sel)}) / {f(all_sel)}"

# The tiers beside Gym, scraped by the job collector (deploy/gym-submit.yaml) under their own
# names: vLLM's (vllm:..., colons kept), dcgm-exporter's (DCGM_FI_...) and node_exporter's
# (node_...). In that collector every series of a job, Gym's included, has the job's routing
# service.name as job: picking the service picks its model server, GPUs and node. With All, or
# scraped by Prometheus directly (job vllm, dcgm, node), the panels show every target.
INFRA = 'job=~"$service"'
# vLLM V1 calls its KV-cache gauge kv_cache_usage_perc, V0 gpu_cache_usage_perc: a server has one.
KV_CACHE = f"(vllm:kv_cache_usage_perc{{{INFRA}}} or vllm:gpu_cache_usage_perc{{{INFRA}}})"
VLLM_BY = "job, model_name"
GPU_DCGM_BY = "Hostname, gpu"


def infra_quantiles(metric, by, legend):
    """p50 and p99 of an exporter's histogram (metric: its _bucket series) by the labels of by."""
    return [q(f"histogram_quantile({x}, sum by ({by}, le) (rate({metric}{{{INFRA}}}[{RI}])))", f"{legend} p{int(x * 100)}")
            for x in (0.5, 0.99)]


# The cost of runs: the gym.cost recording rules of deploy/prometheus/gym.rules.yaml (the tokens
# of Gym's run files at the user's prices, gym.token.price_per_million; internal/prices'
# formula), by run and benchmark. The rules keep nemo_run_id and the dispatch and model labels,
# so their selectors take the run, dispatch and model matchers as a Gym instrument's would.
COST = 'nemo_run_id=~"$run", nemo_gym_rollout_dispatch_name=~"$dispatch"'
COST_MODEL = COST + ', gen_ai_response_model=~"$model"'


def cost_by_bench(rule):
    """A gym.cost rule by run and benchmark."""
    return q(f"sum by (nemo_run_id, nemo_gym_rollout_dispatch_name) ({rule}{{{COST}}})",
             "{{nemo_run_id}} {{nemo_gym_rollout_dispatch_name}}")


DASHBOARDS = [
    {
        "uid": "gym-rollouts",
        "title": "Gym / Rollouts",
        "description": "Rollout outcomes, failures, rewards and health verdicts of NeMo Gym runs.",
        "panels": [
            timeseries("Completed rollouts by outcome", [
                rate_by("nemo_gym_rollout_outcome", "gym_rollout_completed_total", "{{nemo_gym_rollout_outcome}}")], unit="ops", stack=True),
            stat("Rollouts completed since start, by outcome", [
                q(f"sum by (nemo_gym_rollout_outcome) (gym_rollout_completed_total{{{PROC}}})",
                  "{{nemo_gym_rollout_outcome}}", instant=True)],
                description="Cumulative totals of the selected processes."),
            timeseries("Failure ratio", [
                q(f'sum(rate(gym_rollout_completed_total{{{PROC}, nemo_gym_rollout_outcome="failed"}}[{RI}]))'
                  f" / sum(rate(gym_rollout_completed_total{{{PROC}}}[{RI}]))", "failed / completed")],
                unit="percentunit"),
            timeseries("Failures and omissions by kind", [
                q(f'sum by (nemo_gym_failure_kind) (rate(gym_rollout_completed_total{{{PROC}, nemo_gym_failure_kind!=""}}[{RI}]))',
                  "{{nemo_gym_failure_kind}}")], unit="ops", stack=True,
                description="`unregistered` is a kind outside Gym's registry that is not namespaced."),
            timeseries("Failures and omissions by class", [
                q(f'sum by (nemo_gym_failure_class) (rate(gym_rollout_completed_total{{{PROC}, nemo_gym_failure_class!=""}}[{RI}]))',
                  "{{nemo_gym_failure_class}}")], unit="ops", stack=True),
            timeseries("Rewards by range and masked", [
                rate_by("nemo_gym_rollout_reward_range, nemo_gym_rollout_masked", "gym_rollout_rewarded_total", "{{nemo_gym_rollout_reward_range}} masked={{nemo_gym_rollout_masked}}")], unit="ops", stack=True),
            timeseries("Rewards by range, masked included", [
                rate_by("nemo_gym_rollout_reward_range", "gym_rollout_rewarded_total", "{{nemo_gym_rollout_reward_range}}")], unit="ops", stack=True),
            timeseries("Health verdicts", [
                rate_by("nemo_gym_health_verdict, nemo_gym_rollout_outcome", "gym_rollout_health_verdict_total", "{{nemo_gym_health_verdict}} ({{nemo_gym_rollout_outcome}})")], unit="ops", stack=True),
            timeseries("Flagged health checks", [
                rate_by("nemo_gym_health_check", "gym_rollout_health_flagged_total", "{{nemo_gym_health_check}}")], unit="ops", stack=True),
            timeseries("Rollout duration (p50, p99)", quantiles("gym_rollout_duration_ms_bucket", [], PROC), unit="ms",
                description="Wall-clock time of one rollout, failed ones included (events rollout.duration, or the run files' ng_perf.total_latency_ms)."),
            timeseries("Verification duration (p50, p99)", quantiles("gym_verify_duration_ms_bucket", [], PROC), unit="ms"),
            timeseries("Verification success rate", [
                q(f"min by (job, instance) (gym_verify_success_rate{{{PROC}}})", "{{job}} {{instance}}")], unit="percentunit",
                description="Verifications completed over all verifications since each process's first."),
        ],
    },
    {
        "uid": "gym-servers",
        "title": "Gym / Servers and event loops",
        "description": "Event-loop lag, garbage collection, requests and startup of Gym servers.",
        "panels": [
            timeseries("Event-loop lag quantiles", quantiles(LAG, ["job", "instance", "nemo_gym_event_loop"], PROC, (0.5, 0.9, 0.99),
                                                             "{{job}} {{instance}} {{nemo_gym_event_loop}}"), unit="ms"),
            heatmap("Event-loop lag", f"sum by (le) (increase({LAG}{{{PROC}}}[{RI}]))"),
            timeseries("Event-loop tasks", [
                value_by("job, instance, nemo_gym_event_loop", "gym_event_loop_tasks", "{{job}} {{instance}} {{nemo_gym_event_loop}}")]),
            timeseries("GC pause p99 by generation", quantiles(GC_PAUSE, ["nemo_gym_gc_generation"], PROC, (0.99,),
                                                               "gen {{nemo_gym_gc_generation}}"), unit="ms"),
            timeseries("GC pause time per second", [
                rate_by("nemo_gym_gc_generation", "gym_gc_pause_duration_ms_sum", "gen {{nemo_gym_gc_generation}}")], unit="ms", stack=True,
                description="Milliseconds of GC pause per second of wall time."),
            timeseries("GC collections and collected objects", [
                rate_by("nemo_gym_gc_generation", "gym_gc_collections_total", "collections gen {{nemo_gym_gc_generation}}"),
                rate_by("nemo_gym_gc_generation", "gym_gc_collected_total", "collected gen {{nemo_gym_gc_generation}}")], unit="ops"),
            stat("GC totals: uncollectable objects, tracked objects", [
                q(f"sum(gym_gc_uncollectable_total{{{PROC}}})", "uncollectable", instant=True),
                q(f"sum(gym_gc_count{{{PROC}}})", "tracked (gc.get_count)", instant=True)]),
            timeseries("Requests in flight", [
                value_by("job, instance", "gym_server_requests_in_flight", "{{job}} {{instance}}")]),
            timeseries("Responses by status class", [
                q(f'sum by (class) (label_replace(rate(gym_server_responses_total{{{PROC}}}[{RI}]), "class", "${{1}}xx", "http_response_status_code", "([1-5]).."))',
                  "{{class}}")], unit="ops", stack=True),
            timeseries("Unhandled exceptions", [
                rate_by("job", "gym_server_requests_unhandled_exceptions_total", "{{job}}")], unit="ops"),
            timeseries("Cancellations by route and phase", [
                rate_by("http_route, nemo_gym_request_phase", "gym_server_requests_cancelled_total", "{{http_route}} {{nemo_gym_request_phase}}")], unit="ops", stack=True),
            timeseries("Outbound requests in flight", [
                value_by("job, instance", "gym_http_client_requests_in_flight", "{{job}} {{instance}}")]),
            timeseries("Gym servers active", [
                value_by("nemo_run_id", "gym_servers_active", "{{nemo_run_id}}")],
                description="As the orchestrator reports it (servers.active)."),
            timeseries("Startup stage mean duration by server", [
                q(f"max by (nemo_gym_server_name, nemo_gym_startup_stage) (gym_server_startup_stage_duration_ms_sum{{{PROC}}}"
                  f" / gym_server_startup_stage_duration_ms_count{{{PROC}}})",
                  "{{nemo_gym_server_name}} {{nemo_gym_startup_stage}}")], unit="ms"),
        ],
    },
    {
        "uid": "gym-sandboxes",
        "title": "Gym / Sandboxes",
        "description": "Sandboxes held, startup and exec times, create retries.",
        "panels": [
            timeseries("Active sandboxes by provider", [
                value_by("nemo_gym_sandbox_provider", "gym_sandbox_active", "{{nemo_gym_sandbox_provider}}")], stack=True),
            timeseries("Sandbox startup", quantiles("gym_sandbox_startup_duration_ms_bucket", ["nemo_gym_sandbox_provider"], PROC,
                                                    legend="{{nemo_gym_sandbox_provider}}"), unit="ms"),
            timeseries("Sandbox exec", quantiles("gym_sandbox_exec_duration_ms_bucket", ["nemo_gym_sandbox_provider"], PROC,
                                                 legend="{{nemo_gym_sandbox_provider}}"), unit="ms"),
            timeseries("Sandbox create retries", [
                rate_by("nemo_gym_sandbox_provider", "gym_sandbox_create_retry_total", "{{nemo_gym_sandbox_provider}}")], unit="ops"),
        ],
    },
    {
        "uid": "gym-driver",
        "title": "Gym / Rollout driver",
        "description": "What the rollout driver offers, holds and runs; admission, output writes, materialize and rollout sizes.",
        "panels": [
            timeseries("Rollouts offered", [
                rate_by("job", "gym_driver_rollouts_offered_total", "{{job}}")], unit="ops"),
            timeseries("Rollouts resident and active", [
                q(f"sum(gym_driver_rollouts_resident{{{PROC}}})", "resident"),
                q(f"sum(gym_driver_rollouts_active{{{PROC}}})", "active")]),
            timeseries("Admission wait", quantiles("gym_driver_admission_duration_ms_bucket", [], PROC), unit="ms"),
            timeseries("Output writes", [
                q(f"sum(rate(gym_driver_output_write_duration_ms_count{{{PROC}}}[{RI}]))", "writes")]
                + quantiles("gym_driver_output_write_duration_ms_bucket", [], PROC, (0.99,), "duration ms"),
                description="Writes per second, and the p99 of their duration in ms."),
            timeseries("Output bytes", [
                q(f"sum(rate(gym_driver_output_write_bytes_sum{{{PROC}}}[{RI}]))", "bytes/s")]
                + quantiles("gym_driver_output_write_bytes_bucket", [], PROC, (0.5,), "bytes per write"), unit="bytes"),
            timeseries("Materialize", quantiles("gym_driver_materialize_duration_ms_bucket", [], PROC), unit="ms"),
            timeseries("Rollout sizes (median)", [
                q(f"histogram_quantile(0.5, sum by (le) (rate(gym_driver_rollout_{m}_bucket{{{PROC}}}[{RI}])))", m)
                for m in ("input_items", "output_items", "turns", "tool_calls")]),
        ],
    },
    {
        "uid": "gym-connection-pool",
        "title": "Gym / Connection pool",
        "description": "Outbound HTTP of Gym processes: connection pools (queue waits, abandoned acquisitions, connects), retries and timeouts.",
        "panels": [
            timeseries("Queue wait p99 by destination and constraint", quantiles(
                QUEUE + "_bucket", ["nemo_gym_http_destination_server_name", "nemo_gym_http_connection_pool_queue_constraint"], PROC, (0.99,),
                "{{nemo_gym_http_destination_server_name}} {{nemo_gym_http_connection_pool_queue_constraint}}"), unit="ms",
                description="Only acquisitions that had to queue are recorded."),
            timeseries("Abandoned share of queued acquisitions", [
                q(f'(sum by (nemo_gym_http_destination_server_name) (rate({QUEUE}_count{{{PROC}, nemo_gym_http_connection_pool_queue_outcome="abandoned"}}[{RI}]))'
                  f" or 0 * sum by (nemo_gym_http_destination_server_name) (rate({QUEUE}_count{{{PROC}}}[{RI}])))"
                  f" / sum by (nemo_gym_http_destination_server_name) (rate({QUEUE}_count{{{PROC}}}[{RI}]))",
                  "{{nemo_gym_http_destination_server_name}}")], unit="percentunit"),
            timeseries("Queued acquisitions by outcome", [
                rate_by("nemo_gym_http_connection_pool_queue_outcome", f"{QUEUE}_count", "{{nemo_gym_http_connection_pool_queue_outcome}}")], unit="ops", stack=True),
            timeseries("Connect time by destination", quantiles(
                CONNECT + "_bucket", ["nemo_gym_http_destination_server_name"], PROC + ', nemo_gym_http_connection_pool_connect_outcome="ok"',
                legend="{{nemo_gym_http_destination_server_name}}"), unit="ms"),
            timeseries("Connect failures by destination", [
                q(f'sum by (nemo_gym_http_destination_server_name) (rate({CONNECT}_count{{{PROC}, nemo_gym_http_connection_pool_connect_outcome="failed"}}[{RI}]))',
                  "{{nemo_gym_http_destination_server_name}}")], unit="ops"),
            timeseries("Connection attempts by destination", [
                rate_by("nemo_gym_http_destination_server_name", "gym_http_connection_pool_connect_total", "{{nemo_gym_http_destination_server_name}}")], unit="ops", stack=True,
                description="connect() calls, those that later fail or are abandoned included."),
            timeseries("Connections opened (connect time recorded)", [
                rate_by("nemo_gym_http_destination_server_name, nemo_gym_http_connection_pool_connect_outcome", f"{CONNECT}_count", "{{nemo_gym_http_destination_server_name}} {{nemo_gym_http_connection_pool_connect_outcome}}")], unit="ops", stack=True,
                description="Reused connections record nothing: a run that opens connections throughout is losing them."),
            timeseries("HTTP retries by reason", [
                rate_by("nemo_gym_http_retry_reason", "gym_http_retry_total", "{{nemo_gym_http_retry_reason}}")], unit="ops", stack=True,
                description="Outbound requests retried (Gym's older HTTP client, by OTLP only): server_disconnected, client_os_error, timeout, other."),
            timeseries("HTTP timeouts by destination kind", [
                rate_by("job, nemo_gym_http_internal", "gym_http_timeout_total", "{{job}} internal={{nemo_gym_http_internal}}")], unit="ops", stack=True,
                description="Outbound calls that timed out; internal=true: the call went to another Gym server."),
        ],
    },
    {
        "uid": "gym-processes",
        "title": "Gym / Processes",
        "description": "CPU, memory, threads and open descriptors of Gym processes (OpenTelemetry process conventions); Gym's own CPU, process-tree memory and GPU samples.",
        "panels": [
            timeseries("CPU by mode", [
                rate_by("job, instance, cpu_mode", "process_cpu_time", "{{job}} {{instance}} {{cpu_mode}}")], unit="short", stack=True,
                description="CPU seconds per second: 1 is one core."),
            timeseries("Memory", [
                value_by("job, instance", "process_memory_usage", "{{job}} {{instance}}")], unit="bytes"),
            timeseries("Threads", [
                value_by("job, instance", "process_thread_count", "{{job}} {{instance}}")]),
            timeseries("Open file descriptors", [
                value_by("job, instance", "process_open_file_descriptor_count", "{{job}} {{instance}}")]),
            timeseries("CPU by server: process and process tree", [
                value_by("job", "gym_process_cpu_percent", "process {{job}}", agg="max"),
                value_by("job", "gym_process_tree_cpu_percent", "tree {{job}}", agg="max")], unit="percent",
                description="Gym's own samples at span ends (by OTLP only), in percent of one logical core: above 100 on several cores. The tree adds every process the server spawned."),
            timeseries("Process-tree memory by server", [
                value_by("job", "gym_process_tree_memory_used_mib", "{{job}}", agg="max")], unit="mbytes",
                description="Resident memory of the server and every process it spawned, in MiB, sampled at span ends."),
            timeseries("GPU utilisation by server and GPU", [
                value_by(GPU_BY, "gym_process_gpu_utilization_percent", GPU_LEGEND, agg="max")], unit="percent",
                description="Compute (SM) utilisation from nvidia-smi, every GPU the server's process sees (CUDA_VISIBLE_DEVICES)."),
            timeseries("GPU utilisation by GPU", [
                value_by("host_name, nemo_gym_gpu_uuid", "gym_process_gpu_utilization_percent", "{{host_name}} {{nemo_gym_gpu_uuid}}", agg="max")], unit="percent",
                description="One line per physical GPU (its UUID), however many processes see it."),
            timeseries("GPU memory used by server and GPU", [
                value_by(GPU_BY, "gym_process_gpu_memory_used_mib", "used " + GPU_LEGEND, agg="max"),
                value_by(GPU_BY, "gym_process_gpu_memory_total_mib", "total " + GPU_LEGEND, agg="max")], unit="mbytes",
                description="In MiB, as nvidia-smi reports them."),
            timeseries("GPU memory in use (share of total)", [
                q(f"max by ({GPU_BY}) (gym_process_gpu_memory_used_mib{{{PROC}}}) / max by ({GPU_BY}) (gym_process_gpu_memory_total_mib{{{PROC}}})",
                  GPU_LEGEND)], unit="percentunit"),
        ],
    },
    {
        "uid": "gym-agents",
        "title": "Gym / Agent turns and tool calls",
        "description": "Turns of the rollouts by agent and benchmark, their duration; tool calls of the resources servers: rate, duration, CPU and memory.",
        "panels": [
            timeseries("Turns per rollout by agent (p50, p99)", quantiles("gym_agent_turn_count_bucket", ["nemo_gym_agent_name"], PROC,
                                                                          legend="{{nemo_gym_agent_name}}"),
                description="From the SDK's default buckets (0, 5, 10, 25, ...): coarse."),
            timeseries("Turns per rollout by agent and benchmark (mean)", [
                mean_by("nemo_gym_agent_name, nemo_gym_benchmark_name", "gym_agent_turn_count", "{{nemo_gym_agent_name}} {{nemo_gym_benchmark_name}}")]),
            timeseries("Turn duration by agent (p50, p99)", quantiles("gym_agent_turn_duration_ms_bucket", ["nemo_gym_agent_name"], PROC,
                                                                      legend="{{nemo_gym_agent_name}}"), unit="ms",
                description="The gap between a rollout's consecutive trajectory turns, recorded when the rollout completes."),
            timeseries("Tool calls by tool", [
                rate_by("nemo_gym_tool_name", "gym_tool_call_duration_ms_count", "{{nemo_gym_tool_name}}")], unit="ops", stack=True,
                description="other: a path of a resources server that is no tool name."),
            timeseries("Tool-call duration by tool (p50, p99)", quantiles("gym_tool_call_duration_ms_bucket", ["nemo_gym_tool_name"], PROC,
                                                                          legend="{{nemo_gym_tool_name}}"), unit="ms"),
            timeseries("Process-tree CPU at tool-call end by tool (mean)", [
                mean_by("nemo_gym_tool_name", "gym_tool_call_cpu_percent", "{{nemo_gym_tool_name}}")], unit="percent",
                description="How busy the server's process tree was when each call ended (percent of one core), not the call's own CPU."),
            timeseries("Process-tree memory at tool-call end by tool (mean)", [
                mean_by("nemo_gym_tool_name", "gym_tool_call_memory_used_mib", "{{nemo_gym_tool_name}}")], unit="mbytes"),
        ],
    },
    {
        "uid": "gym-models",
        "title": "Gym / Models and tokens",
        "description": "Tokens, truncation, tool calls and finish reasons of rollout responses (Gym run files); latency, time to first token, tokens and finish reasons of model calls.",
        "panels": [
            timeseries("Tokens per rollout by type (mean)", [
                q(f"sum by (gen_ai_token_type) (rate({TOKENS}_sum{{{PROC}}}[{RI}])) / sum by (gen_ai_token_type) (rate({TOKENS}_count{{{PROC}}}[{RI}]))",
                  "{{gen_ai_token_type}}")],
                description="One sample per rollout and type its response.usage gives. reasoning is part of output and cached_input of input: never add the types up."),
            stat("Tokens since start, by type", [
                q(f"sum by (gen_ai_token_type) ({TOKENS}_sum{{{PROC}}})", "{{gen_ai_token_type}}", instant=True)],
                description="Cumulative totals of the selected rollouts. reasoning is part of output and cached_input of input."),
            timeseries("Tokens per rollout by type, model and environment (mean)", [
                mean_by("gen_ai_token_type, gen_ai_response_model, nemo_gym_rollout_dispatch_name", TOKENS, "{{gen_ai_token_type}} {{gen_ai_response_model}} {{nemo_gym_rollout_dispatch_name}}")],
                description="The environment is the dispatch (_ng_environment_server, else agent_ref.name)."),
            timeseries("Tokens per rollout by type (p50, p99)", quantiles(TOKENS + "_bucket", ["gen_ai_token_type"], PROC,
                                                                          legend="{{gen_ai_token_type}}"),
                description="From the histogram's buckets (powers of 4): coarse."),
            timeseries("Truncated share of rollout responses by model", [
                q(share(PROC + ", " + TRUNCATED, PROC, FINISH, "gen_ai_response_model"), "{{gen_ai_response_model}}")],
                unit="percentunit",
                description="Responses that ended at their token limit (max_output_tokens, length, max_tokens) over all responses."),
            stat("Truncated share since start", [
                q(share(PROC + ", " + TRUNCATED, PROC, FINISH, "", rate=False), "truncated", instant=True)],
                unit="percentunit", description="Over every response of the selected rollouts so far."),
            timeseries("Rollout finish reasons", [
                rate_by("nemo_gym_rollout_finish_reason", FINISH, "{{nemo_gym_rollout_finish_reason}}")], unit="ops", stack=True,
                description="incomplete_details.reason, else status, else unknown."),
            timeseries("Tool calls per rollout", [
                mean_by("nemo_gym_rollout_dispatch_name", "gym_rollout_tool_calls", "mean {{nemo_gym_rollout_dispatch_name}}")]
                + quantiles("gym_rollout_tool_calls_bucket", [], PROC, (0.5, 0.99)),
                description="function_call items of each rollout's response.output."),
            timeseries("Model-call latency by server and dialect (p50, p99)", quantiles(
                MODEL_CALL + "_bucket", ["nemo_gym_server_name", "nemo_gym_model_call_dialect"], PROC,
                legend="{{nemo_gym_server_name}} {{nemo_gym_model_call_dialect}}"), unit="ms",
                description="Every captured call whose latency is known, failed calls included."),
            timeseries("Time to first token by server and dialect (p50, p99)", quantiles(
                TTFT + "_bucket", ["nemo_gym_server_name", "nemo_gym_model_call_dialect"], PROC,
                legend="{{nemo_gym_server_name}} {{nemo_gym_model_call_dialect}}"), unit="ms",
                description="Streamed responses only."),
            timeseries("Model calls by server and outcome", [
                rate_by("nemo_gym_server_name, nemo_gym_model_call_outcome", f"{MODEL_CALL}_count", "{{nemo_gym_server_name}} {{nemo_gym_model_call_outcome}}")], unit="ops", stack=True,
                description="ok, or the error category of a failed call. Calls whose latency is unknown are not counted here."),
            timeseries("Model-call tokens per second by server and type", [
                rate_by("nemo_gym_server_name, nemo_gym_model_call_token_type", f"{MC_TOKENS}_sum", "{{nemo_gym_server_name}} {{nemo_gym_model_call_token_type}}")], unit="short",
                description="Successful calls only. reasoning is part of output: never add the types up."),
            timeseries("Model-call tokens per call by server and type (mean)", [
                mean_by("nemo_gym_server_name, nemo_gym_model_call_token_type", MC_TOKENS, "{{nemo_gym_server_name}} {{nemo_gym_model_call_token_type}}")]),
            timeseries("Model-call finish reasons", [
                rate_by("nemo_gym_model_call_finish_reason", "gym_model_call_finish_total", "{{nemo_gym_model_call_finish_reason}}")], unit="ops", stack=True,
                description="As the provider reported it (stop, length, tool_calls, end_turn, max_tokens, ...); failed calls record none."),
        ],
    },
    {
        "uid": "gym-concurrency-memory",
        "title": "Gym / Concurrency and memory",
        "description": "Concurrency limits (MeteredSemaphore) of Gym components: slots, waiters, admission timeouts and cancellations; memory of server process trees and of the host.",
        "panels": [
            timeseries("Limit and active slots", [
                value_by(LIMIT_BY, "gym_concurrency_limit", "limit " + LIMIT_LEGEND),
                value_by(LIMIT_BY, "gym_concurrency_active", "active " + LIMIT_LEGEND)],
                description="By component and limit name (and server, for a limit that belongs to one), summed over processes."),
            timeseries("Queue depth (callers waiting for a slot)", [
                value_by(LIMIT_BY, "gym_concurrency_queue_depth", LIMIT_LEGEND)],
                description="A queue that stays above 0 means the limit is the bottleneck."),
            timeseries("Available slots", [
                value_by(LIMIT_BY, "gym_concurrency_available", LIMIT_LEGEND)],
                description="limit - active; negative when a limit shrank below what is held."),
            timeseries("Utilisation (active / limit)", [
                q(f"sum by ({LIMIT_BY}) (gym_concurrency_active{{{PROC}}}) / sum by ({LIMIT_BY}) (gym_concurrency_limit{{{PROC}}})",
                  LIMIT_LEGEND)], unit="percentunit"),
            timeseries("Admission timeouts and cancellations", [
                rate_by(LIMIT_BY, "gym_concurrency_admission_timeouts_total", "timeouts " + LIMIT_LEGEND),
                rate_by(LIMIT_BY, "gym_concurrency_admission_cancelled_total", "cancelled " + LIMIT_LEGEND)],
                unit="ops", description="Waits for a slot that timed out (limits with an admission timeout only) or were cancelled."),
            timeseries("Server memory by server and type", [
                value_by("nemo_gym_server_name, memory_type", "gym_server_memory_usage", "{{nemo_gym_server_name}} {{memory_type}}")], unit="bytes",
                description="Each server's process tree, latest sample: rss (resident set) and pss (proportional set, where sampled). Never add rss and pss."),
            timeseries("Server sampled peak memory by server and type", [
                value_by("nemo_gym_server_name, memory_type", "gym_server_memory_sampled_peak", "{{nemo_gym_server_name}} {{memory_type}}", agg="max")], unit="bytes",
                description="The highest of the samples (not a true peak between samples); the largest process tree of the server."),
            timeseries("Processes per server", [
                value_by("nemo_gym_server_name", "gym_server_processes", "{{nemo_gym_server_name}}")],
                description="Processes in each server's process tree (workers and their children included)."),
            timeseries("Host memory", [
                value_by("host_name", f"gym_host_memory_{m}", "{{host_name}} " + m.replace("_", " "), agg="max")
                for m in ("usage", "available", "total", "sampled_peak")], unit="bytes",
                description="Latest samples of each host; several processes that sample one host give one line."),
            timeseries("Host memory in use (share of total)", [
                q(f"max by (host_name) (gym_host_memory_usage{{{PROC}}}) / max by (host_name) (gym_host_memory_total{{{PROC}}})",
                  "{{host_name}}")], unit="percentunit"),
        ],
    },
    {
        "uid": "gym-scaling",
        "title": "Gym / Scaling",
        "description": "Where scaling stops: rollout throughput against concurrency beside Gym's model calls, the model server's queue, KV cache and latencies (vLLM), GPUs (dcgm-exporter) and the node (node_exporter).",
        "panels": [
            timeseries("Rollout throughput", [
                q(f"sum(rate(gym_rollout_completed_total{{{PROC}}}[{RI}]))", "completed/s")], unit="ops",
                description="Rollouts completed per second, every outcome."),
            timeseries("Rollouts active and resident (driver)", [
                q(f"sum(gym_driver_rollouts_active{{{PROC}}})", "active"),
                q(f"sum(gym_driver_rollouts_resident{{{PROC}}})", "resident")],
                description="The concurrency the driver runs at: throughput should follow active; where it stops following, a tier is saturated."),
            timeseries("Throughput per active rollout", [
                q(f"sum(rate(gym_rollout_completed_total{{{PROC}}}[{RI}])) / sum(gym_driver_rollouts_active{{{PROC}}})", "completed/s per active")],
                unit="ops", description="Falls as concurrency rises once a tier is saturated."),
            timeseries("Admission wait (p50, p99) and rollouts waiting", quantiles("gym_driver_admission_duration_ms_bucket", [], PROC)
                + [q(f"sum(rate(gym_driver_admission_duration_ms_sum{{{PROC}}}[{RI}])) / 1000", "waiting (mean)")], unit="ms",
                description="How long rollouts wait for the driver to admit them; waiting: ms of waiting per second / 1000, the mean number of rollouts waiting (Little's law)."),
            timeseries("Gym model-call latency by server (p50, p99)", quantiles(
                MODEL_CALL + "_bucket", ["nemo_gym_server_name"], PROC, legend="{{nemo_gym_server_name}}"), unit="ms",
                description="As Gym sees its calls to the model server, failed calls included: queueing in the model server shows here first."),
            timeseries("Gym time to first token by server (p50, p99)", quantiles(
                TTFT + "_bucket", ["nemo_gym_server_name"], PROC, legend="{{nemo_gym_server_name}}"), unit="ms",
                description="Streamed calls only."),
            timeseries("vLLM requests running and waiting", [
                value_by(VLLM_BY, "vllm:num_requests_running", "running {{job}} {{model_name}}", sel=INFRA),
                value_by(VLLM_BY, "vllm:num_requests_waiting", "waiting {{job}} {{model_name}}", sel=INFRA)],
                description="vllm:num_requests_running and vllm:num_requests_waiting: waiting above 0 means the engine's batch is full."),
            timeseries("vLLM KV-cache usage", [
                q(f"max by ({VLLM_BY}) {KV_CACHE}", "{{job}} {{model_name}}")], unit="percentunit",
                description="vllm:kv_cache_usage_perc (vLLM V1; gpu_cache_usage_perc before): near 1, requests wait or are preempted."),
            timeseries("vLLM time to first token (p50, p99)", infra_quantiles("vllm:time_to_first_token_seconds_bucket", VLLM_BY, "{{job}} {{model_name}}"),
                unit="s", description="The engine's own, to compare with Gym's: the difference is time spent between Gym and the engine."),
            timeseries("vLLM end-to-end request latency (p50, p99)", infra_quantiles("vllm:e2e_request_latency_seconds_bucket", VLLM_BY, "{{job}} {{model_name}}"),
                unit="s"),
            timeseries("vLLM tokens per second", [
                rate_by(VLLM_BY, "vllm:prompt_tokens_total", "prompt {{job}} {{model_name}}", sel=INFRA),
                rate_by(VLLM_BY, "vllm:generation_tokens_total", "generation {{job}} {{model_name}}", sel=INFRA)],
                description="Prefill and generated tokens: flat while concurrency rises, the engine is at its capacity."),
            timeseries("GPU utilisation (dcgm-exporter)", [
                value_by(GPU_DCGM_BY, "DCGM_FI_DEV_GPU_UTIL", "{{Hostname}} GPU {{gpu}}", sel=INFRA, agg="max")], unit="percent",
                description="DCGM_FI_DEV_GPU_UTIL, in percent."),
            timeseries("GPU memory used and free (dcgm-exporter)", [
                value_by(GPU_DCGM_BY, "DCGM_FI_DEV_FB_USED", "used {{Hostname}} GPU {{gpu}}", sel=INFRA, agg="max"),
                value_by(GPU_DCGM_BY, "DCGM_FI_DEV_FB_FREE", "free {{Hostname}} GPU {{gpu}}", sel=INFRA, agg="max")], unit="mbytes",
                description="DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE, framebuffer memory in MiB. vLLM reserves most of it up front: the KV-cache panel says how full it is."),
            timeseries("Node CPU busy", [
                q(f'1 - avg by (job, instance) (rate(node_cpu_seconds_total{{{INFRA}, mode="idle"}}[{RI}]))', "{{job}} {{instance}}")],
                unit="percentunit", description="node_cpu_seconds_total outside idle, averaged over the node's CPUs."),
            timeseries("Node memory in use", [
                q(f"1 - sum by (job, instance) (node_memory_MemAvailable_bytes{{{INFRA}}}) / sum by (job, instance) (node_memory_MemTotal_bytes{{{INFRA}}})",
                  "{{job}} {{instance}}")], unit="percentunit",
                description="1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes."),
            timeseries("Which tier saturates first", [
                value_by("job", f"gym:scaling_{tier}_saturated", f"{tier.replace('_', ' ')} {{{{job}}}}", sel=INFRA, agg="max")
                for tier in ("model_server", "gym_side", "node")],
                description="The recording rules of deploy/prometheus/gym.rules.yaml (docs/alerts.md, \"Where scaling stops\"), 1 while a tier is saturated: the first line to rise names the tier that stopped scaling."),
        ],
    },
    {
        "uid": "gym-inflight",
        "title": "Gym / Rollouts in flight",
        "description": "The flight recorder (the gymrollouts connector, from Gym's spans): rollouts in flight and stalled by stage and server, stalls, the oldest rollout in flight.",
        "per_run": True,
        "panels": [
            timeseries("Rollouts in flight by stage and server", [
                value_by("nemo_gym_server_name, nemo_gym_rollout_stage", "gym_rollout_in_flight", "{{nemo_gym_server_name}} {{nemo_gym_rollout_stage}}", sel=RUN)], stack=True,
                description="Rollouts whose spans arrive and whose gym.rollout span has not; the stage and server of each rollout's last span received."),
            timeseries("Stalled rollouts by server", [
                value_by("nemo_gym_server_name", "gym_rollout_stalled", "{{nemo_gym_server_name}}", sel=RUN)], stack=True,
                description="Rollouts in flight with no span for longer than the connector's stall_after; the alert GymRolloutsStalled fires on them."),
            timeseries("Stalls per minute by server", [
                q(f"sum by (nemo_gym_server_name) (rate(gym_rollout_stalls_total{{{RUN}}}[{RI}])) * 60", "{{nemo_gym_server_name}}")],
                description="Rollouts that stalled, per minute (one that resumes and stalls again counts again)."),
            timeseries("Oldest rollout in flight", [
                value_by("nemo_run_id", "gym_rollout_oldest_in_flight_age", "{{nemo_run_id}}", sel=RUN, agg="max")], unit="s",
                description="Since the collector received its first span."),
            table("Stalled rollouts", [
                q(f"sum by (nemo_run_id, nemo_gym_server_name, nemo_gym_rollout_stage) (gym_rollout_stalled{{{RUN}}}) > 0",
                  instant=True, fmt="table")],
                description="Now, by run, server and stage. The connector's log record of each stall (event gym.rollout.stalled) names the rollout and links its trace."),
        ],
    },
    {
        "uid": "gym-cost",
        "title": "Gym / Cost",
        "description": "What runs cost at your prices (the gym receiver's prices, USD per million tokens; never built in): by run, benchmark and model, per scored rollout, full rewards per USD, tokens without a price.",
        "per_run": True,
        "panels": [
            stat("Cost by run", [
                q(f"sum by (nemo_run_id) (gym:cost_usd:sum{{{COST}}})", "{{nemo_run_id}}")], unit="currencyUSD",
                description="USD of the priced tokens of each run's rollouts (Gym's run files) since it began: gym:cost_usd:sum."),
            timeseries("Cost by benchmark", [
                cost_by_bench("gym:cost_usd:sum")], unit="currencyUSD",
                description="USD by run and benchmark; per model: (input - cached_input) x its price + cached_input x its price + (output - reasoning) x its price + reasoning x its price, prices in USD per million tokens."),
            timeseries("Cost per scored rollout", [
                cost_by_bench("gym:cost_per_scored_rollout:usd")], unit="currencyUSD",
                description="The benchmark's cost over its scored rollouts: failed ones cost too, and are paid for by the scored."),
            timeseries("Full rewards per USD", [
                cost_by_bench("gym:cost_full_rewards_per_usd:ratio")],
                description="Unmasked rollouts with reward 1 per USD: the reward per dollar of a pass/fail benchmark (rewards 0 or 1). gymrun summary --prices gives the reward per dollar of any reward."),
            timeseries("Cost by model (tokens x price)", [
                q(f"sum by (gen_ai_response_model) (gym:cost_usd:by_model{{{COST_MODEL}}})", "{{gen_ai_response_model}}")], unit="currencyUSD", stack=True),
            timeseries("Tokens by model and type", [
                value_by("gen_ai_response_model, gen_ai_token_type", f"{TOKENS}_sum", "{{gen_ai_response_model}} {{gen_ai_token_type}}", sel=RUN)],
                description="What the cost is made of; never summed across types (reasoning is part of output, cached_input of input)."),
            timeseries("Tokens without a price", [
                q(f"sum by (gen_ai_response_model, gen_ai_token_type) (gym:cost_unpriced_tokens:sum{{{COST_MODEL}}})", "{{gen_ai_response_model}} {{gen_ai_token_type}}")],
                description="Tokens of models the price table does not name (or of responses that name no model): left out of every cost above, never priced by a guess."),
        ],
    },
    {
        "uid": "gym-evidence",
        "title": "Gym / Model calls, tools and sandboxes",
        "description": "What Gym's run files say of each rollout (ng_trajectory, ng_agent_observations): its model calls, tool calls, agent invocations, sandboxes and context compactions, and how much of it Gym could observe. The gym.evidence.* series: never Gym's own gym.model_call.* or gym.tool.* (docs/gym.md), so no panel counts a call twice.",
        "per_run": True,
        "panels": [
            timeseries("Model calls by model and outcome", [
                rate_by("gen_ai_response_model, nemo_gym_model_call_outcome", f"{EV}_model_calls_total", "{{gen_ai_response_model}} {{nemo_gym_model_call_outcome}}", sel=RUN)],
                unit="ops", stack=True, description="ok, or the call's error_category (rate_limit, timeout, upstream_error, ...)."),
            stat("Model calls since start, by status class", [
                q(f"sum by (nemo_gym_model_call_status_class) ({EV}_model_calls_total{{{RUN}}})", "{{nemo_gym_model_call_status_class}}", instant=True)],
                description="The class of each call's HTTP status code; none: the call states none."),
            timeseries("Model calls by finish reason", [
                rate_by("nemo_gym_model_call_finish_reason", f"{EV}_model_calls_total", "{{nemo_gym_model_call_finish_reason}}", sel=RUN)], unit="ops", stack=True),
            timeseries("Model-call duration by model (p50, p99)", quantiles(f"{EV}_model_call_duration_ms_bucket", ["gen_ai_response_model"], RUN,
                                                                             legend="{{gen_ai_response_model}}"), unit="ms"),
            timeseries("Time to first token by model (p50, p99)", quantiles(f"{EV}_model_call_ttft_ms_bucket", ["gen_ai_response_model"], RUN,
                                                                            legend="{{gen_ai_response_model}}"), unit="ms"),
            timeseries("Tokens per model call by type (mean)", [
                q(f"sum by (gen_ai_token_type) (rate({EV}_model_call_tokens_sum{{{RUN}}}[{RI}]))"
                  f" / sum by (gen_ai_token_type) (rate({EV}_model_call_tokens_count{{{RUN}}}[{RI}]))", "{{gen_ai_token_type}}")],
                description="Never summed across types: reasoning is part of output, cached_input of input."),
            timeseries("Tool calls by tool and status", [
                rate_by("nemo_gym_tool_name, nemo_gym_tool_status", f"{EV}_tool_calls_total", "{{nemo_gym_tool_name}} {{nemo_gym_tool_status}}", sel=RUN)],
                unit="ops", stack=True),
            timeseries("Tool-call duration by tool (p50, p99)", quantiles(f"{EV}_tool_call_duration_ms_bucket", ["nemo_gym_tool_name"], RUN,
                                                                          legend="{{nemo_gym_tool_name}}"), unit="ms",
                description="From the call's duration_ms, else its timestamps."),
            timeseries("Agent invocations by status", [
                rate_by("nemo_gym_agent_invocation_status, nemo_gym_agent_subagent", f"{EV}_agent_invocations_total",
                        "{{nemo_gym_agent_invocation_status}} subagent={{nemo_gym_agent_subagent}}", sel=RUN)], unit="ops", stack=True),
            timeseries("Sandboxes by role and outcome", [
                rate_by("nemo_gym_sandbox_role, nemo_gym_sandbox_outcome", f"{EV}_sandboxes_total", "{{nemo_gym_sandbox_role}} {{nemo_gym_sandbox_outcome}}", sel=RUN)],
                unit="ops", stack=True),
            timeseries("Sandbox wall time by role (p50, p99)", quantiles(f"{EV}_sandbox_wall_time_s_bucket", ["nemo_gym_sandbox_role"], RUN,
                                                                          legend="{{nemo_gym_sandbox_role}}"), unit="s"),
            timeseries("Sandbox CPU time by role (p50, p99)", quantiles(f"{EV}_sandbox_cpu_time_s_bucket", ["nemo_gym_sandbox_role"], RUN,
                                                                         legend="{{nemo_gym_sandbox_role}}"), unit="s"),
            timeseries("Sandbox peak memory by role (p50, p99)", quantiles(f"{EV}_sandbox_peak_memory_mib_bucket", ["nemo_gym_sandbox_role"], RUN,
                                                                            legend="{{nemo_gym_sandbox_role}}"), unit="mbytes",
                description="The measured high-water mark, never the configured limit."),
            timeseries("Context compactions by outcome", [
                rate_by("nemo_gym_compaction_outcome", f"{EV}_compactions_total", "{{nemo_gym_compaction_outcome}}", sel=RUN)], unit="ops", stack=True),
            timeseries("Rows with a trajectory", [
                q(f"sum({EV}_rows_total{{{RUN}, nemo_gym_evidence_trajectory=\"true\"}}) / sum({EV}_rows_total{{{RUN}}})", "with ng_trajectory")],
                unit="percentunit", description="The share of main-output rows that carry their rollout's trajectory (an older Gym writes none)."),
            timeseries("Gaps by code", [
                rate_by("nemo_gym_evidence_gap_code", f"{EV}_gaps_total", "{{nemo_gym_evidence_gap_code}}", sel=RUN)], unit="ops", stack=True,
                description="What Gym could not observe or join; other: a producer's own code."),
            timeseries("Evidence problems", [
                rate_by("nemo_gym_evidence_problem", f"{EV}_problems_total", "{{nemo_gym_evidence_problem}}", sel=RUN)], unit="ops", stack=True,
                description="Items or fields not as Gym writes them: left out, the rest of the row counts; each row's first is named in the collector's log."),
        ],
    },
    {
        "uid": "gym-collector",
        "title": "Gym / Collector",
        "description": "otelcol-gym itself: lines accepted and rejected, unknown events, overflowed series, resources held, metric points.",
        "collector": True,
        "panels": [
            timeseries("Lines accepted", [
                rate_by("receiver", "otelcol_receiver_gym_lines_accepted", "{{receiver}}", sel=COL)], unit="ops"),
            timeseries("Lines rejected by reason", [
                rate_by("receiver, reason", "otelcol_receiver_gym_lines_rejected", "{{receiver}} {{reason}}", sel=COL)],
                unit="ops", stack=True),
            timeseries("Unknown events", [
                rate_by("receiver", "otelcol_receiver_gym_lines_unknown", "{{receiver}}", sel=COL)], unit="ops"),
            timeseries("Measurements and points folded into overflow series", [
                rate_by("receiver", "otelcol_receiver_gym_measurements_overflowed", "{{receiver}}", sel=COL),
                q(f'sum (rate(otelcol_processor_gymattrs_points_overflowed{{job=~"$collector"}}[{RI}]))', "gymattrs")], unit="ops"),
            timeseries("Resources (Gym processes) held", [
                value_by("receiver", "otelcol_receiver_gym_resources", "{{receiver}}", sel=COL)]),
            timeseries("Metric points accepted and refused", [
                rate_by("receiver, transport", "otelcol_receiver_accepted_metric_points", "accepted {{receiver}} {{transport}}", sel=COL),
                rate_by("receiver, transport", "otelcol_receiver_refused_metric_points", "refused {{receiver}} {{transport}}", sel=COL)],
                unit="ops"),
            timeseries("gymattrs: attributes removed, values normalised", [
                q(f'sum (rate(otelcol_processor_gymattrs_attributes_removed{{job=~"$collector"}}[{RI}]))', "attributes removed"),
                q(f'sum (rate(otelcol_processor_gymattrs_values_normalised{{job=~"$collector"}}[{RI}]))', "values normalised")], unit="ops"),
        ],
    },
]


def variable(name, label, query):
    return {
        "name": name, "label": label, "type": "query",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "query": {"query": query, "refId": name},
        "definition": query,
        "includeAll": True, "multi": True, "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "refresh": 2, "sort": 1, "regex": "", "hide": 0, "options": [],
    }


# The variables of a Gym dashboard read Gym's series only (gym_*: never the collector's own
# metrics, its process stats or target_info), and never offer an empty value: a series
# without the label is still in every panel through All (.*).
GYM_ONLY = '__name__=~"gym_.+"'


def templating(collector, instruments=(), per_run=False):
    ds = {
        "name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
        "hide": 0, "refresh": 1, "regex": "", "options": [],
    }
    if collector:
        return [ds,
                variable("collector", "Collector job", "label_values(otelcol_receiver_gym_lines_accepted, job)"),
                variable("receiver", "Receiver", 'label_values(otelcol_receiver_gym_lines_accepted{job=~"$collector"}, receiver)')]
    out = [ds, variable("run", "Run", f'label_values({{{GYM_ONLY}, nemo_run_id!=""}}, nemo_run_id)')]
    if not per_run:
        out += [
            variable("service", "Service", f'label_values({{{GYM_ONLY}, nemo_run_id=~"$run", job!=""}}, job)'),
            # A series without service.instance.id has the scrape target's address as instance
            # (honor_labels): the collector's, not a Gym process's.
            variable("instance", "Instance",
                     f'label_values({{{GYM_ONLY}, nemo_run_id=~"$run", job=~"$service", instance!="", instance!~"[0-9.]+:[0-9]+"}}, instance)')]
    sel = RUN if per_run else PROC
    for name, label, attr in ATTR_VARIABLES:
        names = "|".join(carriers(attr, instruments))
        if names:
            lab = label_of(attr)
            out.append(variable(name, label,
                                f'label_values({{__name__=~"{names}", {sel}, {lab}!=""}}, {lab})'))
    return out


# A selector of a series: its name and its matchers.
SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}")
# A name that looks like a Gym (or process) series, with what follows it.
SCHEMA_NAME = re.compile(r"\b((?:gym|process)_[a-zA-Z0-9_]*)\b(\{?)")


def scope_selectors(expr, where):
    """expr with the matcher of each attribute variable added to every selector of an
    instrument that carries its attribute, and the instruments it reads. Fails on a Gym name that
    is no series of metadata.yaml's instruments or has no selector (where: for the message)."""
    for m in SCHEMA_NAME.finditer(expr):
        if m.group(1) not in SERIES or not m.group(2):
            raise SystemExit(f"{where}: {m.group(1)} is not a selector of an instrument of metadata.yaml: {expr}")
    used = set()

    def one(m):
        name, matchers = m.group(1), m.group(2).strip()
        inst = SERIES.get(name)
        if inst is None:
            return m.group(0)
        used.add(inst)
        add = []
        for var, _, attr in ATTR_VARIABLES:
            if attr in INSTRUMENTS[inst]["attributes"]:
                matcher = f'{label_of(attr)}=~"${var}"'
                if matcher not in matchers:
                    add.append(matcher)
        return name + "{" + ", ".join(([matchers] if matchers else []) + add) + "}"

    return SELECTOR.sub(one, expr), used


# Options that Grafana's schema requires (calcs, justifyMode, the heatmap's color, legend,
# tooltip and exemplars, a link's icon and tooltip) are written at Grafana's defaults.
def panel_json(pid, p, x, y):
    ds = {"type": "prometheus", "uid": "${datasource}"}
    targets = []
    for i, t in enumerate(p["targets"]):
        tj = {"refId": chr(ord("A") + i), "datasource": ds, "expr": t["expr"], "legendFormat": t["legend"] or "__auto",
              "range": not t["instant"], "instant": t["instant"]}
        if t["format"]:
            tj["format"] = t["format"]
        targets.append(tj)
    out = {"id": pid, "type": p["kind"], "title": p["title"], "datasource": ds,
           "gridPos": {"h": 8, "w": 12, "x": x, "y": y}, "targets": targets}
    if p["description"]:
        out["description"] = p["description"]
    if p["kind"] == "timeseries":
        custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
                  "stacking": {"mode": "normal" if p["stack"] else "none", "group": "A"}}
        out["fieldConfig"] = {"defaults": {"unit": p["unit"], "custom": custom}, "overrides": []}
        out["options"] = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True, "calcs": []},
                          "tooltip": {"mode": "multi", "sort": "desc"}}
    elif p["kind"] == "stat":
        out["fieldConfig"] = {"defaults": {"unit": p["unit"]}, "overrides": []}
        out["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                          "colorMode": "value", "graphMode": "none", "textMode": "value_and_name",
                          "justifyMode": "auto", "wideLayout": True, "orientation": "auto",
                          "showPercentChange": False, "percentChangeColorMode": "standard"}
    elif p["kind"] == "heatmap":
        out["options"] = {"calculate": False, "yAxis": {"unit": p["unit"]},
                          "cellGap": 1, "rowsFrame": {"layout": "auto"},
                          "color": {"mode": "scheme", "scheme": "Oranges", "fill": "dark-orange",
                                    "exponent": 0.5, "steps": 64, "reverse": False},
                          "showValue": "auto", "legend": {"show": True}, "tooltip": {"mode": "single"},
                          "exemplars": {"color": "rgba(255,0,255,0.7)"}}
        out["fieldConfig"] = {"defaults": {}, "overrides": []}
    elif p["kind"] == "table":
        out["gridPos"]["w"] = 24
        out["fieldConfig"] = {"defaults": {"unit": p["unit"], "custom": {"align": "auto", "cellOptions": {"type": "auto"}, "inspect": False}},
                              "overrides": []}
        out["options"] = {"showHeader": True, "cellHeight": "sm", "frameIndex": 0,
                          "footer": {"show": False, "reducer": ["sum"], "countRows": False, "fields": ""}}
        # One row per series: its labels, and its value as "stalled"; the query's time column dropped.
        out["transformations"] = [{"id": "organize", "options": {"excludeByName": {"Time": True}, "renameByName": {"Value": "stalled"}}}]
    return out


def dashboard_json(d):
    panels, used = [], set()
    for i, p in enumerate(d["panels"]):
        if not d.get("collector"):
            for t in p["targets"]:
                t["expr"], u = scope_selectors(t["expr"], f'{d["uid"]}: {p["title"]}')
                used |= u
        panels.append(panel_json(i + 1, p, 12 * (i % 2), 8 * (i // 2)))
    return {
        "uid": d["uid"], "title": d["title"], "description": d["description"],
        "tags": ["nemo-gym", "otelcol-gym"], "timezone": "browser", "editable": True,
        "schemaVersion": 39, "version": 1, "refresh": "30s", "graphTooltip": 1,
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": templating(d.get("collector", False), used, d.get("per_run", False))},
        "annotations": {"list": []},
        "links": [{"type": "dashboards", "tags": ["nemo-gym"], "asDropdown": True, "title": "Gym dashboards",
                   "icon": "external link", "tooltip": "", "targetBlank": False,
                   "includeVars": True, "keepTime": True}],
        "panels": panels,
    }


def render(d):
    return json.dumps(dashboard_json(d), indent=2, sort_keys=False) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when a written dashboard differs from its definition")
    args = ap.parse_args()
    want = {d["uid"] + ".json": render(d) for d in DASHBOARDS}
    if args.check:
        stale = []
        for name, text in want.items():
            path = os.path.join(OUT, name)
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        extra = sorted(set(n for n in os.listdir(OUT) if n.endswith(".json")) - set(want)) if os.path.isdir(OUT) else []
        if stale or extra:
            print("deploy/grafana/dashboards is stale (run: python3 deploy/grafana/generate.py):",
                  ", ".join(stale + extra), file=sys.stderr)
            return 1
        print(f"deploy/grafana/dashboards: {len(want)} dashboards up to date")
        return 0
    os.makedirs(OUT, exist_ok=True)
    for name, text in want.items():
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote {len(want)} dashboards to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
