// Package followtest helps the tests of the sources that follow files: an offset store in
// memory, a file appended to as a writer does, and the counts a source records.
package followtest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// MemStore is a follow.OffsetStore in memory. Data is what was saved last (Mu guards it).
type MemStore struct {
	Mu   sync.Mutex
	Data []byte
}

// Load returns Data.
func (m *MemStore) Load(context.Context) ([]byte, error) {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	return m.Data, nil
}

// Save keeps a copy of d as Data.
func (m *MemStore) Save(_ context.Context, d []byte) error {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	m.Data = append([]byte(nil), d...)
	return nil
}

// PullStore is a MemStore that pulls the offsets, as a checkpoint section does
// (follow.PulledStore): the source joins it when it is made, and saves into it only at
// Shutdown. Locker and Offsets are what the source gave it.
type PullStore struct {
	MemStore
	Locker  sync.Locker
	Offsets func() ([]byte, bool)
}

// Pull keeps the source's lock and offsets.
func (p *PullStore) Pull(l sync.Locker, offsets func() ([]byte, bool)) {
	p.Locker, p.Offsets = l, offsets
}

// AppendFile appends s to the file at path (made when missing), as a writer does.
func AppendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// Counts sums the counts a source records (Record is its recorder).
type Counts struct {
	Accepted, Unknown int64
	Rejected          map[string]int64
}

// NewCounts returns empty counts.
func NewCounts() *Counts { return &Counts{Rejected: map[string]int64{}} }

// Record adds a read's counts.
func (c *Counts) Record(s *ingest.Stats) {
	c.Accepted += s.Accepted
	c.Unknown += s.Unknown
	for k, v := range s.Rejected {
		c.Rejected[k] += v
	}
}
