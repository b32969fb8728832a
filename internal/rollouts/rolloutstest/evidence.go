package rolloutstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// EvidenceRows returns n main-output rows made from row (one row with rollout evidence, as
// internal/rollouts/testdata/evidence/eval.jsonl's first), task indices and rollout ids
// first..first+n-1: rows of distinct rollouts with the same evidence.
func EvidenceRows(t testing.TB, row []byte, first, n int) []byte {
	t.Helper()
	var out bytes.Buffer
	for i := first; i < first+n; i++ {
		var r map[string]any
		require.NoError(t, json.Unmarshal(row, &r))
		r["_ng_task_index"] = i
		traj, ok := r["ng_trajectory"].(map[string]any)
		require.True(t, ok, "the row has an ng_trajectory object")
		traj["rollout_id"] = fmt.Sprintf("%d-0", i)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		out.Write(append(b, '\n'))
	}
	return out.Bytes()
}
