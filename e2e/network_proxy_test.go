//go:build linux

package e2e

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The fault proxy between agents and gateways: hangs, resets, busy answers.

type proxyMode int

const (
	modePass        proxyMode = iota // relay both ways
	modeHang                         // accept, read and discard, never write
	modeRefuse                       // accept and reset at once
	modeBusy                         // hand the connection to the proxy's busy server
	modeCutRequest                   // relay a request's first half, then reset
	modeCutResponse                  // relay the request whole, reset before its answer
)

// busyAnswer is what the busy server answers every request with.
type busyAnswer struct {
	code   codes.Code    // gRPC
	status int           // HTTP
	delay  time.Duration // RetryInfo / Retry-After; 0: none
}

// faultProxy listens on 127.0.0.1 and relays to upstream (a gateway's port) in the mode the
// test sets. Every mode change resets the connections open (as a gateway restart would), so
// the agent meets the new behaviour on its next connection.
type faultProxy struct {
	addr     string
	upstream string
	busy     *connListener

	mu      sync.Mutex
	mode    proxyMode
	answer  busyAnswer
	answers []time.Time // when the busy server answered a request
	conns   map[*net.TCPConn]struct{}

	hung    atomic.Int64 // connections taken in modeHang
	stalled atomic.Bool  // the relays of modePass read and discard (a gateway hung mid-connection)
	cuts    atomic.Int64 // requests or answers cut
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &faultProxy{addr: ln.Addr().String(), upstream: upstream, conns: map[*net.TCPConn]struct{}{},
		busy: &connListener{ch: make(chan net.Conn), done: make(chan struct{}), addr: ln.Addr()}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			mode := p.mode
			p.conns[c.(*net.TCPConn)] = struct{}{}
			p.mu.Unlock()
			go p.handle(c.(*net.TCPConn), mode)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.busy.Close()
		p.set(modeRefuse, busyAnswer{})
	})
	return p
}

// set switches the mode (and the busy answer) and resets every open connection.
func (p *faultProxy) set(mode proxyMode, answer busyAnswer) {
	p.mu.Lock()
	p.mode, p.answer = mode, answer
	p.stalled.Store(false)
	conns := p.conns
	p.conns = map[*net.TCPConn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		reset(c)
	}
}

// stall makes the gateway hang on the connections open too: they stay open, read and
// discarded, and new ones hang (modeHang).
func (p *faultProxy) stall() {
	p.mu.Lock()
	p.mode = modeHang
	p.stalled.Store(true)
	p.mu.Unlock()
}

// relay copies src to dst, dropping what it reads while the proxy is stalled.
func (p *faultProxy) relay(dst, src io.ReadWriter) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.stalled.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// reset closes c with a TCP RST (SO_LINGER 0) instead of a FIN.
func reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

func (p *faultProxy) track(c *net.TCPConn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
}

func (p *faultProxy) handle(c *net.TCPConn, mode proxyMode) {
	switch mode {
	case modeRefuse:
		reset(c)
		return
	case modeHang:
		p.hung.Add(1)
		_, _ = io.Copy(io.Discard, c)
		reset(c)
		return
	case modeBusy:
		select {
		case p.busy.ch <- c:
		case <-p.busy.done:
			reset(c)
		}
		return
	}
	u, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		reset(c)
		return
	}
	up := u.(*net.TCPConn)
	p.track(up)
	defer reset(c)
	defer reset(up)
	switch mode {
	case modeCutRequest:
		go func() { _, _ = io.Copy(c, up) }()
		if hdr, payload, err := relayUntilData(up, c, true); err == nil {
			_, _ = up.Write(append(hdr, payload[:len(payload)/2]...))
			time.Sleep(20 * time.Millisecond) // the half reaches the gateway before the RST
			p.cuts.Add(1)
		}
	case modeCutResponse:
		go func() { _, _ = io.Copy(up, c) }()
		if _, _, err := relayUntilData(c, up, false); err == nil {
			p.cuts.Add(1)
		}
	default:
		go func() { p.relay(up, c); reset(up) }()
		p.relay(c, up)
	}
}

// relayUntilData relays HTTP/2 frames from src to dst (after the client's connection preface
// when preface is set) up to the first non-empty DATA frame of a stream, a gRPC message, which
// it returns unrelayed.
func relayUntilData(dst io.Writer, src io.Reader, preface bool) (hdr, payload []byte, err error) {
	if preface {
		pre := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
		if _, err := io.ReadFull(src, pre); err != nil {
			return nil, nil, err
		}
		if _, err := dst.Write(pre); err != nil {
			return nil, nil, err
		}
	}
	for {
		hdr = make([]byte, 9)
		if _, err := io.ReadFull(src, hdr); err != nil {
			return nil, nil, err
		}
		length := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		payload = make([]byte, length)
		if _, err := io.ReadFull(src, payload); err != nil {
			return nil, nil, err
		}
		const frameData = 0
		if hdr[3] == frameData && binary.BigEndian.Uint32(hdr[5:])&0x7fffffff != 0 && length > 0 {
			return hdr, payload, nil
		}
		if _, err := dst.Write(append(hdr, payload...)); err != nil {
			return nil, nil, err
		}
	}
}

// busyReply records an answer of the busy server and returns what to answer.
func (p *faultProxy) busyReply() busyAnswer {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers = append(p.answers, time.Now())
	return p.answer
}

// answersSince returns the busy answers from the n-th on.
func (p *faultProxy) answersSince(n int) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.answers[min(n, len(p.answers)):]...)
}

func (p *faultProxy) answered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.answers)
}

// serveBusyGRPC answers every OTLP export with the busy answer's status (and RetryInfo).
func (p *faultProxy) serveBusyGRPC(t *testing.T) {
	srv := grpc.NewServer()
	pmetricotlp.RegisterGRPCServer(srv, &busyOTLP{p: p})
	go func() { _ = srv.Serve(p.busy) }()
	t.Cleanup(srv.Stop)
}

type busyOTLP struct {
	pmetricotlp.UnimplementedGRPCServer
	p *faultProxy
}

func (b *busyOTLP) Export(context.Context, pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	a := b.p.busyReply()
	st := status.New(a.code, "the gateway is busy (the test's fault proxy)")
	if a.delay > 0 {
		var err error
		if st, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(a.delay)}); err != nil {
			return pmetricotlp.NewExportResponse(), status.Error(codes.Internal, err.Error())
		}
	}
	return pmetricotlp.NewExportResponse(), st.Err()
}

// serveBusyHTTP answers every request with the busy answer's HTTP status (and Retry-After).
func (p *faultProxy) serveBusyHTTP(t *testing.T) {
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		a := p.busyReply()
		if a.delay > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(a.delay/time.Second)))
		}
		http.Error(w, "the gateway is busy (the test's fault proxy)", a.status)
	})}
	go func() { _ = srv.Serve(p.busy) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// connListener is a net.Listener fed with the proxy's connections in modeBusy.
type connListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }
