package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// parseStreamURL reads a stream target: unix:///path/to.sock (or unix:relative.sock) or
// tcp://host:port (tcp4://, tcp6:// too). It returns the network and address for net.Dial.
func parseStreamURL(s string) (network, addr string, err error) {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", fmt.Errorf("%q: want unix:///path or tcp://host:port", s)
	}
	switch scheme {
	case "unix":
		path := strings.TrimPrefix(rest, "//")
		if path == "" {
			return "", "", fmt.Errorf("%q: no socket path", s)
		}
		return "unix", path, nil
	case "tcp", "tcp4", "tcp6":
		hostport, ok := strings.CutPrefix(rest, "//")
		if !ok {
			return "", "", fmt.Errorf("%q: want %s://host:port", s, scheme)
		}
		hostport = strings.TrimSuffix(hostport, "/")
		if _, _, err := net.SplitHostPort(hostport); err != nil {
			return "", "", fmt.Errorf("%q: %w", s, err)
		}
		return scheme, hostport, nil
	default:
		return "", "", fmt.Errorf("%q: scheme %q: want unix or tcp", s, scheme)
	}
}

func dialStream(ctx context.Context, target string, timeout time.Duration) (net.Conn, error) {
	network, addr, err := parseStreamURL(target)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: timeout}
	return d.DialContext(ctx, network, addr)
}

// finishStream ends a stream: it closes the sending half of c, then waits (at most timeout)
// until the receiver closes its side, which it does once it has read every line. The receiver
// never writes on a stream; anything it did write is discarded.
func finishStream(c net.Conn, timeout time.Duration) error {
	defer c.Close()
	hc, ok := c.(interface{ CloseWrite() error })
	if !ok {
		return nil
	}
	if err := hc.CloseWrite(); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	if _, err := io.Copy(io.Discard, c); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("the receiver did not close the connection within %v of the end of the stream", timeout)
		}
		return err
	}
	return nil
}

// streamTotals is what one stream connection carried.
type streamTotals struct {
	lines, bytes int64
}

// sendOverStream copies the lines of in to target over one connection, adding a newline
// after a last line that has none (the receiver rejects a partial last line), then waits for
// the receiver to close the connection.
func sendOverStream(ctx context.Context, in io.Reader, target string, timeout time.Duration) (streamTotals, error) {
	var tot streamTotals
	c, err := dialStream(ctx, target, timeout)
	if err != nil {
		return tot, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	w := bufio.NewWriterSize(c, 256<<10)
	r := bufio.NewReaderSize(in, 256<<10)
	mid := false // inside a line: the last byte written was not a newline
	for {
		text, rerr := r.ReadSlice('\n')
		if len(text) > 0 {
			if _, err := w.Write(text); err != nil {
				c.Close()
				return tot, err
			}
			tot.bytes += int64(len(text))
			mid = text[len(text)-1] != '\n'
			if !mid {
				tot.lines++
			}
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue // a line longer than the buffer: the rest follows
		}
		if errors.Is(rerr, io.EOF) {
			if mid {
				_ = w.WriteByte('\n')
				tot.bytes++
				tot.lines++
			}
			break
		}
		if rerr != nil {
			c.Close()
			return tot, rerr
		}
	}
	if err := w.Flush(); err != nil {
		c.Close()
		return tot, err
	}
	return tot, finishStream(c, timeout)
}
