package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
)

func newTestHandler(t *testing.T) (*HTTPHandler, *aggregate.Aggregator) {
	t.Helper()
	agg := newTestAggregator(t)
	return newEventsHTTPHandler(agg, HTTPOptions{MaxLineBytes: 1 << 16, MaxConcurrent: 2, Wait: time.Second}, nil), agg
}

func serve(h http.Handler, method, path string, header map[string]string, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func jsonErrorOf(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var e map[string]string
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), rec.Body.String())
	require.NotEmpty(t, e["error"])
	return e["error"]
}

// Only NDJSON and its JSON-lines aliases are events: a page in a browser can send text/plain
// (or no type, or a form) to 127.0.0.1 without a CORS preflight, and must not be able to post
// metrics that way.
func TestHTTPContentType(t *testing.T) {
	for _, ct := range []string{
		"application/x-ndjson",
		"application/x-ndjson; charset=utf-8",
		"Application/X-NDJSON",
		"application/ndjson",
		"application/jsonl",
		"application/json-lines",
		"application/x-jsonlines",
	} {
		h, agg := newTestHandler(t)
		rec := serve(h, http.MethodPost, EventsPath, map[string]string{"Content-Type": ct}, retry("p")+"\n")
		assert.Equal(t, http.StatusOK, rec.Code, "%s: %s", ct, rec.Body.String())
		assert.Equal(t, 1, agg.Collect(aggregate.Scope{}).DataPointCount(), ct)
	}
	for _, c := range []struct {
		name   string
		header map[string]string
	}{
		{"text/plain from a foreign origin", map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "https://evil.example"}},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}},
		{"no type", map[string]string{}},
		{"a form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
		{"multipart", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}},
		{"application/json", map[string]string{"Content-Type": "application/json"}},
		{"a broken type", map[string]string{"Content-Type": "application/x-ndjson; ="}},
	} {
		h, agg := newTestHandler(t)
		rec := serve(h, http.MethodPost, EventsPath, c.header, retry("p")+"\n")
		assert.Equal(t, http.StatusUnsupportedMediaType, rec.Code, c.name)
		assert.Contains(t, jsonErrorOf(t, rec), "application/x-ndjson", c.name)
		assert.Zero(t, agg.Collect(aggregate.Scope{}).DataPointCount(), "%s: nothing applied", c.name)
	}
}

// Every error is JSON: an unknown path, a wrong method.
func TestHTTPErrorsAreJSON(t *testing.T) {
	h, _ := newTestHandler(t)
	rec := serve(h, http.MethodPost, "/v1/nope", map[string]string{"Content-Type": "application/x-ndjson"}, retry("p"))
	assert.Equal(t, http.StatusNotFound, rec.Code)
	assert.Contains(t, jsonErrorOf(t, rec), EventsPath)
	rec = serve(h, http.MethodGet, "/", nil, "")
	assert.Equal(t, http.StatusNotFound, rec.Code)
	jsonErrorOf(t, rec)
	rec = serve(h, http.MethodGet, EventsPath, nil, "")
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, http.MethodPost, rec.Header().Get("Allow"))
	jsonErrorOf(t, rec)
}

// A body of exactly the limit is read whole (its buffer never grows past the limit); a byte
// more is 413 and nothing of it is applied.
func TestHTTPBodyAtTheLimit(t *testing.T) {
	const limit = 100 << 10 // past the small-body size: a body slot is taken too
	line := retry("p") + "\n"
	exact := strings.Repeat(line, limit/len(line))
	exact += strings.Repeat(" ", limit-len(exact)) // blank tail: skipped
	for _, c := range []struct {
		body string
		want int
	}{{exact, http.StatusOK}, {exact + " ", http.StatusRequestEntityTooLarge}} {
		agg := newTestAggregator(t)
		h := newEventsHTTPHandler(agg, HTTPOptions{MaxLineBytes: 1 << 16, MaxConcurrent: 1, Wait: time.Second, MaxBodyBytes: limit}, nil)
		sc := confighttp.NewDefaultServerConfig()
		sc.MaxRequestBodySize = limit
		srv, err := sc.ToServer(context.Background(), nil, componenttest.NewNopTelemetrySettings(), h)
		require.NoError(t, err)
		rec := serve(srv.Handler, http.MethodPost, EventsPath, map[string]string{"Content-Type": "application/x-ndjson"}, c.body)
		assert.Equal(t, c.want, rec.Code, rec.Body.String())
		want := 0
		if c.want == http.StatusOK {
			want = 1
		}
		assert.Equal(t, want, agg.Collect(aggregate.Scope{}).DataPointCount())
		assert.Len(t, h.bodySlots, 0, "the body slot is given back")
	}
}

// Bodies past the small-body size move into pooled buffers of the whole limit: every line of
// every body counts, whichever buffer it was read into, with bodies read at once.
func TestHTTPLargeBodiesInPooledBuffers(t *testing.T) {
	const limit = 1 << 20
	agg := newTestAggregator(t)
	h := newEventsHTTPHandler(agg, HTTPOptions{MaxLineBytes: 1 << 16, MaxConcurrent: 2, Wait: 10 * time.Second, MaxBodyBytes: limit}, nil)
	sc := confighttp.NewDefaultServerConfig()
	sc.MaxRequestBodySize = limit
	srv, err := sc.ToServer(context.Background(), nil, componenttest.NewNopTelemetrySettings(), h)
	require.NoError(t, err)
	const bodies, lines = 12, 6000 // about 330 KiB each
	want := map[string]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range bodies {
		var b strings.Builder
		for j := range lines {
			p := fmt.Sprintf("b%dp%d", i, j%50)
			b.WriteString(retry(p) + "\n")
			want[p]++
		}
		body := b.String()
		wg.Go(func() {
			rec := serve(srv.Handler, http.MethodPost, EventsPath, map[string]string{"Content-Type": "application/x-ndjson"}, body)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		})
	}
	wg.Wait()
	assert.Equal(t, want, providers(agg.Collect(aggregate.Scope{})))
	assert.Len(t, h.bodySlots, 0)
	assert.Len(t, h.slots, 0)
}

// A buffer of the whole limit never goes back to the small pool, even when the limit is under
// 1 MiB: a body reads into its small buffer up to its capacity before it takes a body slot.
func TestHTTPLimitBufferNotInSmallPool(t *testing.T) {
	for _, limit := range []int64{256 << 10, 1 << 20, 4 << 20} {
		agg := newTestAggregator(t)
		h := newEventsHTTPHandler(agg, HTTPOptions{MaxLineBytes: 1 << 16, MaxConcurrent: 1, Wait: time.Second, MaxBodyBytes: limit}, nil)
		b := make([]byte, 0, limit)
		h.putBuf(&b)
		small := make([]byte, 0, h.opts.SmallBody)
		h.putBuf(&small)
		for range 4 {
			if p, _ := h.bufs.Get().(*[]byte); p != nil {
				require.LessOrEqual(t, cap(*p), h.opts.SmallBody, "limit %d: a buffer of %d bytes in the small pool", limit, cap(*p))
			}
		}
	}
}

// TestHTTPRefusalsNameTheSender: a body refused whole (its type) and a body with rejected
// lines are logged with the sender's address (the counts say only how many, by reason), the
// second with its reasons and first error; at most 10 lines per 10 s.
func TestHTTPRefusalsNameTheSender(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := newEventsHTTPHandler(newTestAggregator(t), HTTPOptions{MaxLineBytes: 1 << 16, MaxConcurrent: 2, Wait: time.Second, Logger: zap.New(core)}, nil)
	post := func(ct, body string) {
		req := httptest.NewRequest(http.MethodPost, EventsPath, strings.NewReader(body))
		req.RemoteAddr = "127.0.0.7:5151"
		req.Header.Set("Content-Type", ct)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	post("text/plain", retry("p")+"\n")
	post("application/x-ndjson", retry("p")+"\n{not json\n")
	post("application/x-ndjson", retry("p")+"\n") // nothing refused: no line
	refused := logs.FilterMessage("http: a request was refused; nothing of it was applied").All()
	require.Len(t, refused, 1)
	assert.Equal(t, "127.0.0.7:5151", refused[0].ContextMap()["peer"])
	assert.EqualValues(t, http.StatusUnsupportedMediaType, refused[0].ContextMap()["status"])
	rejected := logs.FilterMessage("http: lines rejected").All()
	require.Len(t, rejected, 1)
	assert.Equal(t, "127.0.0.7:5151", rejected[0].ContextMap()["peer"])
	assert.Equal(t, map[string]int64{"invalid_json": 1}, rejected[0].ContextMap()["reasons"])
	assert.Contains(t, rejected[0].ContextMap()["first_error"], "invalid JSON")
	for range 20 {
		post("text/plain", "")
	}
	assert.Len(t, logs.FilterMessage("http: a request was refused; nothing of it was applied").All(), 9, "10 lines per 10 s")
}
