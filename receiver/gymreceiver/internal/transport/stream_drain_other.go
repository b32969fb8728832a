//go:build !unix

package transport

import "net"

// readWithoutWaiting: without Unix's non-blocking reads, what arrived after the last read of a
// drain is not read.
func readWithoutWaiting(net.Conn, *lineReader) {}
