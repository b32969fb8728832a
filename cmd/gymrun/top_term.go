//go:build linux || darwin

package main

import (
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// terminal is standard input in non-canonical mode (keys arrive one by one, unechoed; Ctrl-C
// still signals) and the alternate screen, both given back by restore.
type terminal struct {
	in     *os.File
	fd     int
	saved  unix.Termios
	opened bool // the alternate screen is in use
}

// openTerminal returns errNoTerminal when in is not a terminal.
func openTerminal(in *os.File) (*terminal, error) {
	fd := int(in.Fd())
	saved, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, errNoTerminal
	}
	raw := *saved
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &raw); err != nil {
		return nil, errNoTerminal
	}
	return &terminal{in: in, fd: fd, saved: *saved}, nil
}

// restore gives the terminal back as it was.
func (t *terminal) restore(w io.Writer) {
	_ = unix.IoctlSetTermios(t.fd, ioctlSetTermios, &t.saved)
	if t.opened {
		_, _ = io.WriteString(w, "\x1b[?25h\x1b[?1049l") // cursor shown, main screen back
	}
}

// readKeys sends each key read; closed when standard input ends. A key top is too busy to take
// is dropped: it will read the next one.
func (t *terminal) readKeys(keys chan<- byte) {
	defer close(keys)
	buf := make([]byte, 1)
	for {
		n, err := t.in.Read(buf)
		if err != nil {
			return
		}
		if n == 1 {
			select {
			case keys <- buf[0]:
			default:
			}
		}
	}
}

// draw replaces the screen with frame f, at most 80 columns wide and as many lines as the
// terminal has.
func (t *terminal) draw(w io.Writer, f frame) {
	width, height := 80, 0
	if ws, err := unix.IoctlGetWinsize(t.fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		width, height = min(int(ws.Col), 80), int(ws.Row)
	}
	var b strings.Builder
	writeFrame(&b, f, width)
	text := strings.TrimRight(b.String(), "\n")
	if rows := strings.Split(text, "\n"); height > 0 && len(rows) > height {
		text = strings.Join(rows[:height], "\n")
	}
	var out strings.Builder
	if !t.opened {
		out.WriteString("\x1b[?1049h\x1b[?25l") // alternate screen, cursor hidden
		t.opened = true
	}
	out.WriteString("\x1b[H\x1b[2J")
	out.WriteString(strings.ReplaceAll(text, "\n", "\r\n"))
	_, _ = io.WriteString(w, out.String())
}
