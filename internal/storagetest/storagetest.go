// Package storagetest is a storage extension in memory and a host that offers it, for the tests
// of the components that keep state in storage (the gym receiver's checkpoint, gym_console's
// offsets): the data outlives a component, as a file_storage directory outlives a collector.
package storagetest

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Mem is a storage extension whose one client keeps its data in memory.
type Mem struct {
	component.StartFunc
	component.ShutdownFunc
	mu   sync.Mutex
	data map[string][]byte
	sets int64
}

var (
	_ storage.Extension   = (*Mem)(nil)
	_ extension.Extension = (*Mem)(nil)
)

// NewMem returns a Mem that holds data (none if nil).
func NewMem(data map[string][]byte) *Mem {
	if data == nil {
		data = map[string][]byte{}
	}
	return &Mem{data: data}
}

// GetClient returns the one client, whoever asks.
func (m *Mem) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return m, nil
}

// Get returns the value of k, nil when there is none.
func (m *Mem) Get(_ context.Context, k string) ([]byte, error) {
	return m.Value(k), nil
}

// Set keeps a copy of v under k.
func (m *Mem) Set(_ context.Context, k string, v []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sets++
	m.data[k] = append([]byte(nil), v...)
	return nil
}

// Sets counts the calls of Set.
func (m *Mem) Sets() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sets
}

// Delete forgets k.
func (m *Mem) Delete(_ context.Context, k string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, k)
	return nil
}

// Batch runs ops in order, as one: a Get's value is what k holds at that point of the batch.
func (m *Mem) Batch(_ context.Context, ops ...*storage.Operation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value = append([]byte(nil), m.data[op.Key]...)
		case storage.Set:
			m.sets++
			m.data[op.Key] = append([]byte(nil), op.Value...)
		case storage.Delete:
			delete(m.data, op.Key)
		}
	}
	return nil
}

// Len is how many keys hold a value.
func (m *Mem) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.data)
}

// Close keeps the data: a client closed with its component leaves it for the next one.
func (m *Mem) Close(context.Context) error { return nil }

// Value is what k holds now.
func (m *Mem) Value(k string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data[k]
}

// CrashCopy is what a kill -9 leaves in the storage at this instant: its data as it is.
func (m *Mem) CrashCopy() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem(nil)
	for k, v := range m.data {
		c.data[k] = append([]byte(nil), v...)
	}
	return c
}

// Host is a component.Host with these extensions.
type Host map[component.ID]component.Component

// GetExtensions returns the host's extensions.
func (h Host) GetExtensions() map[component.ID]component.Component { return h }
