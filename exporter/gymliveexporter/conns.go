package gymliveexporter

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/gym-telemetry/otelcol-gym/exporter/gymliveexporter/internal/metadata"
)

// minWait is how long a connection waits for its request before a new one may evict it. A
// normal client's headers arrive with its connection, but the server may not have read them
// yet when a burst of connections is accepted: evicting by age alone would close it.
const minWait = 100 * time.Millisecond

// Reasons of exporter_gymlive_connections_closed.
const (
	closedHeaderTimeout = "header_timeout"
	closedEvicted       = "evicted"
)

// connGuard bounds the page's open connections at max without letting slow clients starve it.
// A connection still sending its request headers, or idle between requests, holds nothing but
// its slot; when every slot is taken, a new connection evicts the one of those that has waited
// longest, once it has waited minWait (a normal client sends its headers in one packet, so the
// oldest is a slow one), rather than waiting behind it in the listen backlog until its header
// timeout. Accept waits only while every connection is serving a request (which ends within the
// write timeout) or waiting for one for less than minWait. Slow clients that are not evicted
// are cut off by read_header_timeout; both are counted.
type connGuard struct {
	max           int
	headerTimeout time.Duration
	tel           *metadata.TelemetryBuilder

	mu    sync.Mutex
	conns map[net.Conn]*connEntry
	free  chan struct{} // a connection closed or went idle: a waiting Accept looks again
	done  chan struct{}
	stop  sync.Once
}

type connEntry struct {
	state   http.ConnState
	since   time.Time // when it last became new or idle: waiting for a request since
	handled bool      // a request of it reached the handler since
}

func newConnGuard(maxConns int, headerTimeout time.Duration, tel *metadata.TelemetryBuilder) *connGuard {
	return &connGuard{max: max(maxConns, 1), headerTimeout: headerTimeout, tel: tel, conns: map[net.Conn]*connEntry{},
		free: make(chan struct{}, 1), done: make(chan struct{})}
}

func (g *connGuard) closed(reason string) {
	g.tel.ExporterGymliveConnectionsClosed.Add(context.Background(), 1,
		metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
}

// Listener wraps ln. The connections it returns are ln's own (a TLS listener's *tls.Conn stays
// one, as http.Server needs).
func (g *connGuard) Listener(ln net.Listener) net.Listener {
	return &guardedListener{Listener: ln, g: g}
}

type guardedListener struct {
	net.Listener
	g *connGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := l.g
	for {
		g.mu.Lock()
		var wait time.Duration
		if len(g.conns) >= g.max {
			if v, waited := g.oldestWaiting(); v != nil && waited < minWait {
				wait = minWait - waited
			} else if v != nil {
				delete(g.conns, v)
				g.tel.ExporterGymliveConnections.Add(context.Background(), -1)
				g.closed(closedEvicted)
				// Closed outside the lock and without waiting: a TLS close writes an alert.
				go v.Close()
			}
		}
		if len(g.conns) < g.max {
			g.conns[c] = &connEntry{state: http.StateNew, since: time.Now()}
			g.mu.Unlock()
			g.tel.ExporterGymliveConnections.Add(context.Background(), 1)
			return c, nil
		}
		g.mu.Unlock()
		// Wait for a connection to end or go idle, or the oldest waiting one to reach minWait.
		var timer <-chan time.Time
		if wait > 0 {
			timer = time.After(wait)
		}
		select {
		case <-g.free:
		case <-timer:
		case <-g.done:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

// Close also ends an Accept waiting for a slot, so that Shutdown does not wait for a request.
func (l *guardedListener) Close() error {
	l.g.stop.Do(func() { close(l.g.done) })
	return l.Listener.Close()
}

// oldestWaiting is the connection that has waited longest for a request (new or idle) and for
// how long; nil when every one is serving a request.
func (g *connGuard) oldestWaiting() (net.Conn, time.Duration) {
	var oldest net.Conn
	var at time.Time
	for c, e := range g.conns {
		if e.state != http.StateActive && (oldest == nil || e.since.Before(at)) {
			oldest, at = c, e.since
		}
	}
	if oldest == nil {
		return nil, 0
	}
	return oldest, time.Since(at)
}

// ConnState tracks each connection's state (set it as the server's ConnState; next, if set, is
// called too).
func (g *connGuard) ConnState(next func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	return func(c net.Conn, s http.ConnState) {
		g.track(c, s)
		if next != nil {
			next(c, s)
		}
	}
}

func (g *connGuard) track(c net.Conn, s http.ConnState) {
	g.mu.Lock()
	e := g.conns[c]
	if e == nil { // evicted: counted then
		g.mu.Unlock()
		return
	}
	freed := false
	switch s {
	case http.StateIdle:
		e.since, e.handled, freed = time.Now(), false, true
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, c)
		// The server makes a connection active once it has read any byte of a request, before
		// the headers are whole; one closed without reaching the handler, read_header_timeout
		// after it began waiting, was cut off by it (an idle one is closed by the idle timeout).
		timedOut := !e.handled && e.state != http.StateIdle && g.headerTimeout > 0 && time.Since(e.since) >= g.headerTimeout
		g.mu.Unlock()
		g.tel.ExporterGymliveConnections.Add(context.Background(), -1)
		if timedOut {
			g.closed(closedHeaderTimeout)
		}
		g.signal()
		return
	}
	e.state = s
	g.mu.Unlock()
	if freed {
		g.signal()
	}
}

func (g *connGuard) signal() {
	select {
	case g.free <- struct{}{}:
	default:
	}
}

type connKey struct{}

// ConnContext keeps the connection in its requests' context, for Handler (set it as the
// server's ConnContext; next, if set, is called first).
func (g *connGuard) ConnContext(next func(context.Context, net.Conn) context.Context) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		return context.WithValue(ctx, connKey{}, c)
	}
}

// Handler marks a request's connection as having reached the handler, then serves it with h.
func (g *connGuard) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			g.mu.Lock()
			if e := g.conns[c]; e != nil {
				e.handled = true
			}
			g.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}
