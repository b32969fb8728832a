package follow

import (
	"sync"
	"time"
)

// Options configure a Follower.
type Options struct {
	// Name is the source's key in logs and errors (files, rollouts; "" is files).
	Name             string
	Include, Exclude []string
	StartAtBeginning bool
	PollInterval     time.Duration
	// MaxLineBytes is the longest line: start_at end looks that far back for the last newline
	// (0: in the whole file, for lines of any size).
	MaxLineBytes int
	// MaxFiles bounds the files followed at once; more are counted and left for later polls
	// (0: no bound; the source bounds its targets itself).
	MaxFiles int
	Store    OffsetStore // nil: offsets are not kept across restarts

	// Identity is how a file is known again (ByHead, the default, or ByPath).
	Identity Identity
	// Codec is the store's format (nil: by head, the events files' format; by path, Stored
	// as JSON).
	Codec Codec
	// Lock serialises polls, checkpoints and shutdown (nil: a mutex; a checkpoint.Gate lets a
	// checkpoint in where the Reader yields).
	Lock Lock
	// Targets, when set, names the files of a poll, in the order they are read, instead of the
	// globs' matches: a source that derives its files from what the globs match (rollouts:
	// the files of its runs). A file followed that is not among them is let go.
	Targets func(first bool) []string
	// EndPoll, when set, is called at the end of every poll, under the lock, before the
	// offsets are saved.
	EndPoll func(first bool)
	// Refused, when set, counts a path the globs match that is not followed (Refusal* reasons),
	// once until the path is followed or no longer matched; the follower logs it either way.
	Refused func(path, reason string)
	// Lines names what a file holds in logs (lines, rows; "" is lines).
	Lines string
	// Waiting, when set, is told at the end of every poll how many matching files wait past
	// MaxFiles (0: none). The follower logs it too, at most once a minute.
	Waiting func(n int)
	// ReadBudget is the most a poll reads of one file (0: DefaultReadBudget). A file with more
	// is read on at the next poll, which then comes at once: a large backlog (or a sparse file
	// of many gigabytes) is read in turns with the other files, none waits for it, and the
	// first poll, inside Start, and the last, inside Shutdown, end after at most this much of
	// each file (with storage, a restart resumes where the last one stopped).
	ReadBudget int64
}

// DefaultReadBudget: at 1 to 1.5 GB/s, a file's turn lasts about 50 ms.
const DefaultReadBudget = 64 << 20

// Identity is how a follower knows a file again, from poll to poll and across restarts.
type Identity int

const (
	// ByHead: an open file is its device and inode, wherever the globs find it (a file renamed
	// within them goes on; one renamed away is read for one poll more, then let go), and the
	// store keeps it by head, so a restart finds it again under any name.
	ByHead Identity = iota
	// ByPath: a file is its path. Another inode at the path is another file: the old one is read
	// to its end and let go, the new one read from its start. A file gone from the path is read
	// to its end and let go at once. The store keeps it by path, with its head.
	ByPath
)

// Lock is the lock of a follower's polls. The follower Locks it for a poll and calls Yield
// where its Reader says the state and the offsets agree (between two rows); a checkpoint takes
// Checkpoint. checkpoint.Gate is one (the follower imports no checkpoint).
type Lock interface {
	sync.Locker
	Yield()
	Checkpoint() sync.Locker
}

// mutexLock is the Lock of a source whose readers never yield.
type mutexLock struct{ sync.Mutex }

func (*mutexLock) Yield() {}

func (m *mutexLock) Checkpoint() sync.Locker { return &m.Mutex }

// PulledStore is a store that asks the source for its offsets whenever it takes them (a
// checkpoint section), with the source's lock held, so that they are those of exactly what
// was applied. A follower whose Store is one joins it when it is made (the one step a source
// takes to join a checkpoint) and saves into it only at Shutdown, not at every poll.
type PulledStore interface {
	OffsetStore
	Pull(l sync.Locker, offsets func() (data []byte, ok bool))
}

// Codec is a store's format: what it keeps of each file, by key (ByHead: the head, HeadKey;
// ByPath: the path).
type Codec interface {
	Decode(data []byte) (map[string]Stored, error)
	Encode(files map[string]Stored) []byte
}

// Reader takes the bytes of one followed file for the source: it splits them into lines or
// rows and hands them on (the transports' line reader, in front of a decoder; the rollouts
// row decoder), as contrib's fileconsumer injects its split and emit functions.
type Reader interface {
	// Read hands on what f holds from f.Offset up to size, and advances f.Offset past the
	// bytes it consumed. Where what it handed on and f.Offset (less Pending) agree, it may call
	// yield, which lets a waiting checkpoint in. It returns the error that ended the reading.
	Read(f *File, size int64, yield func()) error
	// Pending is how many of the bytes before f.Offset belong to a line not complete yet: the
	// offset a restart resumes at is before them.
	Pending() int64
	// Discard forgets the line not complete yet (the file was truncated or replaced).
	Discard()
	// Finish ends the file: a line not complete will never be (it is counted as such), and
	// what the reader holds is handed on.
	Finish()
	// Flush hands on what the reader holds (at shutdown, the file still open).
	Flush()
	// State is what the stored offsets keep with the file to resume its reader (nil: nothing),
	// and Restore gives it back to the reader of the resumed file.
	State() []byte
	Restore(state []byte) error
}

// Opened says how a file just opened begins, for its reader.
type Opened struct {
	Start Start
	// Other: the store held an entry for the file's path whose head is not the file's: another
	// file is at the path now (ByPath).
	Other bool
}

// NewReader makes the Reader of a file just opened (f.Path is its path).
type NewReader func(f *File, opened Opened) Reader
