"""Writes the sample Gym runs of the rollout-files golden test (python3 make_samples.py).

The rows have the shape NeMo Gym's rollout collection writes: the whole Responses API request
and response, the trajectory, ng_perf, identity keys. Their mapped keys were chosen by hand to
cover the mapping; the bulk (long answers, tool calls, reasoning) only has to be skipped.
"""

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def dumps(row: dict, python_json: bool = False) -> str:
    # Gym writes rows with orjson (compact; NaN as null); a user's script may use json (NaN).
    if python_json:
        return json.dumps(row)
    return json.dumps(row, separators=(",", ":"), allow_nan=True)


def response(text: str, turns: int, tool_calls: int) -> dict:
    output = []
    for t in range(turns):
        output.append({"type": "reasoning", "id": f"rs_{t}", "summary": [{"type": "summary_text", "text": "Thinking about step %d. " % t * 20}]})
        if t < tool_calls:
            output.append({"type": "function_call", "call_id": f"call_{t}", "name": "python", "arguments": json.dumps({"code": "print(%d * 7)\n# \"quoted\" \\ backslash" % t})})
            output.append({"type": "function_call_output", "call_id": f"call_{t}", "output": "%d\n" % (t * 7)})
    output.append({"type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]})
    return {"id": "resp_abc", "object": "response", "model": "policy", "output": output, "usage": {"input_tokens": 812, "output_tokens": 2048}}


def main_row(i: int, reward, env="math_with_judge", agent="math_agent", masked=None, turns=2, tool_calls=1, old=False, extra=None) -> dict:
    text = ("The answer is %d. " % i) + "Let me verify this carefully, step by step, with care for \"edge\" cases. " * 60
    row = {
        "responses_create_params": {"input": [{"role": "system", "content": "You are a careful solver."}, {"role": "user", "content": "Problem %d: compute it." % i}], "tools": [{"type": "function", "name": "python", "parameters": {"type": "object"}}], "temperature": 1.0},
        "response": response(text, turns, tool_calls),
        "reward": reward,
        "expected_answer": str(i),
        "agent_ref": {"type": "responses_api_agents", "name": agent},
    }
    if masked is not None:
        row["mask_sample"] = masked
    if not old:
        row.update({
            "_ng_task_index": i // 2, "_ng_rollout_index": i % 2, "_ng_attempt_index": 0,
            "_ng_rollout_id": "r-%04d" % i, "_ng_run_id": "eval-2026-12-01-a",
            "_ng_environment_server": env,
            "ng_trajectory": {"turns": [{"turn_no": t, "answer": text[:200], "model_calls": [{"model_call_id": "mc-%d-%d" % (i, t)}]} for t in range(turns)]},
            "ng_perf": {"num_turns": turns, "num_tool_calls": tool_calls, "prompt_tokens": 812 * turns, "completion_tokens": 2048 * turns, "total_latency_ms": 1834.5 * turns},
        })
    if extra:
        row.update(extra)
    return row


def write(path: str, lines: list) -> None:
    with open(os.path.join(HERE, path), "w") as f:
        for line in lines:
            f.write(line + "\n")


def run1() -> None:
    os.makedirs(os.path.join(HERE, "run1"), exist_ok=True)
    with open(os.path.join(HERE, "run1", "eval_manifest.json"), "w") as f:
        json.dump({"run_id": "eval-2026-12-01-a", "config": {"num_repeats": 2}, "started_at": "2026-12-01T10:00:00Z"}, f)
    write("run1/eval.jsonl", [
        dumps(main_row(0, 1.0)),
        dumps(main_row(1, 0.0)),
        dumps(main_row(2, 0.5, masked=True)),
        dumps(main_row(3, 1.0, masked=False, turns=7, tool_calls=6)),
        dumps(main_row(4, 1.5, turns=1, tool_calls=0)),  # a reward above one
        dumps(main_row(5, -0.25, agent="code_agent", env="code_gen")),
        dumps(main_row(6, math.nan), python_json=True),  # NaN: unscored
        dumps(main_row(7, None, masked=True)),  # orjson's NaN: unscored
        dumps({k: v for k, v in main_row(8, 1.0).items() if k != "reward"}),  # no reward: unscored
        # A verifier that failed softly: failure keys on a scored row are not attributes.
        dumps(main_row(9, 0.0, extra={"failure_kind": "judge_unparseable", "failure_reason": "no verdict in the judge's answer"})),
        dumps(main_row(10, 1.0, env="", turns=3, tool_calls=3)),  # empty server: agent_ref.name
        "",
        dumps(main_row(11, 1.0, masked=True, turns=40, tool_calls=39)),
    ])
    # Not read: Gym's other files beside the main output.
    write("run1/eval_materialized_inputs.jsonl", [dumps(main_row(99, 1.0))])
    write("run1/eval_attempts.jsonl", [dumps(main_row(98, 1.0))])
    failures = [
        {"_ng_failure_class": "agent_request_failed", "_ng_failure_type": "aiohttp.ClientConnectorError", "failure_kind": "transport_unreachable", "_ng_failure_message": "Cannot connect to host 10.0.0.7:8000", "_ng_failure_terminal": False, "_ng_failure_http_status": None},
        {"_ng_failure_class": "agent_run_error", "_ng_failure_type": "RuntimeError", "_ng_failure_kind": "agent_run_error", "error": "Traceback (most recent call last):\n  ..." * 30},
        {"_ng_failure_class": "timeout", "_ng_failure_type": "asyncio.TimeoutError", "_ng_failure_record": {"stage": "agent", "failure": {"failure_kind": "agent_timeout", "failure_reason": "no answer in 1800 s"}}},
        # The first present of the three places wins.
        {"_ng_failure_class": "judge_failed", "_ng_failure_type": "JudgeError", "failure_kind": "judge_failed", "_ng_failure_kind": "verifier_error", "_ng_failure_record": {"failure": {"failure_kind": "cancelled"}}, "_ng_failure_http_status": 502},
        {"_ng_failure_class": "agent_request_failed", "_ng_failure_type": "httpx.ReadTimeout", "failure_kind": "lab_proxy:stalled", "_ng_failure_terminal": True},  # namespaced kind
        {"_ng_failure_class": "Agent Crashed!", "_ng_failure_type": "not a class name", "failure_kind": "made_up_kind"},  # all three bounded
        {"_ng_failure_class": "agent_request_failed"},  # class only
    ]
    lines = []
    for i, f in enumerate(failures):
        row = {"responses_create_params": {"input": [{"role": "user", "content": "Problem %d" % (20 + i)}]}, "agent_ref": {"type": "responses_api_agents", "name": "math_agent"}, "_ng_task_index": 20 + i, "_ng_rollout_index": 0, "_ng_attempt_index": 1, "_ng_run_id": "eval-2026-12-01-a", "_ng_environment_server": "math_with_judge"}
        row.update(f)
        lines.append(dumps(row))
    write("run1/eval_failures.jsonl", lines)
    verdicts = [
        {"_ng_task_index": 0, "_ng_rollout_index": 0, "rollout_id": "r-0000", "verdict": "healthy", "findings": [], "unobserved": ["trajectory_capture_mismatch"], "capture_observed": False},
        {"_ng_task_index": 0, "_ng_rollout_index": 1, "rollout_id": "r-0001", "verdict": "unhealthy", "findings": [
            {"check": "model_call_zero_completion_tokens", "subject": {"_ng_task_index": 0, "_ng_rollout_index": 1}, "locator": {"call_index": 2}, "detail": {"completion_tokens": 0}},
            {"check": "model_call_zero_completion_tokens", "subject": {"_ng_task_index": 0, "_ng_rollout_index": 1}, "locator": {"call_index": 5}, "detail": {}},
            {"check": "agent_turn_hollow", "subject": {"_ng_task_index": 0}, "detail": {}},  # ignored by the configuration
        ], "unobserved": []},
        {"_ng_task_index": 1, "_ng_rollout_index": 0, "rollout_id": "r-0002", "verdict": "unhealthy", "findings": ["rollout_ended_on_failed_model_call", {"check_id": "model_call_failed"}, "lab_check", "something_new", "another_new"]},
        {"_ng_task_index": 1, "_ng_rollout_index": 1, "rollout_id": "r-0003", "verdict": "unobserved", "findings": [], "unobserved": ["model_call_failed", "model_call_zero_completion_tokens"]},
    ]
    write("run1/rollout_verdicts.jsonl", [dumps(v) for v in verdicts])


def run2() -> None:
    # An older Gym: no _ng_* keys, no ng_perf; two main outputs in one directory, so the
    # health report is a run of its own.
    os.makedirs(os.path.join(HERE, "run2"), exist_ok=True)
    write("run2/train.jsonl", [dumps(main_row(i, [1.0, 0.0, 0.75][i % 3], agent="old_agent", old=True)) for i in range(5)])
    write("run2/valid.jsonl", [dumps(main_row(i, 1.0, agent="old_agent", old=True, masked=True)) for i in range(2)])
    write("run2/rollout_verdicts.jsonl", [dumps({"_ng_task_index": 0, "_ng_rollout_index": 0, "verdict": "healthy", "findings": [], "_ng_run_id": "report-run"})])


run1()
run2()
