// Package sharedcomponent lets one component instance serve the pipelines of several signals:
// the collector's usual pattern (contrib's internal/sharedcomponent, which other modules cannot
// import). A Map keyed by the component's configuration returns one instance per key, wrapped
// in a Component whose Start and Shutdown run once, whichever signal's pipeline calls them
// first.
package sharedcomponent

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
)

// Map holds the live components, one per key (usually the *Config the factory was given).
type Map[K comparable, V component.Component] struct {
	mu         sync.Mutex
	components map[K]*Component[V]
}

// NewMap returns an empty Map.
func NewMap[K comparable, V component.Component]() *Map[K, V] {
	return &Map[K, V]{components: map[K]*Component[V]{}}
}

// LoadOrStore returns the component stored under key, or else the one create returns, then
// stored under key until it shuts down. When create fails nothing is stored: the next call
// for the key creates again. create runs under the map's lock.
func (m *Map[K, V]) LoadOrStore(key K, create func() (V, error)) (*Component[V], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.components[key]; ok {
		return c, nil
	}
	v, err := create()
	if err != nil {
		return nil, err
	}
	c := &Component[V]{component: v}
	c.remove = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.components[key] == c {
			delete(m.components, key)
		}
	}
	m.components[key] = c
	return c, nil
}

// Load returns the component stored under key, if any.
func (m *Map[K, V]) Load(key K) (*Component[V], bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.components[key]
	return c, ok
}

// Component is a shared component: what a factory returns for each signal.
type Component[V component.Component] struct {
	component V
	startOnce sync.Once
	startErr  error
	stopOnce  sync.Once
	remove    func()
}

// Unwrap returns the component itself.
func (c *Component[V]) Unwrap() V { return c.component }

// Start starts the component the first time it is called; every call returns that start's
// error.
func (c *Component[V]) Start(ctx context.Context, host component.Host) error {
	c.startOnce.Do(func() { c.startErr = c.component.Start(ctx, host) })
	return c.startErr
}

// Shutdown shuts the component down the first time it is called, and removes it from its
// Map: a later LoadOrStore of its key creates a new one. Later calls return nil.
func (c *Component[V]) Shutdown(ctx context.Context) error {
	var err error
	c.stopOnce.Do(func() {
		err = c.component.Shutdown(ctx)
		c.remove()
	})
	return err
}
