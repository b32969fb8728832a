//go:build unix

package transport

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// readWithoutWaiting applies what the kernel holds of a connection's bytes, without waiting
// for more: at the end of a drain, the lines a peer had sent are counted even when they arrived
// after the last blocking read.
func readWithoutWaiting(c net.Conn, lr *lineReader) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = lr.readFrom(nonblockingReader{rc})
}

// nonblockingReader reads a socket once per call; no data yet is the end (io.EOF).
type nonblockingReader struct{ rc syscall.RawConn }

func (r nonblockingReader) Read(p []byte) (int, error) {
	var n int
	var rerr error
	if err := r.rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), p)
		return true // never wait for readiness
	}); err != nil {
		return 0, err
	}
	switch {
	case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EINTR):
		return 0, io.EOF
	case rerr != nil:
		return 0, rerr
	case n <= 0:
		return 0, io.EOF // the peer closed
	}
	return n, nil
}
