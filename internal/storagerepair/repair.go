// Package storagerepair checks and rebuilds the bbolt databases of a file_storage directory
// before the storage extension opens them, so that a damaged database never stops the
// collector: bbolt panics on a page that is not what it should be (a crash loop under an
// orchestrator), and refuses a file it does not recognise (a failed start).
//
// Every database is read back key by key (reads that fault or panic are recovered) and written
// again into a fresh file that replaces it, as compaction does: what reads back is kept, a
// fresh file has no stale free list, and a damaged original is kept aside for inspection.
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

// Check reads the database at path back and replaces it with a fresh one holding what read
// back. An error is returned only when the rebuilt database cannot be written (the original
// is then left as it was).
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
	pairs, err := readBack(path, lockTimeout)
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		rep.InUse = true
		return rep, nil
	case err != nil:
		rep.Reason, rep.Detail = ReasonUnreadable, err.Error()
		if pairs.damage != "" || len(pairs.kv) > 0 {
			rep.Reason, rep.Detail = ReasonDamaged, err.Error()
		}
	case pairs.damage != "":
		rep.Reason, rep.Detail = ReasonDamaged, pairs.damage
	default:
		// bbolt reads the newer of its two meta pages that is valid: with one damaged it reads
		// the transaction before, which is a loss to report even when every page reads back.
		if d := metaDamage(path); d != "" {
			rep.Reason, rep.Detail = ReasonDamaged, d
		}
	}
	if err := rebuild(path, pairs.kv, fi.Mode().Perm()); err != nil {
		return rep, fmt.Errorf("rebuilding %s: %w", path, err)
	}
	rep.Kept = len(pairs.kv)
	if rep.Damaged() {
		rep.Aside = path + asideMark + time.Now().UTC().Format("20060102T150405.000Z")
		if err := os.Rename(path+".original", rep.Aside); err != nil {
			return rep, err
		}
		pruneAside(path)
	} else if err := os.Remove(path + ".original"); err != nil {
		return rep, err
	}
	return rep, nil
}

// pair is one key of a bucket (bucket names joined by "/" from the root).
type pair struct {
	bucket [][]byte
	k, v   []byte
}

type readResult struct {
	kv     []pair
	damage string // the first fault or panic met while reading back
}

// readBack opens path read-only and copies out every key that reads back. Faults on the
// mapping (a truncated file) are turned into panics, and panics into a damage note: reading
// goes on with the next bucket.
func readBack(path string, lockTimeout time.Duration) (res readResult, err error) {
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
		return res, err
	}
	defer func() {
		defer func() { _ = recover() }()
		_ = db.Close()
	}()
	tx, err := beginRead(db)
	if err != nil {
		res.damage = err.Error()
		return res, nil
	}
	defer func() {
		defer func() { _ = recover() }()
		_ = tx.Rollback()
	}()
	var names [][]byte
	walk(&res, "listing the buckets", func() {
		c := tx.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			names = append(names, bytes.Clone(k))
		}
	})
	for _, name := range names {
		walk(&res, fmt.Sprintf("reading bucket %q", name), func() {
			if b := tx.Bucket(name); b != nil {
				copyBucket(&res, [][]byte{name}, b)
			}
		})
	}
	return res, nil
}

func beginRead(db *bbolt.DB) (tx *bbolt.Tx, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("beginning a read: %v", p)
		}
	}()
	return db.Begin(false)
}

// walk runs f, noting its panic (the first) as the damage.
func walk(res *readResult, what string, f func()) {
	defer func() {
		if p := recover(); p != nil && res.damage == "" {
			res.damage = fmt.Sprintf("%s: %v", what, p)
		}
	}()
	f()
}

// copyBucket copies b's keys (nested buckets included) into res; a key whose value or a
// nested bucket that panics stops b's walk there (walk records it).
func copyBucket(res *readResult, path [][]byte, b *bbolt.Bucket) {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				copyBucket(res, append(append([][]byte(nil), path...), bytes.Clone(k)), nb)
				continue
			}
		}
		res.kv = append(res.kv, pair{bucket: path, k: bytes.Clone(k), v: bytes.Clone(v)})
	}
}

// rebuild writes kv into a fresh database beside path, keeps the original as
// path+".original" and moves the fresh one into place.
func rebuild(path string, kv []pair, perm os.FileMode) error {
	tmp := path + repairSuffix
	_ = os.Remove(tmp)
	db, err := bbolt.Open(tmp, perm, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, p := range kv {
			b, err := tx.CreateBucketIfNotExists(p.bucket[0])
			if err != nil {
				return err
			}
			for _, name := range p.bucket[1:] {
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
		return err
	}
	return syncDir(filepath.Dir(path))
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

// bbolt's meta page: after the 16-byte page header, magic, version and page size, then the
// checksum (FNV-1a 64) of the 56 bytes before it.
const (
	pageHeader = 16
	metaMagic  = 0xED0CDAED
	metaSum    = 56
)

// metaDamage says which of the two meta pages of path is not valid ("" when both are).
func metaDamage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	valid := func(off int64) (pageSize uint32, ok bool) {
		var m [pageHeader + metaSum + 8]byte
		if _, err := f.ReadAt(m[:], off); err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		meta := m[pageHeader:]
		h := fnv.New64a()
		_, _ = h.Write(meta[:metaSum])
		if binary.LittleEndian.Uint32(meta) != metaMagic || binary.LittleEndian.Uint64(meta[metaSum:]) != h.Sum64() {
			return 0, false
		}
		return binary.LittleEndian.Uint32(meta[8:]), true
	}
	size, ok0 := valid(0)
	if ok0 {
		if _, ok1 := valid(int64(size)); !ok1 {
			return "meta page 1 is damaged"
		}
		return ""
	}
	for _, size := range []int64{int64(os.Getpagesize()), 4096, 8192, 16384, 65536} {
		if _, ok1 := valid(size); ok1 {
			return "meta page 0 is damaged: the database reads at the transaction before its last"
		}
	}
	return "both meta pages are damaged"
}
