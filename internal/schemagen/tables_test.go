package schemagen

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTablesAreFresh fails when deploy/grafana/schema_tables.json no longer matches
// metadata.yaml: run `make generate`.
func TestTablesAreFresh(t *testing.T) {
	s, _ := realSchema(t)
	out, err := s.Tables()
	require.NoError(t, err)
	onDisk, err := os.ReadFile("../../deploy/grafana/schema_tables.json")
	require.NoError(t, err)
	assert.Equal(t, string(out), string(onDisk), "deploy/grafana/schema_tables.json is stale: run make generate")
}

// Every instrument is a row, in metadata.yaml's order, with its kind and attribute keys (an
// attribute given as a mapping too).
func TestTablesRows(t *testing.T) {
	s, _ := realSchema(t)
	out, err := s.Tables()
	require.NoError(t, err)
	var got struct {
		Instruments []tableInstrument `json:"instruments"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got.Instruments, len(s.Instruments))
	for i, in := range s.Instruments {
		row := got.Instruments[i]
		assert.Equal(t, in.Name, row.Name)
		assert.Equal(t, in.Kind, row.Kind, in.Name)
		require.Len(t, row.Attributes, len(in.Attributes), in.Name)
		for j, a := range in.Attributes {
			assert.Equal(t, a.Key, row.Attributes[j], in.Name)
		}
	}
}
