package transport

import (
	"net"
	"net/http"
	"sync"
)

// ConnLimit bounds the connections an http.Server serves at once. Go's server has no such
// bound: each connection costs a descriptor, a goroutine and its buffers, so a flood of them
// could starve every other listener of the process of descriptors. Over the limit, Accept
// waits for a connection to close: the ones over it wait in the kernel's listen backlog, which
// costs the collector nothing, and are served in turn (a sender sees a slow connect, not an
// error). Slots are released by the server's ConnState hook, so the connections the listener
// returns are the listener's own (a TLS listener's *tls.Conn stays one).
type ConnLimit struct {
	slots  chan struct{}
	onFull func()
	done   chan struct{}
	stop   sync.Once
}

// NewConnLimit serves at most n connections at once; onFull, if set, is called each time
// Accept finds every slot taken (the limit is reached; the next connection will wait).
func NewConnLimit(n int, onFull func()) *ConnLimit {
	return &ConnLimit{slots: make(chan struct{}, n), onFull: onFull, done: make(chan struct{})}
}

// Listener wraps ln: Accept takes a slot first.
func (l *ConnLimit) Listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, limit: l}
}

// ConnState releases a connection's slot when the server is done with it. Set it as the
// server's ConnState (next, if set, is called too).
func (l *ConnLimit) ConnState(next func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	return func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			<-l.slots
		}
		if next != nil {
			next(c, s)
		}
	}
}

// Open reports the slots taken: the connections being served, and the one Accept takes
// before it waits for the next connection.
func (l *ConnLimit) Open() int { return len(l.slots) }

type limitedListener struct {
	net.Listener
	limit *ConnLimit
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	l := ll.limit
	select {
	case l.slots <- struct{}{}:
	default:
		if l.onFull != nil {
			l.onFull()
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := ll.Listener.Accept()
	if err != nil {
		<-l.slots // never handed to the server: no ConnState will release it
		return nil, err
	}
	return c, nil
}

// Close also ends an Accept waiting for a slot, so Shutdown does not wait for a connection
// to close first.
func (ll *limitedListener) Close() error {
	ll.limit.stop.Do(func() { close(ll.limit.done) })
	return ll.Listener.Close()
}
