package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// StreamOptions configure the stream transport.
type StreamOptions struct {
	Network      string // "tcp" or "unix"
	Endpoint     string // host:port, or the socket's path
	SocketMode   fs.FileMode
	MaxLineBytes int
	// QuietTimeout: at shutdown a connection is read until it has been silent this long.
	QuietTimeout time.Duration
	// DrainTimeout bounds the whole of Shutdown's reading (0: none): past it every connection
	// is read once more without waiting, what it had sent is applied, and it is closed.
	DrainTimeout time.Duration
	// MaxConnections bounds the connections served at once (0: none); one more is closed as
	// soon as it is accepted, and OnRefused is called.
	MaxConnections int
	// IdleTimeout closes a connection that sends nothing for this long (0: never), then
	// OnIdleClosed is called.
	IdleTimeout  time.Duration
	OnRefused    func()
	OnIdleClosed func()
}

// The phases of a stream server.
const (
	phaseServing  int32 = iota
	phaseDraining       // Shutdown: read each connection until it is quiet or the drain deadline
	phaseDone           // the drain deadline passed: read without waiting, then close
)

// StreamServer serves the stream transport: each connection is one stream of lines with its
// own current resource. Reading is synchronous with aggregation, so a sender faster than the
// aggregator fills its socket instead of the collector's memory.
type StreamServer struct {
	opts       StreamOptions
	newDecoder NewDecoder
	record     Recorder
	logger     *zap.Logger

	ln         net.Listener
	sock       os.FileInfo // the Unix socket file Start made
	phase      atomic.Int32
	drainUntil atomic.Int64 // Unix nanoseconds: the drain deadline, while draining
	mu         sync.Mutex
	conns      map[net.Conn]struct{}
	refused    atomic.Int64 // connections refused over MaxConnections
	connsLog   *refusalLog  // connections refused, with their peer: 5 lines a minute
	refusals   *refusalLog  // rejected lines, with their peer
	wg         sync.WaitGroup
	acceptDone chan struct{} // closed when the accept loop has returned
}

// NewStreamServer returns a stream server whose connections' lines go to the streams
// newDecoder makes, one per connection (for the source opts.Network); Start listens.
func NewStreamServer(newDecoder NewDecoder, opts StreamOptions, record Recorder, logger *zap.Logger) *StreamServer {
	return &StreamServer{opts: opts, newDecoder: newDecoder, record: record, logger: logger, conns: map[net.Conn]struct{}{},
		refusals: newRefusalLog(logger, "stream"),
		connsLog: newRefusalLogEvery(logger, "stream", 5, time.Minute)}
}

// Addr is the address the server listens on.
func (s *StreamServer) Addr() net.Addr {
	if s.opts.Network == "unix" {
		return &net.UnixAddr{Net: "unix", Name: s.opts.Endpoint} // the listener's is the private path it was bound at
	}
	return s.ln.Addr()
}

// Start listens and serves in the background.
func (s *StreamServer) Start(ctx context.Context) error {
	if s.opts.Network == "unix" {
		if err := removeStaleSocket(s.opts.Endpoint); err != nil {
			return err
		}
	}
	var ln net.Listener
	var err error
	if s.opts.Network == "unix" {
		ln, err = listenUnixPrivately(ctx, s.opts.Endpoint, s.opts.SocketMode)
		if err != nil {
			return err
		}
		if s.sock, err = os.Lstat(s.opts.Endpoint); err != nil {
			_ = ln.Close()
			return fmt.Errorf("stream: %w", err)
		}
	} else {
		var lc net.ListenConfig
		if ln, err = lc.Listen(ctx, s.opts.Network, s.opts.Endpoint); err != nil {
			return fmt.Errorf("stream: listen on %s %s: %w", s.opts.Network, s.opts.Endpoint, err)
		}
	}
	s.ln = ln
	s.acceptDone = make(chan struct{})
	s.wg.Add(1)
	go s.accept()
	return nil
}

// listenUnixPrivately listens on a Unix socket at path that nobody but the collector's user can
// reach at any moment, whatever the umask: the socket is bound in a new directory of mode
// 0700 beside path, set to mode there, and only then linked at path (a link never replaces
// a file that appeared meanwhile). Binding at path directly, then chmod, would leave the
// socket open to everyone the umask lets in until the chmod.
func listenUnixPrivately(ctx context.Context, path string, mode fs.FileMode) (net.Listener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".otelcol-gym-")
	if err != nil {
		return nil, fmt.Errorf("stream: a private directory beside %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o700); err != nil { // MkdirTemp's 0700 minus the umask: at most that
		return nil, fmt.Errorf("stream: %w", err)
	}
	tmp := filepath.Join(dir, "s")
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("stream: listen on unix %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // its path moves; Shutdown removes it
	if err := os.Chmod(tmp, mode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("stream: set mode %o on %s: %w", mode, path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("stream: listen on unix %s: %w", path, err)
	}
	return ln, nil
}

// removeOwnSocket removes the socket file at path if it is still the one Start made.
func (s *StreamServer) removeOwnSocket() {
	if s.sock == nil {
		return
	}
	if fi, err := os.Lstat(s.opts.Endpoint); err == nil && os.SameFile(fi, s.sock) {
		_ = os.Remove(s.opts.Endpoint)
	}
}

// removeStaleSocket removes a socket file that no process listens on any more (left by a
// collector that crashed). A live socket, or a file that is not a socket, is an error.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("stream: %s exists and is not a socket; not replacing it", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("stream: another process is listening on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stream: remove stale socket %s: %w", path, err)
	}
	return nil
}

func (s *StreamServer) accept() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || (isTimeout(err) && s.draining()) {
				return // shutting down, and the backlog is empty
			}
			// Out of file descriptors and the like: back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logger.Warn("stream: accept failed; retrying", zap.String("endpoint", s.opts.Endpoint), zap.Error(err), zap.Duration("in", delay))
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.opts.MaxConnections > 0 && len(s.conns) >= s.opts.MaxConnections {
			s.mu.Unlock()
			// Counted before the close, so that whoever sees the connection closed sees it
			// counted too.
			s.refused.Add(1)
			// The receiver's stream_connections_refused counts them all.
			s.connsLog.warn("connection refused: stream.max_connections are open",
				zap.Int("max_connections", s.opts.MaxConnections), zap.String("peer", s.peerName(c.RemoteAddr())))
			if s.opts.OnRefused != nil {
				s.opts.OnRefused()
			}
			_ = c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// peerName is what names a connection's sender in logs: its address, or, for a Unix socket's
// peer, which has none, the socket.
func (s *StreamServer) peerName(peer net.Addr) string {
	if peer != nil && peer.String() != "" && peer.String() != "@" {
		return peer.String()
	}
	return s.opts.Endpoint
}

// deadlineReader reads a connection under the deadline of the server's phase: the idle timeout
// while serving, the quiet time (never past the drain deadline) while draining; once the
// drain deadline has passed it does not wait at all.
type deadlineReader struct {
	s *StreamServer
	c net.Conn
}

func (d deadlineReader) Read(p []byte) (int, error) {
	for {
		phase := d.s.phase.Load()
		switch phase {
		case phaseServing:
			if d.s.opts.IdleTimeout > 0 {
				_ = d.c.SetReadDeadline(time.Now().Add(d.s.opts.IdleTimeout))
			}
		case phaseDraining:
			dl := time.Now().Add(d.s.opts.QuietTimeout)
			if until := d.s.drainUntil.Load(); until != 0 && dl.UnixNano() > until {
				dl = time.Unix(0, until)
			}
			_ = d.c.SetReadDeadline(dl)
		default:
			return 0, os.ErrDeadlineExceeded
		}
		// Shutdown moves the phase on before it sets the deadlines of the connections: if it
		// did while this deadline was being set, set it again for the new phase.
		if d.s.phase.Load() == phase {
			break
		}
	}
	return d.c.Read(p)
}

func (s *StreamServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	peer := s.peerName(c.RemoteAddr())
	lr := newLineReader(s.newDecoder(s.opts.Network), s.opts.MaxLineBytes, func(st *ingest.Stats) {
		s.refusals.rejected("peer", peer, st, "")
		if s.record != nil {
			s.record(st)
		}
	})
	err := lr.readFrom(deadlineReader{s, c})
	switch {
	case err == nil:
		lr.finish() // the peer closed: a partial last line is rejected
	case isTimeout(err) && s.draining():
		// Shutdown: the connection was quiet, or the drain deadline passed. Shut its reading
		// side, so that the peer's next write fails (on a Unix socket) instead of being
		// lost, then apply what the kernel holds of what it had sent, and close.
		finalRead(c, lr)
		lr.finish()
	case isTimeout(err):
		s.logger.Debug("stream: connection idle; closed", zap.String("peer", c.RemoteAddr().String()), zap.Duration("idle_timeout", s.opts.IdleTimeout))
		lr.finish()
		if s.opts.OnIdleClosed != nil {
			s.opts.OnIdleClosed()
		}
	default:
		if !errors.Is(err, net.ErrClosed) {
			s.logger.Debug("stream: connection ended", zap.String("peer", c.RemoteAddr().String()), zap.Error(err))
		}
		lr.flush()
	}
}

// finalReadLimit bounds the last read of a connection at shutdown, after its reading side is
// shut (which makes the read end as soon as what the kernel holds is read).
const finalReadLimit = time.Second

func finalRead(c net.Conn, lr *lineReader) {
	cr, ok := c.(interface{ CloseRead() error })
	if !ok || cr.CloseRead() != nil {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(finalReadLimit))
	_ = lr.readFrom(c)
}

func (s *StreamServer) draining() bool { return s.phase.Load() != phaseServing }

// Open is the number of connections being served.
func (s *StreamServer) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Shutdown stops accepting and finishes the lines the connections had already sent: the
// connections the peers had opened (the listen backlog) are still accepted, and each
// connection is read until it stays silent for QuietTimeout (or ends), but never past
// DrainTimeout, nor past ctx: then whatever it had sent is read without waiting and applied,
// and it is closed.
func (s *StreamServer) Shutdown(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	if s.opts.DrainTimeout > 0 {
		s.drainUntil.Store(time.Now().Add(s.opts.DrainTimeout).UnixNano())
	}
	if !s.phase.CompareAndSwap(phaseServing, phaseDraining) {
		return nil
	}
	quiet := time.Now().Add(s.opts.QuietTimeout)
	s.setDeadlines(quiet)
	var err error
	if dl, ok := s.ln.(interface{ SetDeadline(time.Time) error }); ok {
		// Empty the backlog, then stop.
		_ = dl.SetDeadline(quiet)
	} else {
		err = s.ln.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var deadline <-chan time.Time
	if s.opts.DrainTimeout > 0 {
		t := time.NewTimer(s.opts.DrainTimeout)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-done:
	case <-deadline:
	case <-ctx.Done():
	}
	s.phase.Store(phaseDone)
	_ = s.ln.Close()
	s.setDeadlines(time.Now()) // every read returns now; each connection is read once more
	<-done
	if cerr := s.ln.Close(); err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	s.removeOwnSocket()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *StreamServer) setDeadlines(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.SetReadDeadline(t)
	}
}
