package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
)

// Reasons a matched path is not followed. Each is logged and counted once per path, tried again
// every poll: a path that becomes readable is followed then.
const (
	// RefusalNotRegular: a directory, FIFO, device or socket: never opened, so a poll cannot
	// block on it or read forever.
	RefusalNotRegular = "not_regular_file"
	// RefusalCannotStat: a symbolic link loop, a directory on the way that denies access.
	RefusalCannotStat = "cannot_stat"
	// RefusalCannotOpen: permissions deny reading, or the file went between stat and open.
	RefusalCannotOpen = "cannot_open"
)

// maxRefused bounds the paths remembered as refused; past it a refusal is logged and counted
// at every poll (rate-limited by the source's poll interval), never held.
const maxRefused = 4096

type refusal struct {
	reason string
	poll   int
}

// refuse logs and counts that path is not followed, once while it stays refused for reason.
func (t *Follower) refuse(path, reason string, err error) {
	if r, ok := t.refused[path]; ok && r.reason == reason {
		t.refused[path] = refusal{reason, t.polls}
		return
	}
	if t.refused == nil {
		t.refused = map[string]refusal{}
	}
	if len(t.refused) < maxRefused {
		t.refused[path] = refusal{reason, t.polls}
	}
	fields := []zap.Field{zap.String("path", path), zap.String("reason", reason)}
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	t.logger.Warn(t.name+": a matching path is not followed", fields...)
	if t.opts.Refused != nil {
		t.opts.Refused(path, reason)
	}
}

// Regular stats path during a poll: a regular file is returned; a path gone since the glob is
// not, silently; any other (a directory, FIFO, device, socket, a link loop) is refused. A
// source's Targets uses it for the paths it picks itself.
func (t *Follower) Regular(path string) (os.FileInfo, bool) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false
	case err != nil:
		t.refuse(path, RefusalCannotStat, err)
		return nil, false
	case !fi.Mode().IsRegular():
		t.refuse(path, RefusalNotRegular, fmt.Errorf("a %s", modeName(fi.Mode())))
		return nil, false
	}
	return fi, true
}

// CheckGlobDirs refuses the directory a glob lists when it cannot be opened (permission
// denied): a glob skips such a directory silently, so its files would be missed with no word.
// The directory is the pattern's last one before its first wildcard; one deeper down that
// cannot be listed is not seen. Called once a poll, for the source's include patterns.
func (t *Follower) CheckGlobDirs(include []string) {
	for _, p := range include {
		dir := globDir(p)
		f, err := os.Open(dir)
		switch {
		case err == nil:
			_ = f.Close()
		case !errors.Is(err, fs.ErrNotExist):
			t.refuse(dir, RefusalCannotOpen, err)
		}
	}
}

// globDir is the directory before the first path element of pattern that holds a wildcard.
func globDir(pattern string) string {
	dir := filepath.Dir(pattern)
	for d := dir; ; d = filepath.Dir(d) {
		if strings.ContainsAny(filepath.Base(d), `*?[\`) {
			dir = filepath.Dir(d)
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// forgetRefused forgets the paths this poll did not refuse: followed now, or no longer matched.
func (t *Follower) forgetRefused() {
	for p, r := range t.refused {
		if r.poll != t.polls {
			delete(t.refused, p)
		}
	}
}
