//go:build linux

package e2e

import (
	"fmt"
	"strings"
)

// The instruments of Gym's newer releases, fed to the dashboards test (dashboards_test.go) in
// three stages a few scrapes apart: the events-v1 events concurrency.limits, model_call,
// memory.sample, rollout.duration, verify and servers.active of one process (nemo-gym/newer),
// and the rows of a Gym run file (STEM.jsonl) whose responses carry usage, model, status,
// incomplete_details and function_call items (the rollouts source, nemo-gym/rollout_collection).

const dashNewerJob, dashNewerInstance = "nemo-gym/newer", "run1-newer-0"

// dashNewerStages is how many bodies and row groups there are (one per part of the run).
const dashNewerStages = 3

// dashNewerLimits is the concurrency.limits snapshot of stage k with timeouts admission
// timeouts of the model client's limit so far.
func dashNewerLimits(k, timeouts int) string {
	return fmt.Sprintf(`{"event":"concurrency.limits","limits":[`+
		`{"component":"model_client","limit_name":"requests","server_name":"policy","limit":8,"active":8,"queue_depth":%d,"admission_timeouts":%d,"admission_cancelled":%d},`+
		`{"component":"driver","limit_name":"rollouts","limit":16,"active":%d,"queue_depth":0,"admission_cancelled":0}]}`, k, timeouts, k, 4*k)
}

// dashNewerTimeouts is the last stage's snapshot again, with more admission timeouts.
func dashNewerTimeouts(timeouts int) (body string, lines int) {
	return fmt.Sprintf(`{"event":"resource","attributes":{"service.name":%q,"service.instance.id":%q,"nemo.run.id":"run1"}}`,
		dashNewerJob, dashNewerInstance) + "\n" + dashNewerLimits(dashNewerStages, timeouts) + "\n", 2
}

// dashNewerEvents is the body of stage k (1..3): the snapshots' cumulative totals and gauges
// grow with k, so the last stage's values are what Prometheus holds at the end.
func dashNewerEvents(k int) (body string, lines int) {
	var b strings.Builder
	add := func(format string, a ...any) {
		fmt.Fprintf(&b, format+"\n", a...)
		lines++
	}
	add(`{"event":"resource","attributes":{"service.name":%q,"service.instance.id":%q,"nemo.run.id":"run1"}}`, dashNewerJob, dashNewerInstance)
	// The model client's limit of the policy server is full with k waiters, 2k timeouts and k
	// cancellations so far; the driver's limit has room, no waiters and no admission timeout.
	add("%s", dashNewerLimits(k, 2*k))
	// Per stage: a streamed Responses call to policy, a Chat call to judge that hit its length
	// limit, and a failed call whose tokens and finish reason are not recorded.
	add(`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"ok","duration_ms":1500,"ttft_ms":200,"tokens":{"input":1000,"output":200,"reasoning":50},"finish_reason":"stop"}`)
	add(`{"event":"model_call","server_name":"judge","dialect":"chat","outcome":"ok","duration_ms":800,"tokens":{"input":300,"output":20},"finish_reason":"length"}`)
	add(`{"event":"model_call","server_name":"policy","dialect":"responses","outcome":"timeout","duration_ms":60000,"tokens":{"input":999},"finish_reason":"stop"}`)
	// Server math with PSS, judge without; the host's memory.
	add(`{"event":"memory.sample","servers":[`+
		`{"server_name":"math","server_type":"resources_servers","pid":4242,"rss":%d,"pss":%d,"rss_peak":%d,"pss_peak":%d,"processes":3},`+
		`{"server_name":"judge","server_type":"responses_api_models","pid":4343,"rss":%d,"rss_peak":%d,"processes":1}],`+
		`"host":{"usage":%d,"available":%d,"total":16000000000,"peak":%d}}`,
		k*100_000_000, k*80_000_000, 400_000_000, 300_000_000, k*50_000_000, 200_000_000,
		4_000_000_000+k*1_000_000_000, 12_000_000_000-k*1_000_000_000, 9_000_000_000)
	add(`{"event":"rollout.duration","duration_ms":%d}`, 2000*k)
	add(`{"event":"verify","duration_ms":120,"completed":%t}`, k != 3) // 2 of 3 complete
	add(`{"event":"servers.active","count":3}`)
	return b.String(), lines
}

// dashNewerRows are the main-output rows of stage k (1..3), each ending with its newline.
// Responses spelling unless said; finish reason = incomplete_details.reason, else status.
var dashNewerRows = [dashNewerStages][]string{
	{
		// math, m-large, completed: 2 function calls.
		`{"_ng_run_id":"run1","_ng_environment_server":"math","reward":1.0,"response":{"model":"m-large","status":"completed","usage":{"input_tokens":1000,"output_tokens":300,"output_tokens_details":{"reasoning_tokens":100},"input_tokens_details":{"cached_tokens":200},"total_tokens":1300},"output":[{"type":"function_call","name":"calc","arguments":"{}"},{"type":"function_call","name":"calc","arguments":"{}"},{"type":"message","content":[{"type":"output_text","text":"4"}]}]},"ng_perf":{"total_latency_ms":2500}}`,
		// math, m-large, cut at max_output_tokens: no function call.
		`{"_ng_run_id":"run1","_ng_environment_server":"math","reward":0.0,"response":{"model":"m-large","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1500,"output_tokens":4096,"output_tokens_details":{"reasoning_tokens":4000}},"output":[]},"ng_perf":{"total_latency_ms":9000}}`,
	},
	{
		// code, m-small, the Chat spelling: 1 function call.
		`{"_ng_run_id":"run1","_ng_environment_server":"code","reward":1.0,"response":{"model":"m-small","status":"completed","usage":{"prompt_tokens":800,"completion_tokens":120},"output":[{"type":"function_call","name":"run","arguments":"{}"}]}}`,
		// code, m-small: a reported 0 cached tokens is a sample; 3 function calls.
		`{"_ng_run_id":"run1","_ng_environment_server":"code","reward":0.5,"response":{"model":"m-small","status":"completed","usage":{"input_tokens":600,"output_tokens":80,"input_tokens_details":{"cached_tokens":0}},"output":[{"type":"function_call"},{"type":"function_call"},{"type":"function_call"}]}}`,
	},
	{
		// math, m-large, cut at max_output_tokens again: a message, no function call.
		`{"_ng_run_id":"run1","_ng_environment_server":"math","reward":0.0,"response":{"model":"m-large","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":2000,"output_tokens":4096},"output":[{"type":"message"}]}}`,
		// code, no model, failed, no usage, no output list: only its finish reason.
		`{"_ng_run_id":"run1","_ng_environment_server":"code","reward":0.0,"response":{"status":"failed","error":{"code":"server_error"}}}`,
	},
}

func dashNewerRowCount() (n int) {
	for _, rows := range dashNewerRows {
		n += len(rows)
	}
	return n
}

// What the rows and events imply, computed by hand from the literals above.
var (
	// Tokens of the rows by type (gym.rollout.tokens' sums): never added across types.
	dashNewerTokens = map[string]float64{
		`{gen_ai_token_type="input"}`:        1000 + 1500 + 800 + 600 + 2000,
		`{gen_ai_token_type="output"}`:       300 + 4096 + 120 + 80 + 4096,
		`{gen_ai_token_type="reasoning"}`:    100 + 4000,
		`{gen_ai_token_type="cached_input"}`: 200 + 0,
	}
	// Rows 2 and 5 of 6 ended at max_output_tokens.
	dashNewerTruncated = 2.0 / 6.0
	// Rows with an output list: 2 + 0 + 1 + 3 + 0 function calls over 5 of them.
	dashNewerToolCalls, dashNewerToolCallRows = 6.0, 5.0
	// Model-call tokens over the 3 stages: the failed call's are not recorded.
	dashNewerCallTokens = map[string]float64{
		`{nemo_gym_model_call_token_type="input",nemo_gym_server_name="policy"}`:     3 * 1000,
		`{nemo_gym_model_call_token_type="output",nemo_gym_server_name="policy"}`:    3 * 200,
		`{nemo_gym_model_call_token_type="reasoning",nemo_gym_server_name="policy"}`: 3 * 50,
		`{nemo_gym_model_call_token_type="input",nemo_gym_server_name="judge"}`:      3 * 300,
		`{nemo_gym_model_call_token_type="output",nemo_gym_server_name="judge"}`:     3 * 20,
	}
)
