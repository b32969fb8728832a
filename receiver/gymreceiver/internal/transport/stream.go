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
	"time"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/protocol"
)

// StreamOptions configure the stream transport.
type StreamOptions struct {
	Network      string // "tcp" or "unix"
	Endpoint     string // host:port, or the socket's path
	SocketMode   fs.FileMode
	MaxLineBytes int
	// DrainTimeout bounds how long Shutdown keeps reading what the connections had already
	// sent; a connection that stays silent this long is done.
	DrainTimeout time.Duration
}

// StreamServer serves the stream transport: each connection is one stream of lines with its
// own current resource. Reading is synchronous with aggregation, so a sender faster than the
// aggregator fills its socket instead of the collector's memory.
type StreamServer struct {
	opts   StreamOptions
	agg    *protocol.Aggregator
	record Recorder
	logger *zap.Logger

	ln         net.Listener
	sock       os.FileInfo // the Unix socket file Start made
	mu         sync.Mutex
	conns      map[net.Conn]struct{}
	closing    bool
	wg         sync.WaitGroup
	acceptDone chan struct{} // closed when the accept loop has returned
}

// NewStreamServer returns a stream server; Start listens.
func NewStreamServer(agg *protocol.Aggregator, opts StreamOptions, record Recorder, logger *zap.Logger) *StreamServer {
	return &StreamServer{opts: opts, agg: agg, record: record, logger: logger, conns: map[net.Conn]struct{}{}}
}

// Addr is the address the server listens on.
func (s *StreamServer) Addr() net.Addr { return s.ln.Addr() }

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
			s.logger.Warn("stream: accept failed; retrying", zap.Error(err), zap.Duration("in", delay))
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.closing {
			// A connection the peer opened before shutdown: read what it sent.
			_ = c.SetReadDeadline(time.Now().Add(s.opts.DrainTimeout))
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *StreamServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	st := s.agg.NewStream(s.opts.MaxLineBytes, protocol.DefaultResource(s.opts.Network, ""))
	lr := newLineReader(st, s.opts.MaxLineBytes, s.record)
	err := lr.readFrom(c)
	for err != nil && isTimeout(err) && s.draining() {
		// Shutdown: keep reading while the peer still has lines for us.
		_ = c.SetReadDeadline(time.Now().Add(s.opts.DrainTimeout))
		before := lr.read
		err = lr.readFrom(c)
		if isTimeout(err) && lr.read == before {
			break
		}
	}
	if err != nil && !isTimeout(err) && !errors.Is(err, net.ErrClosed) {
		s.logger.Debug("stream: connection ended", zap.String("peer", c.RemoteAddr().String()), zap.Error(err))
	}
	if err == nil {
		lr.finish() // the peer closed: a partial last line is rejected
	} else {
		lr.flush()
	}
}

func (s *StreamServer) draining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops accepting and finishes the lines the connections had already sent: the
// connections the peers had opened (the listen backlog) are still accepted, and each
// connection is read until it stays silent for DrainTimeout (or ends), then closed.
func (s *StreamServer) Shutdown(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	for c := range s.conns {
		_ = c.SetReadDeadline(time.Now().Add(s.opts.DrainTimeout))
	}
	s.mu.Unlock()
	var err error
	if dl, ok := s.ln.(interface{ SetDeadline(time.Time) error }); ok {
		// Empty the backlog, then stop.
		_ = dl.SetDeadline(time.Now().Add(s.opts.DrainTimeout))
	} else {
		err = s.ln.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		_ = s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		<-done
	}
	if cerr := s.ln.Close(); err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	s.removeOwnSocket()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
