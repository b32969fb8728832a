package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serveLimited(t *testing.T, n int, queued *atomic.Int64) (*http.Server, *ConnLimit, string, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	limit := NewConnLimit(n, func() { queued.Add(1) })
	srv := &http.Server{
		Handler:     http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ReadTimeout: time.Minute, // the held connections below stay until the test closes them
	}
	srv.ConnState = limit.ConnState(srv.ConnState)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(limit.Listener(ln)) }()
	return srv, limit, ln.Addr().String(), served
}

// Over the limit, a connection is served only once another closes; it is never refused.
func TestConnLimitQueuesOverTheLimit(t *testing.T) {
	var queued atomic.Int64
	srv, limit, addr, served := serveLimited(t, 2, &queued)
	defer srv.Close()

	// Two connections that send nothing hold both slots.
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, c)
	}
	require.Eventually(t, func() bool { return limit.Open() == 2 }, 5*time.Second, 5*time.Millisecond)

	got := make(chan string, 1)
	go func() {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Post("http://"+addr+"/", "text/plain", strings.NewReader("x"))
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	require.Eventually(t, func() bool { return queued.Load() >= 1 }, 5*time.Second, 5*time.Millisecond, "Accept waits for a slot")
	select {
	case s := <-got:
		t.Fatalf("served while both slots were held: %q", s)
	case <-time.After(200 * time.Millisecond):
	}

	require.NoError(t, held[0].Close())
	select {
	case s := <-got:
		assert.Equal(t, "ok", s)
	case <-time.After(10 * time.Second):
		t.Fatal("not served after a slot was released")
	}
	require.NoError(t, held[1].Close())
	// Every slot comes back but the one the next Accept holds while it waits for a connection.
	require.Eventually(t, func() bool { return limit.Open() == 1 }, 5*time.Second, 5*time.Millisecond, "every slot comes back")

	require.NoError(t, srv.Shutdown(context.Background()))
	assert.ErrorIs(t, <-served, http.ErrServerClosed)
}

// Shutdown ends an Accept that waits for a slot: it does not wait for a held connection.
func TestConnLimitShutdownWhileFull(t *testing.T) {
	var queued atomic.Int64
	srv, limit, addr, served := serveLimited(t, 1, &queued)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool { return limit.Open() == 1 && queued.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
		"the next Accept waits")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { _ = srv.Shutdown(ctx) }() // waits for the idle-less held connection; Close below ends it
	select {
	case err := <-served:
		assert.True(t, errors.Is(err, http.ErrServerClosed), "%v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return while Accept waited for a slot")
	}
	require.NoError(t, srv.Close())
}

// Behind TLS, the server still sees its *tls.Conn (the limit wraps no connection), so a
// request knows it came over TLS, and closed TLS connections give their slots back.
func TestConnLimitKeepsTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	limit := NewConnLimit(1, nil)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "not TLS", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "tls")
	})}
	srv.ConnState = limit.ConnState(nil)
	go func() {
		_ = srv.Serve(limit.Listener(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	}()
	defer srv.Close()

	for range 3 { // one slot: each request's connection must give it back for the next
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		}}
		resp, err := client.Get("https://" + ln.Addr().String() + "/")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		require.Equal(t, "tls", string(b))
	}
}
