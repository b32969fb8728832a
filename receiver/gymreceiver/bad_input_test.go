package gymreceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confignet"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/internal/transport"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadatatest"
)

// The bad-input corpus (testdata/bad/, described in testdata/bad/expected.yaml): each case is
// sent to a real receiver as one HTTP body and as one TCP stream connection. Asserted: the
// rejected lines, each with its exact reason (self-telemetry) and, over HTTP, its line number
// and error text; the counts; the good lines around the bad ones, counted in the exported
// metrics; and that the receiver keeps serving afterwards.

const badGood = `{"event":"sandbox.create_retry","provider":"good"}`

type badError struct {
	Line   int    `yaml:"line"`
	Reason string `yaml:"reason"`
	Error  string `yaml:"error"`
}

type badCounts struct {
	Errors      *[]badError `yaml:"errors"`
	Accepted    *int64      `yaml:"accepted"`
	Unknown     *int64      `yaml:"unknown"`
	Good        *int64      `yaml:"good"`
	GoodDefault *int64      `yaml:"good_default"`
}

type badCase struct {
	Name         string `yaml:"name"`
	Generate     string `yaml:"generate"`
	Encoding     string `yaml:"encoding"`
	Status       int    `yaml:"status"`
	MaxLineBytes int    `yaml:"max_line_bytes"`
	badCounts    `yaml:",inline"`
	Stream       badCounts `yaml:"stream"`
}

// over returns c with the fields o sets replaced.
func (c badCounts) over(o badCounts) badCounts {
	if o.Errors != nil {
		c.Errors = o.Errors
	}
	if o.Accepted != nil {
		c.Accepted = o.Accepted
	}
	if o.Unknown != nil {
		c.Unknown = o.Unknown
	}
	if o.Good != nil {
		c.Good = o.Good
	}
	if o.GoodDefault != nil {
		c.GoodDefault = o.GoodDefault
	}
	return c
}

func (c badCounts) errors() []badError {
	if c.Errors == nil {
		return nil
	}
	return *c.Errors
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// reasons counts the errors by reason.
func (c badCounts) reasons() map[string]int64 {
	out := map[string]int64{}
	for _, e := range c.errors() {
		out[e.Reason]++
	}
	return out
}

func loadBadCases(t *testing.T) []badCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "bad", "expected.yaml"))
	require.NoError(t, err)
	var doc struct {
		Cases []badCase `yaml:"cases"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&doc))
	require.NotEmpty(t, doc.Cases)

	// Every file of the corpus has its expectations, and every case its body.
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.jsonl"))
	require.NoError(t, err)
	named := map[string]bool{}
	for _, c := range doc.Cases {
		require.False(t, named[c.Name], "case %s twice", c.Name)
		named[c.Name] = true
		require.NotNil(t, c.Accepted, "case %s: accepted", c.Name)
		require.NotNil(t, c.Good, "case %s: good", c.Name)
		if c.Generate == "" {
			require.FileExists(t, filepath.Join("testdata", "bad", c.Name+".jsonl"))
		}
	}
	for _, f := range files {
		assert.True(t, named[strings.TrimSuffix(filepath.Base(f), ".jsonl")], "%s has no case in expected.yaml", f)
	}
	return doc.Cases
}

// badBody returns the body of a case: its file, or what generate names.
func badBody(t *testing.T, c badCase) []byte {
	t.Helper()
	if c.Generate == "" {
		b, err := os.ReadFile(filepath.Join("testdata", "bad", c.Name+".jsonl"))
		require.NoError(t, err)
		return b
	}
	var b bytes.Buffer
	line := func(s ...string) {
		for _, p := range s {
			b.WriteString(p)
		}
		b.WriteByte('\n')
	}
	const retryPrefix = `{"event":"sandbox.create_retry","provider":"`
	switch c.Generate {
	case "long-line": // 10 MB, the newline not counted
		line(badGood)
		line(retryPrefix, strings.Repeat("x", 10<<20-len(retryPrefix)-2), `"}`)
		line(badGood)
	case "body-over-limit": // good lines of 64,000 bytes, past the default 16 MiB body limit
		pad := 64000 - len(badGood) - len(`,"pad":""`)
		l := strings.TrimSuffix(badGood, "}") + `,"pad":"` + strings.Repeat("p", pad) + `"}`
		for b.Len() <= 16<<20 {
			line(l)
		}
	case "very-deep-nesting":
		line(badGood)
		line(`{"event":"x","a":`, strings.Repeat("[", 30000), strings.Repeat("]", 30000), "}")
		line(badGood)
	case "ten-thousand-fields":
		line(badGood)
		b.WriteString(strings.TrimSuffix(badGood, "}"))
		for i := range 10000 {
			fmt.Fprintf(&b, `,"field.%d":%d`, i, i)
		}
		line("}")
		line(badGood)
	case "resource-ten-thousand-attributes":
		line(`{"event":"resource","attributes":{"service.name":"a"}}`)
		line(badGood)
		b.WriteString(`{"event":"resource","attributes":{`)
		for i := range 10000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"attr.%d":%d`, i, i)
		}
		line("}}")
		line(badGood)
	default:
		t.Fatalf("case %s: nothing generates %q", c.Name, c.Generate)
	}
	return b.Bytes()
}

// startBadReceiver starts a receiver with HTTP and a TCP stream, whose self-telemetry the test
// reads.
func startBadReceiver(t *testing.T, c badCase) (httpURL, streamAddr string, tt *componenttest.Telemetry, sink *consumertest.MetricsSink, stop func()) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = freeAddr(t)
	sc := cfg.Stream.GetOrInsertDefault()
	sc.Transport = confignet.TransportTypeTCP
	sc.Endpoint = freeAddr(t)
	cfg.CollectionInterval = time.Hour // the collection comes from Shutdown
	cfg.ExpireAfter = 2 * time.Hour
	if c.MaxLineBytes > 0 {
		cfg.MaxLineBytes = c.MaxLineBytes
	}
	require.NoError(t, cfg.Validate())
	tt = componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	sink = new(consumertest.MetricsSink)
	stop = started(t, metadatatest.NewSettings(tt), cfg, sink)
	return "http://" + cfg.HTTP.Get().NetAddr.Endpoint + transport.EventsPath, sc.Endpoint, tt, sink, stop
}

// selfTelemetry reads the receiver's line counters: accepted, unknown, rejected by reason.
func selfTelemetry(t *testing.T, tt *componenttest.Telemetry) (accepted, unknown int64, rejected map[string]int64) {
	t.Helper()
	sum := func(name string, each func(dp metricdata.DataPoint[int64])) {
		m, err := tt.GetMetric(name)
		if err != nil {
			return // nothing recorded
		}
		s, ok := m.Data.(metricdata.Sum[int64])
		require.True(t, ok, "%s is %T", name, m.Data)
		for _, dp := range s.DataPoints {
			each(dp)
		}
	}
	sum("otelcol_receiver_gym_lines_accepted", func(dp metricdata.DataPoint[int64]) { accepted += dp.Value })
	sum("otelcol_receiver_gym_lines_unknown", func(dp metricdata.DataPoint[int64]) { unknown += dp.Value })
	rejected = map[string]int64{}
	sum("otelcol_receiver_gym_lines_rejected", func(dp metricdata.DataPoint[int64]) {
		r, _ := dp.Attributes.Value("reason")
		if dp.Value != 0 {
			rejected[r.AsString()] += dp.Value
		}
	})
	return accepted, unknown, rejected
}

// retriesOf sums gym.sandbox.create_retry_total of a provider: over every resource, and under
// the resource whose only attribute is gym.source=source (a stream's default resource).
func retriesOf(md pmetric.Metrics, provider, source string) (all, def int64) {
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		attrs := rm.Resource().Attributes()
		isDefault := false
		if v, ok := attrs.Get("gym.source"); ok && attrs.Len() == 1 && v.Str() == source {
			isDefault = true
		}
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			if m.Name() != "gym.sandbox.create_retry_total" {
				continue
			}
			for k := range m.Sum().DataPoints().Len() {
				dp := m.Sum().DataPoints().At(k)
				if p, ok := dp.Attributes().Get("nemo.gym.sandbox.provider"); ok && p.Type() == pcommon.ValueTypeStr && p.Str() == provider {
					all += dp.IntValue()
					if isDefault {
						def += dp.IntValue()
					}
				}
			}
		}
	}
	return all, def
}

const badAfter = `{"event":"sandbox.create_retry","provider":"after"}`

func TestBadInputCorpus(t *testing.T) {
	for _, c := range loadBadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			body := badBody(t, c)
			t.Run("http", func(t *testing.T) { badOverHTTP(t, c, body) })
			t.Run("tcp", func(t *testing.T) { badOverStream(t, c, body) })
		})
	}
}

func badOverHTTP(t *testing.T, c badCase, body []byte) {
	want := c.badCounts
	url, _, tt, sink, stop := startBadReceiver(t, c)
	var header map[string]string
	switch c.Encoding {
	case "":
	case "gzip":
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, err := zw.Write(body)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		body, header = b.Bytes(), map[string]string{"Content-Encoding": "gzip"}
	case "zstd":
		enc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		body, header = enc.EncodeAll(body, nil), map[string]string{"Content-Encoding": "zstd"}
		require.NoError(t, enc.Close())
	default:
		t.Fatalf("case %s: unknown encoding %q", c.Name, c.Encoding)
	}
	if c.Encoding != "" {
		t.Logf("%s body: %d bytes on the wire", c.Encoding, len(body))
	}
	status, ans, _ := post(t, url, body, header)

	errs := want.errors()
	wantStatus := c.Status
	if wantStatus == 0 {
		wantStatus = http.StatusOK
		if len(errs) > 0 && deref(want.Accepted)+deref(want.Unknown) == 0 {
			wantStatus = http.StatusBadRequest
		}
	}
	require.Equal(t, wantStatus, status, "%+v", ans)
	if status == http.StatusOK || status == http.StatusBadRequest {
		assert.Equal(t, deref(want.Accepted), ans.Accepted, "accepted")
		assert.Equal(t, deref(want.Unknown), ans.Unknown, "unknown")
		assert.Equal(t, int64(len(errs)), ans.Rejected, "rejected")
		require.Len(t, ans.Errors, min(len(errs), 10), "%+v", ans.Errors)
		for i, e := range ans.Errors {
			assert.Equal(t, errs[i].Line, e.Line, "error %d: %s", i, e.Error)
			assert.Contains(t, e.Error, errs[i].Error, "error %d (line %d)", i, e.Line)
		}
	}

	// The receiver keeps serving.
	status, ans, _ = post(t, url, []byte(badAfter), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, int64(1), ans.Accepted)
	stop()
	badCheckTotals(t, want, tt, sink, "http")
}

func badOverStream(t *testing.T, c badCase, body []byte) {
	want := c.over(c.Stream)
	_, addr, tt, sink, stop := startBadReceiver(t, c)
	send := func(b []byte) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = conn.Write(b)
		require.NoError(t, err)
		require.NoError(t, conn.(*net.TCPConn).CloseWrite()) // the end of the stream
		require.NoError(t, conn.Close())
	}
	send(body)
	// The receiver keeps serving: a new connection's line is counted (checked after Shutdown,
	// which reads every connection to its end).
	send([]byte(badAfter + "\n"))
	stop()
	badCheckTotals(t, want, tt, sink, "tcp")
}

// badCheckTotals checks self-telemetry and the exported metrics after the case and the good
// line sent after it.
func badCheckTotals(t *testing.T, want badCounts, tt *componenttest.Telemetry, sink *consumertest.MetricsSink, source string) {
	t.Helper()
	accepted, unknown, rejected := selfTelemetry(t, tt)
	assert.Equal(t, deref(want.Accepted)+1, accepted, "accepted lines (self-telemetry), the good line after included")
	assert.Equal(t, deref(want.Unknown), unknown, "unknown lines (self-telemetry)")
	assert.True(t, maps.Equal(want.reasons(), rejected), "rejected by reason: want %v, got %v", want.reasons(), rejected)

	md := lastMetrics(t, sink)
	good, goodDefault := retriesOf(md, "good", source)
	assert.Equal(t, deref(want.Good), good, "good lines counted in the exported metrics")
	if want.GoodDefault != nil {
		assert.Equal(t, *want.GoodDefault, goodDefault, "good lines under the default resource")
	}
	after, _ := retriesOf(md, "after", source)
	assert.Equal(t, int64(1), after, "the good line sent after the case")
}

// A connection the kernel accepted just before Shutdown (in the listen backlog, not yet
// returned by Accept) with its lines already sent: Shutdown must read it too.
func TestStreamShutdownReadsConnectionsNotYetAccepted(t *testing.T) {
	_, addr, _, sink, stop := startBadReceiver(t, badCase{})
	const n = 200
	for range n {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = conn.Write([]byte(badAfter + "\n"))
		require.NoError(t, err)
		require.NoError(t, conn.Close())
	}
	stop()
	after, _ := retriesOf(lastMetrics(t, sink), "after", "tcp")
	assert.Equal(t, int64(n), after, "lines of every connection made before Shutdown")
}

// Senders that trickle their bodies hold the receiver's body slots (4 x GOMAXPROCS) while they
// do. With http.read_timeout they lose them when late, and others are served (SECURITY.md).
func TestHTTPSlowSendersLoseTheirSlots(t *testing.T) {
	def := createDefaultConfig().(*Config).HTTP.GetOrInsertDefault()
	require.Positive(t, def.ReadTimeout, "the default config bounds how long a body may take")

	url, _, _ := startReceiver(t, func(c *Config) { c.HTTP.Get().ReadTimeout = time.Second })
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), transport.EventsPath)
	for range 4 * runtime.GOMAXPROCS(0) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: gym\r\nContent-Length: 1000\r\n\r\n{\"ev", transport.EventsPath)
		require.NoError(t, err)
	}
	time.Sleep(1500 * time.Millisecond) // every slot is taken, then read_timeout passes
	status, ans, _ := post(t, url, []byte(badAfter), nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, int64(1), ans.Accepted)
}
