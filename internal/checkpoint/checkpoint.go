// Package checkpoint owns the record that keeps a receiver's state (the gym receiver's
// aggregation state) and its sources' read offsets in one value of a storage extension, so
// that a restarted collector goes on where it stopped: series keep their values and start
// times, and every source resumes at exactly the lines whose effect is in the restored state.
//
// A checkpoint is one value under one key (one atomic Set): the State's encoding and, per
// source, one named opaque offsets section. What the state is, and what a source's offsets
// say, is theirs: the checkpoint imports neither. A source is made with its Section as its
// offset store, and that is the one step of joining: it reads its offsets from the section's
// Load at start, and gives the section its lock and its offsets (Pull, which follow.Follower
// calls when it is made), so that each checkpoint asks for the offsets of exactly what was
// applied, under the source's lock; at shutdown it Saves its last offsets. (A source may
// instead Save its offsets in the same critical section as it applies the lines they cover,
// its lock given with GuardedBy.) The checkpointer takes a checkpoint
// with every source's lock held, so a line is either in both the state and the offsets or in
// neither, while sources without offsets (HTTP bodies, stream connections) ingest on, each
// resource caught under its own lock. A source that holds its lock for long (a poll through a
// long file) holds a Gate and Yields between two rows, so a checkpoint never waits for it.
package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Store is where checkpoints are kept: a storage extension's client.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte) error
}

// Key is the storage key of the checkpoint.
const Key = "checkpoint"

// magic and version open an encoded checkpoint.
const (
	magic   = "gymckpt"
	version = 1
)

// State is what a checkpoint keeps beside its sources' offsets: the aggregator's state.
type State interface {
	// AppendState appends the encoded state to b. The checkpointer calls it with every
	// source's lock held.
	AppendState(b []byte) []byte
	// RestoreState makes the (empty) state the encoded one.
	RestoreState(data []byte) error
}

// Checkpointer takes, saves and restores checkpoints.
type Checkpointer struct {
	store Store
	state State

	mu       sync.Mutex // one checkpoint at a time, so a stale one never overwrites a newer
	sections []*Section
	restored map[string][]byte // offsets sections of the restored checkpoint, by name
	buf      []byte            // the state, reused
	out      []byte            // the encoded checkpoint, reused

	// Sync's group commit.
	smu      sync.Mutex
	cond     *sync.Cond
	running  bool
	begun    uint64
	finished uint64
	lastErr  error
}

// New returns a checkpointer of state into store.
func New(store Store, state State) *Checkpointer {
	c := &Checkpointer{store: store, state: state, restored: map[string][]byte{}}
	c.cond = sync.NewCond(&c.smu)
	return c
}

// Section is one source's offsets in the checkpoint. It is a follow.OffsetStore: Load
// returns the offsets of the restored checkpoint, Save hands over the offsets the next
// checkpoint writes.
type Section struct {
	c       *Checkpointer
	name    string
	guard   sync.Locker
	offsets func() ([]byte, bool) // Pull's
	saved   []byte
	has     bool
}

// Section returns the offsets section of the named source, registering it: the store the
// source is made with, which Pulls (or is GuardedBy) before the source starts.
func (c *Checkpointer) Section(name string) *Section {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sections {
		if s.name == name {
			return s
		}
	}
	s := &Section{c: c, name: name}
	c.sections = append(c.sections, s)
	return s
}

// GuardedBy names the lock the source holds while it applies lines and Saves their offsets.
// It takes the checkpointer's lock: a checkpoint may be under way (an HTTP answer's, when the
// HTTP transport started first).
func (s *Section) GuardedBy(l sync.Locker) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.guard = l
}

// Pull names the source's lock, as GuardedBy, for a source that does not Save its offsets as
// it applies lines: each checkpoint calls offsets with the lock held, for the offsets of
// exactly the lines applied so far. offsets returns ok=false while the source has none of its
// own (before it has read its restored offsets, or after a last Save at its shutdown): the
// checkpoint keeps those it last Saved, or the restored ones.
func (s *Section) Pull(l sync.Locker, offsets func() (data []byte, ok bool)) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.guard, s.offsets = l, offsets
}

// Gate is the lock of a source that holds it for long (a poll that reads a long file row by
// row) and can let a checkpoint in between two rows: the source Locks it for a poll and calls
// Yield wherever its state and offsets agree; the checkpoint takes Checkpoint (give it to
// Pull or GuardedBy). A waiting checkpoint is handed the gate at the source's next Yield, and
// the source goes on once every waiting checkpoint is done: no sleeping, no polling. The zero
// Gate is unlocked.
type Gate struct {
	mu      sync.Mutex // guards held and waiting
	cond    *sync.Cond // on mu; made by the first user
	held    bool
	waiting int // checkpoints waiting for the gate
}

// wait and broadcast are the condition's, made when first needed (the zero Gate works).
func (g *Gate) wait() {
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	g.cond.Wait()
}

func (g *Gate) broadcast() {
	if g.cond != nil {
		g.cond.Broadcast()
	}
}

// Lock takes the gate for the source, after the checkpoints already waiting for it.
func (g *Gate) Lock() {
	g.mu.Lock()
	for g.held || g.waiting > 0 {
		g.wait()
	}
	g.held = true
	g.mu.Unlock()
}

// Unlock releases the gate (the source's or a checkpoint's hold).
func (g *Gate) Unlock() {
	g.mu.Lock()
	g.held = false
	g.broadcast()
	g.mu.Unlock()
}

// Yield lets the checkpoints waiting for the gate in, one after the other, then takes it
// again. Called by the source with the gate held.
func (g *Gate) Yield() {
	g.mu.Lock()
	if g.waiting > 0 {
		g.held = false
		g.broadcast()
		for g.held || g.waiting > 0 {
			g.wait()
		}
		g.held = true
	}
	g.mu.Unlock()
}

// Waiting tells whether a checkpoint waits for the gate: the source, which holds it, may ready
// its state before it Yields.
func (g *Gate) Waiting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting > 0
}

// Checkpoint returns the lock a checkpoint takes: it waits for the source's next Yield (or
// the end of its hold), not for the end of a long poll.
func (g *Gate) Checkpoint() sync.Locker { return gateCheckpoint{g} }

type gateCheckpoint struct{ g *Gate }

func (l gateCheckpoint) Lock() {
	g := l.g
	g.mu.Lock()
	g.waiting++
	for g.held {
		g.wait()
	}
	g.waiting--
	g.held = true
	g.mu.Unlock()
}

func (l gateCheckpoint) Unlock() { l.g.Unlock() }

// Load returns the source's offsets from the restored checkpoint (nil: none).
func (s *Section) Load(context.Context) ([]byte, error) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.c.restored[s.name], nil
}

// Save records the source's offsets: those of exactly the lines it has applied so far. It is
// called under the guard; the next checkpoint writes them.
func (s *Section) Save(_ context.Context, data []byte) error {
	s.saved = append(s.saved[:0], data...)
	s.has = true
	return nil
}

// setLegacy makes Load of a section return data when the restored checkpoint has none (the
// offsets of an older version, kept under another key: RestoreLegacy).
func (c *Checkpointer) setLegacy(name string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.restored[name]; !ok && len(data) > 0 {
		c.restored[name] = data
	}
}

// Restore reads the stored checkpoint into the (empty) state and keeps its offsets
// sections for the sources' Load. It reports whether there was one. A checkpoint that cannot
// be read is an error: starting without it would count the files' lines again.
func (c *Checkpointer) Restore(ctx context.Context) (bool, error) {
	data, err := c.store.Get(ctx, Key)
	if err != nil {
		return false, fmt.Errorf("reading the checkpoint: %w", err)
	}
	if len(data) == 0 {
		return false, nil
	}
	state, sections, err := decode(data)
	if err != nil {
		return false, fmt.Errorf("the stored checkpoint is unreadable: %w", err)
	}
	if err := c.state.RestoreState(state); err != nil {
		return false, err
	}
	c.mu.Lock()
	for name, b := range sections {
		c.restored[name] = b
	}
	c.mu.Unlock()
	return true, nil
}

// Collect takes a checkpoint of the state a collection exports and saves it: collect, called
// with every source's lock held, builds the collection's export and, in the same pass, sets
// *state to the encoded state (reusing its buffer), so the export of a collection never
// carries more than its saved checkpoint. It returns the checkpoint's size; a checkpoint that
// cannot be saved is an error (the export stands).
func (c *Checkpointer) Collect(ctx context.Context, collect func(state *[]byte)) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.take(func() { collect(&c.buf) })
	return len(c.out), c.store.Set(ctx, Key, c.out)
}

// Save takes and saves a checkpoint without a collection (at shutdown after the last one, or
// for Sync).
func (c *Checkpointer) Save(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.take(func() { c.buf = c.state.AppendState(c.buf[:0]) })
	return len(c.out), c.store.Set(ctx, Key, c.out)
}

// take runs snapshot (which fills c.buf) with every source paused, then encodes the
// checkpoint into c.out. The caller holds c.mu.
func (c *Checkpointer) take(snapshot func()) {
	for _, s := range c.sections {
		if s.guard != nil {
			s.guard.Lock()
		}
		if s.offsets != nil {
			if b, ok := s.offsets(); ok {
				s.saved = append(s.saved[:0], b...)
				s.has = true
			}
		}
	}
	snapshot()
	out := append(c.out[:0], magic...)
	out = binary.AppendUvarint(out, version)
	// A source that has not saved yet (it has not started) keeps its restored offsets.
	offsets := func(s *Section) ([]byte, bool) {
		if s.has {
			return s.saved, true
		}
		b, ok := c.restored[s.name]
		return b, ok
	}
	n := 0
	for _, s := range c.sections {
		if _, ok := offsets(s); ok {
			n++
		}
	}
	out = binary.AppendUvarint(out, uint64(n))
	for _, s := range c.sections {
		if b, ok := offsets(s); ok {
			out = appendBytes(out, []byte(s.name))
			out = appendBytes(out, b)
		}
	}
	for i := len(c.sections) - 1; i >= 0; i-- {
		if g := c.sections[i].guard; g != nil {
			g.Unlock()
		}
	}
	c.out = appendBytes(out, c.buf)
}

// Sync returns once a checkpoint taken after the call has been saved: what was applied before
// the call survives a crash. Concurrent callers share checkpoints (group commit): one
// checkpoint serves every caller that was waiting when it began.
func (c *Checkpointer) Sync(ctx context.Context) error {
	c.smu.Lock()
	defer c.smu.Unlock()
	target := c.begun + 1 // a checkpoint that begins after now
	for c.finished < target {
		if c.running {
			c.cond.Wait()
			continue
		}
		c.running = true
		c.begun++
		gen := c.begun
		c.smu.Unlock()
		_, err := c.Save(ctx)
		c.smu.Lock()
		c.running = false
		c.finished, c.lastErr = gen, err
		c.cond.Broadcast()
	}
	return c.lastErr
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func decode(data []byte) (state []byte, sections map[string][]byte, err error) {
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return nil, nil, errors.New("not a checkpoint")
	}
	b := data[len(magic):]
	next := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			err = errors.New("truncated")
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	bytesOf := func() []byte {
		n := next()
		if err != nil || n > uint64(len(b)) {
			err = errors.New("truncated")
			b = nil
			return nil
		}
		v := b[:n]
		b = b[n:]
		return v
	}
	if v := next(); err == nil && v != version {
		return nil, nil, fmt.Errorf("version %d is not %d", v, version)
	}
	n := next()
	sections = map[string][]byte{}
	for i := uint64(0); i < n && err == nil; i++ {
		name := string(bytesOf())
		sections[name] = append([]byte(nil), bytesOf()...)
	}
	state = bytesOf()
	if err == nil && len(b) != 0 {
		err = errors.New("trailing bytes")
	}
	return state, sections, err
}
