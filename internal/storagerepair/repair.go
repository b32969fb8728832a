// Package storagerepair checks and rebuilds the bbolt databases of a file_storage directory
// before the storage extension opens them, so that a damaged database never stops the
// collector: bbolt panics on a page that is not what it should be (a crash loop under an
// orchestrator), and refuses a file it does not recognise (a failed start).
//
// Every database is read back key by key (reads that fault or panic are recovered), its meta
// pages checked and then bbolt's own check run (free list, pages lost or reachable twice). One
// that passes is left as it is; any other is rebuilt into a fresh file from the keys that read
// back, in bounded batches, and the damaged original is kept aside for inspection.
package storagerepair

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Reasons a database was repaired: the self-metric's reason attribute.
const (
	// ReasonEmpty: a file of no bytes (bbolt starts it as an empty database).
	ReasonEmpty = "empty"
	// ReasonUnreadable: not a database bbolt opens (unknown format, both meta pages damaged,
	// a newer version); nothing is kept.
	ReasonUnreadable = "unreadable"
	// ReasonDamaged: some pages fault or are not what their parent says; the keys that read
	// back are kept.
	ReasonDamaged = "damaged"
)

// Report says what Check did to one database.
type Report struct {
	File string
	// Reason is "" for a database that read back whole, else one of the Reason constants.
	Reason string
	// Detail is what bbolt said (an error or a panic's message).
	Detail string
	// Kept is the count of keys written into the rebuilt database.
	Kept int
	// Aside is where the damaged original was moved ("" when none was).
	Aside string
	// InUse: another process holds the database; it was left alone.
	InUse bool
}

// Damaged tells whether the report names a loss.
func (r Report) Damaged() bool { return r.Reason != "" }

// clientFile matches the names the file_storage extension gives its databases: the component's
// kind, type and name, or a hash of them when too long.
var clientFile = regexp.MustCompile(`^((receiver|processor|exporter|extension|connector|other)_.+|[0-9a-f]{64})$`)

// asideMark names the copies of damaged databases; KeepAside of them are kept per database.
const (
	asideMark = ".damaged-"
	KeepAside = 2
)

// Directory checks every database of dir (a missing dir has none). lockTimeout bounds the
// wait for a database another process holds. A database that cannot be rebuilt (a full or
// read-only disk) is left as it was and named in the error; the others are checked still.
func Directory(dir string, lockTimeout time.Duration) ([]Report, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var reports []Report
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !clientFile.MatchString(name) || strings.Contains(name, asideMark) ||
			strings.HasSuffix(name, ".backup") || strings.HasSuffix(name, repairSuffix) {
			continue
		}
		r, err := Check(filepath.Join(dir, name), lockTimeout)
		if err != nil {
			errs = append(errs, err) // the others are still checked
			continue
		}
		reports = append(reports, r)
	}
	return reports, errors.Join(errs...)
}

const repairSuffix = ".repair"

// Check reads the database at path back. One that reads back whole, with valid meta pages and
// passing bbolt's own check, is left as it is; any other is replaced by a fresh one holding
// the keys that read back, the original kept aside. An error is returned only when the fresh
// database cannot be written (the original is then left as it was).
func Check(path string, lockTimeout time.Duration) (Report, error) {
	rep := Report{File: path}
	fi, err := os.Stat(path)
	if err != nil {
		return rep, err
	}
	if fi.Size() == 0 {
		rep.Reason, rep.Detail = ReasonEmpty, "the file has no bytes"
		return rep, nil
	}
	// bbolt reads the newer of its two meta pages that is valid: with one damaged it reads the
	// transaction before, which is a loss to report even when every page reads back.
	meta := metaDamage(path, fi.Size())
	keys, damage, err := readBack(path, lockTimeout, nil, meta == "")
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		rep.InUse = true
		return rep, nil
	case err != nil:
		rep.Reason, rep.Detail = ReasonUnreadable, err.Error()
	case meta != "":
		rep.Reason, rep.Detail = ReasonDamaged, meta
	case damage != "":
		rep.Reason, rep.Detail = ReasonDamaged, damage
	default:
		rep.Kept = keys
		return rep, nil
	}
	if rep.Kept, err = rebuild(path, lockTimeout, fi.Mode().Perm()); err != nil {
		return rep, fmt.Errorf("rebuilding %s: %w", path, err)
	}
	rep.Aside = path + asideMark + time.Now().UTC().Format("20060102T150405.000Z")
	if err := os.Rename(path+".original", rep.Aside); err != nil {
		return rep, err
	}
	pruneAside(path)
	return rep, nil
}

// visitor is given each key that reads back, under its buckets' names from the root; k and v
// are valid during the call only.
type visitor func(buckets [][]byte, k, v []byte) error

// readBack opens path read-only and walks every key that reads back, touching every page of
// its value, and visits it (visit may be nil). Faults on the mapping (a truncated file) are
// turned into panics, and panics into the damage note: the walk goes on with the next bucket.
// With check, a walk without damage is followed by bbolt's own check of the file (its free
// list, pages reachable twice or not at all). err is an error of opening, or of visit.
func readBack(path string, lockTimeout time.Duration, visit visitor, check bool) (keys int, damage string, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bbolt.DB
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("opening: %v", p)
			}
		}()
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
	}()
	if err != nil {
		return 0, "", err
	}
	defer func() {
		defer func() { _ = recover() }()
		_ = db.Close()
	}()
	tx, err := beginRead(db)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer func() {
		defer func() { _ = recover() }()
		_ = tx.Rollback()
	}()
	w := walker{visit: visit}
	var names [][]byte
	w.guard("listing the buckets", func() {
		c := tx.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			names = append(names, bytes.Clone(k))
		}
	})
	for _, name := range names {
		if w.err != nil {
			break
		}
		w.guard(fmt.Sprintf("reading bucket %q", name), func() {
			if b := tx.Bucket(name); b != nil {
				w.bucket([][]byte{name}, b)
			}
		})
	}
	if check && w.damage == "" && w.err == nil {
		for cerr := range tx.Check() { // bbolt recovers its own panics into these errors
			if w.damage == "" {
				w.damage = "bbolt's check: " + cerr.Error()
			}
		}
	}
	return w.keys, w.damage, w.err
}

func beginRead(db *bbolt.DB) (tx *bbolt.Tx, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("beginning a read: %v", p)
		}
	}()
	return db.Begin(false)
}

// walker walks the keys of a read transaction.
type walker struct {
	visit   visitor
	keys    int
	damage  string // the first panic met
	err     error  // visit's
	touched byte
}

// guard runs f, noting its panic (the first) as the damage.
func (w *walker) guard(what string, f func()) {
	defer func() {
		if p := recover(); p != nil && w.damage == "" {
			w.damage = fmt.Sprintf("%s: %v", what, p)
		}
	}()
	f()
}

// bucket walks b's keys (nested buckets included); a key or a nested bucket that panics stops
// b's walk there (guard records it).
func (w *walker) bucket(path [][]byte, b *bbolt.Bucket) {
	c := b.Cursor()
	for k, v := c.First(); k != nil && w.err == nil; k, v = c.Next() {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				w.bucket(append(append([][]byte(nil), path...), bytes.Clone(k)), nb)
				continue
			}
		}
		for i := 0; i < len(v); i += 1024 { // a byte of every page: a fault is met here
			w.touched ^= v[i]
		}
		if w.visit != nil {
			w.err = w.visit(path, k, v)
		}
		w.keys++
	}
}

// rebuildBatch bounds the keys held between two transactions of a rebuild.
const rebuildBatch = 4 << 20

// rebuild writes the keys of path that read back into a fresh database beside it, in
// transactions of about rebuildBatch bytes (the database is never held whole), keeps the
// original as path+".original" and moves the fresh one into place. It returns the keys kept.
func rebuild(path string, lockTimeout time.Duration, perm os.FileMode) (int, error) {
	tmp := path + repairSuffix
	_ = os.Remove(tmp)
	db, err := bbolt.Open(tmp, perm, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	type pair struct {
		buckets [][]byte
		k, v    []byte
	}
	var batch []pair
	held := 0
	commit := func() error {
		err := db.Update(func(tx *bbolt.Tx) error {
			for _, p := range batch {
				b, err := tx.CreateBucketIfNotExists(p.buckets[0])
				if err != nil {
					return err
				}
				for _, name := range p.buckets[1:] {
					if b, err = b.CreateBucketIfNotExists(name); err != nil {
						return err
					}
				}
				if err := b.Put(p.k, p.v); err != nil {
					return err
				}
			}
			return nil
		})
		batch, held = batch[:0], 0
		return err
	}
	var writeErr error
	kept, _, err := readBack(path, lockTimeout, func(buckets [][]byte, k, v []byte) error {
		batch = append(batch, pair{buckets, bytes.Clone(k), bytes.Clone(v)})
		if held += len(k) + len(v); held >= rebuildBatch {
			writeErr = commit()
		}
		return writeErr
	}, false)
	switch {
	case writeErr != nil:
		err = writeErr
	case errors.Is(err, berrors.ErrTimeout):
		// another process took the database since it was checked: left to it
	default:
		// Another error is of opening: not a database, nothing to keep.
		err = commit()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path, path+".original")
	}
	if err == nil {
		if err = os.Rename(tmp, path); err != nil {
			_ = os.Rename(path+".original", path)
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	return kept, syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// pruneAside removes all but the KeepAside newest damaged copies of path.
func pruneAside(path string) {
	copies, _ := filepath.Glob(path + asideMark + "*")
	sort.Strings(copies) // the UTC stamps sort by time
	for len(copies) > KeepAside {
		_ = os.Remove(copies[0])
		copies = copies[1:]
	}
}

// bbolt's meta page: after the 16-byte page header, magic, version, page size, flags, the root
// bucket (page, sequence), the free list's page, the high-water page, the transaction id and
// the checksum (FNV-1a 64) of the 56 bytes before it.
const (
	pageHeader = 16
	metaMagic  = 0xED0CDAED
	metaSum    = 56
	noFreelist = ^uint64(0)
)

type metaPage struct {
	pageSize             uint32
	freelist, pgid, txid uint64
}

// metaDamage says what is wrong with the meta pages of the file of size bytes at path ("" when
// both are valid and the newer names only pages within the file: bbolt's check reads them).
func metaDamage(path string, size int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	read := func(off int64) (metaPage, bool) {
		var m [pageHeader + metaSum + 8]byte
		if _, err := f.ReadAt(m[:], off); err != nil && !errors.Is(err, io.EOF) {
			return metaPage{}, false
		}
		meta := m[pageHeader:]
		h := fnv.New64a()
		_, _ = h.Write(meta[:metaSum])
		if binary.LittleEndian.Uint32(meta) != metaMagic || binary.LittleEndian.Uint64(meta[metaSum:]) != h.Sum64() {
			return metaPage{}, false
		}
		le := binary.LittleEndian
		return metaPage{pageSize: le.Uint32(meta[8:]), freelist: le.Uint64(meta[32:]), pgid: le.Uint64(meta[40:]), txid: le.Uint64(meta[48:])}, true
	}
	m0, ok0 := read(0)
	if !ok0 {
		for _, ps := range []int64{int64(os.Getpagesize()), 4096, 8192, 16384, 65536} {
			if _, ok1 := read(ps); ok1 {
				return "meta page 0 is damaged: the database reads at the transaction before its last"
			}
		}
		return "both meta pages are damaged"
	}
	m1, ok1 := read(int64(m0.pageSize))
	if !ok1 {
		return "meta page 1 is damaged"
	}
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	if high := int64(m.pgid) * int64(m.pageSize); m.pageSize == 0 || high > size || high < 0 {
		return fmt.Sprintf("the file is %d bytes, shorter than its last transaction (%d pages of %d bytes)", size, m.pgid, m.pageSize)
	}
	if m.freelist != noFreelist && m.freelist >= m.pgid {
		return fmt.Sprintf("the free list's page %d is past the last page %d", m.freelist, m.pgid)
	}
	return ""
}
