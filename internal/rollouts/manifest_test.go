package rollouts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The manifest's run_id, read with the one JSON scanner.
func TestManifestRunID(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, doc, want string }{
		{"plain", `{"run_id":"run-7","config":{"x":[1,2]}}`, "run-7"},
		{"escaped", ` {"config":{},"run\u005fid":"r\u00e9-\"1\""} `, `ré-"1"`},
		{"Python's NaN elsewhere", `{"score":NaN,"run_id":"r","t":Infinity}`, "r"},
		{"the last wins", `{"run_id":"a","run_id":"b"}`, "b"},
		{"the last is not a string", `{"run_id":"a","run_id":7}`, ""},
		{"nested run_id is not the manifest's", `{"config":{"run_id":"inner"}}`, ""},
		{"not an object", `["run_id","x"]`, ""},
		{"trailing data", `{"run_id":"x"} {}`, ""},
		{"broken", `{"run_id":"x"`, ""},
		{"empty", ``, ""},
	} {
		p := filepath.Join(dir, tt.name+".json")
		if err := os.WriteFile(p, []byte(tt.doc), 0o600); err != nil {
			t.Fatal(err)
		}
		assert.Equal(t, tt.want, manifestRunID(p), tt.name)
	}
	assert.Empty(t, manifestRunID(filepath.Join(dir, "missing.json")))
}
