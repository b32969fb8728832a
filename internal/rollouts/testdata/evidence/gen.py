"""Writes eval.jsonl: main-output rows shaped like NeMo Gym's (nemo_gym/rollout_observability.py:
TrajectoryRecord as ng_trajectory, AgentObservationBundle as ng_agent_observations), for the
golden tests of the rollout evidence (evidence_test.go, cmd/gymrun). python3 gen.py > eval.jsonl"""
import json

T0 = 1767225600.0  # 2026-01-01T00:00:00Z
ROOT, SUB = "inv-root", "inv-sub"
MODEL_REF = {"type": "responses_api_models", "name": "policy_model"}


def payload(n):
    # A request or response payload: what makes a real row hundreds of KiB, never read.
    return {"input": [{"role": "user", "content": "x" * n}], "model": "m", "tools": [{"type": "function", "name": "bash"}]}


def model_call(i, start, dur, **meta):
    tokens = meta.pop("tokens", None)
    call = {
        "model_call_id": f"mc-{i}",
        "started_at": start,
        "completed_at": start + dur / 1000,
        "duration_ms": dur,
        "request": payload(200),
        "response": {"id": f"resp-{i}", "output": [{"type": "message", "content": [{"type": "output_text", "text": "y" * 300}]}]},
        "response_metadata": {"response_id": f"resp-{i}", "model_ref": MODEL_REF, **meta},
        "token_stats": tokens or {},
    }
    return call


full_traj = {
    "schema_version": "1.0",
    "task_id": "task-0",
    "rollout_id": "0-0",
    "invocations": [
        {"kind": "agent_invocation", "invocation_id": ROOT, "status": "completed", "duration_ms": 9000.0,
         "model_calls": [{"model_call_id": "mc-0"}, {"model_call_id": "mc-1"}], "conversation": [{"role": "user", "content": "solve"}]},
        {"kind": "agent_invocation", "invocation_id": SUB, "parent_invocation_id": ROOT, "spawned_by_tool_call_id": "tc-1",
         "status": "failed", "error_type": "TimeoutError", "model_calls": [{"model_ref": MODEL_REF, "response_id": "resp-2"}], "conversation": []},
    ],
    "turns": [
        {"invocation_id": ROOT, "task_id": "task-0", "rollout_id": "0-0", "turn_no": 1, "timestamp": T0 + 1,
         "question": "q" * 100, "answer": "a" * 100, "reasoning_content": "r" * 100, "resolved": True, "step_count": 2,
         "model_calls": [{"model_call_id": "mc-0"}]},
    ],
    "model_calls": [
        model_call(0, T0, 1200.0, model="gpt-oss-120b", dialect="responses", status_code=200, response_status="completed",
                   finish_reason="tool_calls", latency_ttft_ms=300.0,
                   tokens={"prompt_tokens": 1000, "completion_tokens": 200, "reasoning_tokens": 50, "total_tokens": 1200, "cached_tokens": 512}),
        model_call(1, T0 + 5, 2500.0, model="gpt-oss-120b", dialect="responses", status_code=200, response_status="completed",
                   finish_reason="stop", tokens={"prompt_tokens": 1500, "completion_tokens": 100, "total_tokens": 1600}),
        model_call(2, T0 + 6, 40.0, model="gpt-oss-120b", dialect="chat", status_code=429, error_category="rate_limit"),
    ],
    "tool_calls": [
        {"kind": "tool_call", "invocation_id": ROOT, "tool_call_id": "tc-0", "sandbox_id": "sb-0", "tool_name": "bash",
         "started_at": T0 + 2, "completed_at": T0 + 3.5, "duration_ms": 1500.0, "timing_source": "executor",
         "status": "completed", "output": "o" * 500},
        {"kind": "tool_call", "invocation_id": ROOT, "tool_call_id": "tc-1", "tool_name": "spawn_agent",
         "started_at": T0 + 6, "completed_at": T0 + 8, "timing_source": "harness", "status": "failed",
         "error_type": "TimeoutError", "output": None},
    ],
    "gaps": [
        {"code": "model_call_reference_unmatched", "invocation_id": SUB, "detail": "resp-9 not captured"},
    ],
}

observations = {
    "source": "claude_code_agent",
    "records": [
        # Merged into ng_trajectory by Gym and kept here too: one each.
        full_traj["invocations"][0],
        {k: v for k, v in full_traj["tool_calls"][0].items() if k != "output"},
        {"kind": "sandbox", "role": "agent", "provider": "docker", "sandbox_id": "sb-0", "outcome": "completed",
         "exit_code": 0, "wall_time_s": 42.5, "cpu_time_s": 12.25, "peak_memory_mib": 900.0, "resource_usage_source": "cgroup"},
        {"kind": "sandbox", "role": "verifier", "provider": "docker", "sandbox_id": "sb-1", "outcome": "oom",
         "exit_code": 137, "wall_time_s": 3.0, "peak_memory_mib": 4096.0, "error_type": "OOMKilled"},
        {"kind": "context_compaction", "invocation_id": ROOT, "observed_at": T0 + 4, "trigger": "auto",
         "tokens_before": 120000, "tokens_after": 30000, "outcome": "completed", "summary": "s" * 300,
         "model_calls": [{"model_call_id": "mc-1"}]},
    ],
    "gaps": [
        {"code": "model_call_reference_unmatched", "invocation_id": SUB, "detail": "resp-9 not captured"},
        {"code": "lab_custom_gap", "detail": "a producer's own code"},
    ],
}


def row(i, **extra):
    r = {"responses_create_params": {"input": [{"role": "user", "content": "task"}]},
         "response": {"id": f"r{i}", "model": "gpt-oss-120b", "status": "completed", "output": [],
                      "usage": {"input_tokens": 10, "output_tokens": 5}},
         "reward": 1.0, "_ng_task_index": i, "_ng_rollout_index": 0, "_ng_run_id": "run-ev",
         "_ng_environment_server": "swe", "agent_ref": {"type": "responses_api_agents", "name": "swe_agent"},
         "ng_perf": {"num_turns": 1, "num_tool_calls": 2, "total_latency_ms": 9000.0}}
    r.update(extra)
    return r


bad_traj = {
    "schema_version": "1.0", "task_id": "task-2", "rollout_id": "2-0",
    "invocations": [
        {"kind": "agent_invocation", "invocation_id": "a", "parent_invocation_id": "b", "status": "completed"},
        {"kind": "agent_invocation", "invocation_id": "b", "parent_invocation_id": "a", "status": "completed"},
        {"kind": "agent_invocation", "invocation_id": "a", "status": "failed"},
        {"kind": "agent_invocation", "status": "completed"},
    ],
    "model_calls": [
        "not an object",
        {"model_call_id": "x", "started_at": T0 + 10, "completed_at": T0 + 9, "duration_ms": "fast",
         "response_metadata": {"model": "m2", "dialect": "messages", "status_code": 200, "finish_reason": "end_turn"},
         "token_stats": {"prompt_tokens": -5, "completion_tokens": 7}},
    ],
    "tool_calls": [{"kind": "tool_call", "invocation_id": "a", "tool_name": "bash", "duration_ms": 5.0, "status": "completed"}],
    "gaps": [],
}

rows = [
    row(0, ng_trajectory=full_traj, ng_agent_observations=observations),
    row(1),  # an older Gym: no evidence
    row(2, ng_trajectory=bad_traj, ng_agent_observations=[]),
]
for r in rows:
    print(json.dumps(r, separators=(",", ":")))
