#!/usr/bin/env python3
"""What Gym's main-output rows say of their responses, counted with Python's json module.

Usage: python3 tokens.py FILE [FILE ...]   (prints one JSON object)

Written from the run-file mapping of gym.rollout.tokens, gym.rollout.finish_total and
gym.rollout.tool_calls (docs/metrics.md), without any of the collector's code, so that a test can
hold the collector's totals to it. A line that is not a JSON object is counted as rejected. A
last line without its newline is a row still being written: the collector waits for its newline
(docs/receiver.md), and so does this count (three of Gym's example files end so).
"""
from __future__ import annotations

import json
import math
import sys
from collections import defaultdict

# gen_ai.token.type -> where the Responses API, then Chat Completions, put it in response.usage.
TOKEN_PATHS = {
    "input": (("input_tokens",), ("prompt_tokens",)),
    "output": (("output_tokens",), ("completion_tokens",)),
    "reasoning": (("output_tokens_details", "reasoning_tokens"), ("completion_tokens_details", "reasoning_tokens")),
    "cached_input": (("input_tokens_details", "cached_tokens"), ("prompt_tokens_details", "cached_tokens")),
}


# nemo.gym.rollout.finish_reason's values (a reason outside them is "other"), and the cap of a
# model name (gen_ai.response.model: 256 bytes, cut at a character boundary).
FINISH_REASONS = {
    "stop", "length", "tool_calls", "content_filter", "function_call", "completed", "incomplete", "max_output_tokens",
    "end_turn", "max_tokens", "tool_use", "stop_sequence", "pause_turn", "refusal",
    "failed", "cancelled", "in_progress", "queued", "unknown",
}
MODEL_MAX_BYTES = 256


def dig(obj, path):
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def given(v) -> bool:
    """A count is given when it is a number (not a bool, not NaN)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def nonempty(v) -> str | None:
    return v if isinstance(v, str) and v else None


def main(paths: list[str]) -> dict:
    tokens = defaultdict(lambda: [0, 0])  # type -> [sum, samples]
    by_model = defaultdict(int)  # "type|model" -> sum ("" when the row names no model)
    finish = defaultdict(int)  # reason -> rows
    calls = [0, 0]  # [function calls, rows whose output is a list]
    rows = rejected = responses = 0
    for path in paths:
        with open(path, "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):
                    continue  # not complete yet
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw)
                except ValueError:
                    rejected += 1
                    continue
                if not isinstance(row, dict):
                    rejected += 1
                    continue
                rows += 1
                resp = row.get("response")
                if not isinstance(resp, dict):
                    continue
                responses += 1
                model = (nonempty(resp.get("model")) or "").encode()[:MODEL_MAX_BYTES].decode("utf-8", "ignore")
                usage = resp.get("usage")
                for typ, spellings in TOKEN_PATHS.items():
                    for path_ in spellings:
                        v = dig(usage, path_)
                        if given(v):
                            tokens[typ][0] += int(v)
                            tokens[typ][1] += 1
                            by_model[typ + "|" + model] += int(v)
                            break
                details = resp.get("incomplete_details")
                reason = nonempty(details.get("reason")) if isinstance(details, dict) else None
                reason = reason or nonempty(resp.get("status")) or "unknown"
                finish[reason if reason in FINISH_REASONS else "other"] += 1
                output = resp.get("output")
                if isinstance(output, list):
                    calls[1] += 1
                    calls[0] += sum(1 for item in output if isinstance(item, dict) and item.get("type") == "function_call")
    return {
        "rows": rows,
        "rejected": rejected,
        "responses": responses,
        "tokens": {k: {"sum": v[0], "samples": v[1]} for k, v in sorted(tokens.items())},
        "tokens_by_model": dict(sorted(by_model.items())),
        "finish": dict(sorted(finish.items())),
        "tool_calls": {"sum": calls[0], "samples": calls[1]},
    }


if __name__ == "__main__":
    json.dump(main(sys.argv[1:]), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
