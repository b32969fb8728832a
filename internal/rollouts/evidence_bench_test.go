package rollouts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Main-output rows with their rollout evidence, shaped like Gym's (ng_trajectory with its
// invocations, turns, model calls with their request and response payloads, tool calls with
// their outputs, and ng_agent_observations with the same records, sandboxes and a compaction),
// of 100, 300 and 500 KiB: nearly all of it payloads the reader skips. This file uses only the
// RowDecoder's API that a tree before the evidence has too: bench/compare.sh copies it into the
// base tree, so `make bench-compare` reads the same rows with today's reader (which skips the
// two objects whole) and with the tree's (which reads their items).
//
//	go test ./internal/rollouts -run '^$' -bench EvidenceRows -benchmem

var evidenceBenchSizes = []struct {
	name string
	row  int
}{
	{"100KiB", 100 << 10},
	{"300KiB", 300 << 10},
	{"500KiB", 500 << 10},
}

var (
	evidenceBenchOnce  sync.Once
	evidenceBenchFiles = map[string]string{}
	evidenceBenchErr   error
)

// evidenceRow returns a main-output row of about size bytes: calls model calls, each with a
// request and response payload, and as many tool calls.
func evidenceRow(i, size int) []byte {
	const calls = 24
	text := func(n int) string {
		// A model's text: words, newlines and quotes, escaped in the JSON.
		return strings.Repeat("Let me check the \"edge\" case.\n", max(1, n/32))
	}
	per := size / (calls * 3)
	var mcs, tcs, refs []map[string]any
	for c := range calls {
		t0 := 1767225600.0 + float64(c)
		mcs = append(mcs, map[string]any{
			"model_call_id": fmt.Sprintf("mc-%d", c), "started_at": t0, "completed_at": t0 + 1.2, "duration_ms": 1200.0,
			"request":  map[string]any{"model": "policy", "input": []any{map[string]any{"role": "user", "content": text(per)}}},
			"response": map[string]any{"id": fmt.Sprintf("r-%d", c), "output": []any{map[string]any{"type": "message", "content": []any{map[string]any{"type": "output_text", "text": text(per)}}}}},
			"response_metadata": map[string]any{"response_id": fmt.Sprintf("r-%d", c), "model_ref": map[string]any{"type": "responses_api_models", "name": "policy_model"},
				"model": "gpt-oss-120b", "dialect": "responses", "status_code": 200, "response_status": "completed", "finish_reason": "tool_calls", "latency_ttft_ms": 250.0},
			"token_stats": map[string]any{"prompt_tokens": 4000 + c, "completion_tokens": 300, "reasoning_tokens": 120, "total_tokens": 4300 + c, "cached_tokens": 2048},
		})
		tcs = append(tcs, map[string]any{"kind": "tool_call", "invocation_id": "root", "tool_call_id": fmt.Sprintf("tc-%d", c), "sandbox_id": "sb-0",
			"tool_name": "bash", "started_at": t0 + 1.3, "completed_at": t0 + 1.9, "duration_ms": 600.0, "timing_source": "executor", "status": "completed",
			"output": text(per)})
		refs = append(refs, map[string]any{"model_call_id": fmt.Sprintf("mc-%d", c)})
	}
	inv := map[string]any{"kind": "agent_invocation", "invocation_id": "root", "status": "completed", "duration_ms": 40000.0, "model_calls": refs,
		"conversation": []any{map[string]any{"role": "user", "content": "solve the task"}}}
	row := map[string]any{
		"responses_create_params": map[string]any{"input": []any{map[string]any{"role": "user", "content": "solve the task"}}},
		"response":                map[string]any{"id": "r", "model": "gpt-oss-120b", "status": "completed", "output": []any{}, "usage": map[string]any{"input_tokens": 96000, "output_tokens": 7200}},
		"reward":                  1.0, "_ng_task_index": i, "_ng_rollout_index": 0, "_ng_environment_server": "swe",
		"ng_perf": map[string]any{"num_turns": calls, "num_tool_calls": calls, "total_latency_ms": 40000.0},
		"ng_trajectory": map[string]any{"schema_version": "1.0", "task_id": fmt.Sprint(i), "rollout_id": fmt.Sprintf("%d-0", i),
			"invocations": []any{inv}, "model_calls": mcs, "tool_calls": tcs,
			"turns": []any{map[string]any{"invocation_id": "root", "task_id": fmt.Sprint(i), "rollout_id": fmt.Sprintf("%d-0", i), "turn_no": 1,
				"timestamp": 1767225600.0, "question": "q", "answer": "a", "step_count": calls, "model_calls": refs}},
			"gaps": []any{}},
		"ng_agent_observations": map[string]any{"source": "harness", "records": []any{inv, tcs[0],
			map[string]any{"kind": "sandbox", "role": "agent", "provider": "docker", "sandbox_id": "sb-0", "outcome": "completed", "exit_code": 0,
				"wall_time_s": 45.0, "cpu_time_s": 20.5, "peak_memory_mib": 1500.0},
			map[string]any{"kind": "context_compaction", "invocation_id": "root", "tokens_before": 100000, "tokens_after": 20000, "outcome": "completed", "summary": text(per)}},
			"gaps": []any{map[string]any{"code": "turns_unavailable", "invocation_id": "root"}}},
	}
	data, _ := json.Marshal(row)
	return data
}

// evidenceBenchFile writes (once per run) a file of such rows of each size, 64 MiB each
// (ROLLOUTS_BENCH_MB sets it, as for BenchmarkRows).
func evidenceBenchFile(b *testing.B, name string, size int) string {
	evidenceBenchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rollouts-evidence-bench-")
		if err != nil {
			evidenceBenchErr = err
			return
		}
		total := 64 << 20
		if v, err := fmt.Sscan(os.Getenv("ROLLOUTS_BENCH_MB"), &total); err == nil && v == 1 {
			total <<= 20
		}
		for _, s := range evidenceBenchSizes {
			path := filepath.Join(dir, s.name+".jsonl")
			f, err := os.Create(path)
			if err != nil {
				evidenceBenchErr = err
				return
			}
			w := bufio.NewWriter(f)
			for i := 0; i*s.row < total; i++ {
				_, _ = w.Write(evidenceRow(i, s.row))
				_ = w.WriteByte('\n')
			}
			if err = w.Flush(); err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				evidenceBenchErr = err
				return
			}
			evidenceBenchFiles[s.name] = path
		}
	})
	if evidenceBenchErr != nil {
		b.Fatal(evidenceBenchErr)
	}
	return evidenceBenchFiles[name]
}

func BenchmarkEvidenceRows(b *testing.B) {
	for _, s := range evidenceBenchSizes {
		b.Run(s.name+"/reader", func(b *testing.B) {
			path := evidenceBenchFile(b, s.name, s.row)
			r := NewRowDecoder(0)
			benchPasses(b, path, func(f *os.File) (int, error) { return readRows(r, f) })
		})
	}
}
