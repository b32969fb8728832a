package live

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serve(h http.Handler, method, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, http.NoBody))
	return w
}

func TestHandlerAPI(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	s.Consume(sampleBatch())
	s.Tick()
	h := NewHandler(s, nil, 4)

	w := serve(h, "GET", "/api/v1/runs")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	var runs struct {
		Version int          `json:"version"`
		Runs    []RunSummary `json:"runs"`
		Status  Status       `json:"status"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &runs))
	assert.Equal(t, APIVersion, runs.Version)
	require.Len(t, runs.Runs, 1)
	assert.Equal(t, 10.0, runs.Runs[0].CompletedTotal)
	assert.Equal(t, 16, runs.Status.Limits.MaxRuns)

	w = serve(h, "GET", "/api/v1/runs/r1")
	require.Equal(t, http.StatusOK, w.Code)
	var run struct {
		Run RunView `json:"run"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &run))
	assert.Equal(t, s.Run("r1").Completed, run.Run.Completed)
	assert.Equal(t, "r1-driver", run.Run.ServerRows[0].Instance, "the server's fields are the row's")

	w = serve(h, "GET", "/api/v1/runs/r1/history")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `"completed":{"series":[{"name":"failed","values":[3]},{"name":"scored","values":[7]}]}`)

	assert.Equal(t, http.StatusNotFound, serve(h, "GET", "/api/v1/runs/nope").Code)
	assert.Equal(t, http.StatusNotFound, serve(h, "GET", "/api/v1/runs/nope/history").Code)
	assert.Equal(t, http.StatusMethodNotAllowed, serve(h, "POST", "/api/v1/runs").Code)
	assert.Equal(t, http.StatusNotFound, serve(h, "GET", "/api/v2/runs").Code)

	w = serve(h, "GET", "/api/v1/health")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `"collector":null`, "no self_metrics")
}

// Any run id can be asked for by query: a path is cleaned before it is routed, so an id with
// dot segments is only reachable this way (the page asks this way).
func TestHandlerRunIDsByQuery(t *testing.T) {
	s, _ := newTestStore(DefaultLimits())
	ids := []string{"..", ".", "a/../b", "x/y", "%2F", "r1 ?&#"}
	for _, id := range ids {
		b := newBatch()
		sum(b.resource(serverRes(id, "driver")...), "gym.rollout.completed_total", 7, false, "nemo.gym.rollout.outcome", "scored", "nemo.gym.rollout.dispatch.name", "math")
		s.Consume(b.md)
	}
	s.Tick()
	h := NewHandler(s, nil, 4)
	for _, id := range ids {
		w := serve(h, "GET", "/api/v1/run?id="+url.QueryEscape(id))
		require.Equal(t, http.StatusOK, w.Code, id)
		var run struct {
			Run RunView `json:"run"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &run))
		assert.Equal(t, id, run.Run.ID)
		assert.Equal(t, 7.0, run.Run.CompletedTotal, id)
		w = serve(h, "GET", "/api/v1/run/history?id="+url.QueryEscape(id))
		require.Equal(t, http.StatusOK, w.Code, id)
		assert.Contains(t, w.Body.String(), `"completed":{"series":[{"name":"scored","values":[7]}]}`, id)
	}
	assert.NotEqual(t, http.StatusOK, serve(h, "GET", "/api/v1/runs/..").Code, "a path is cleaned: the reason for the query form")
	assert.Equal(t, http.StatusNotFound, serve(h, "GET", "/api/v1/run?id=nope").Code)
	assert.Equal(t, http.StatusNotFound, serve(h, "GET", "/api/v1/run").Code, "no id")
}

// Every answer carries the page's headers; the page and its assets are the embedded files,
// with no inline script or style and nothing from another host.
func TestHandlerPage(t *testing.T) {
	h := NewHandler(NewStore(DefaultLimits(), nil), nil, 4)
	for path, ctype := range map[string]string{
		"/": "text/html", "/app.js": "text/javascript", "/style.css": "text/css",
		"/vendor/uplot/uPlot.iife.min.js": "text/javascript", "/vendor/uplot/uPlot.min.css": "text/css",
	} {
		w := serve(h, "GET", path)
		require.Equal(t, http.StatusOK, w.Code, path)
		assert.Contains(t, w.Header().Get("Content-Type"), ctype, path)
		assert.Equal(t, contentSecurityPolicy, w.Header().Get("Content-Security-Policy"), path)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), path)
		body := w.Body.String()
		assert.NotRegexp(t, `(?i)https?://(?:[^"' ]*)\.(?:js|css)`, body, "%s loads nothing from another host", path)
		if path == "/" {
			assert.NotRegexp(t, regexp.MustCompile(`<script(?:[^>](?:[^s]|s[^r]|sr[^c]))*>`), body, "every script is a file")
			assert.NotContains(t, body, "style=", "no inline style")
			assert.NotContains(t, body, "<style", "no inline style")
		}
	}
	assert.Equal(t, http.StatusNotFound, serve(h, "GET", "/vendor/uplot/VERSION.md").Code, "only the files the page loads")
	w := serve(h, "GET", "/vendor/uplot/../../handler.go")
	assert.NotEqual(t, http.StatusOK, w.Code)
	assert.NotContains(t, w.Body.String(), "package live")
}

// Requests over max concurrent ones are answered 503 at once, never queued.
func TestHandlerConcurrency(t *testing.T) {
	h := NewHandler(NewStore(DefaultLimits(), nil), nil, 1)
	h.slots <- struct{}{} // a request in progress
	w := serve(h, "GET", "/api/v1/runs")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	<-h.slots
	assert.Equal(t, http.StatusOK, serve(h, "GET", "/api/v1/runs").Code)
}

// The health answer reads the collector's own metrics from the URL given, and says why when
// it cannot.
func TestHandlerHealth(t *testing.T) {
	self := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "otelcol_receiver_refused_metric_points_total{receiver=\"otlp\"} 4\n")
	}))
	defer self.Close()
	h := NewHandler(NewStore(DefaultLimits(), nil), NewSelfMetrics(self.URL, 0), 4)
	w := serve(h, "GET", "/api/v1/health")
	var v struct {
		Collector CollectorHealth `json:"collector"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
	assert.Empty(t, v.Collector.Error)
	for _, f := range v.Collector.Families {
		if f.Name == "otelcol_receiver_refused_metric_points" {
			assert.Equal(t, 4.0, f.Total)
		}
	}
	self.Close()
	h = NewHandler(NewStore(DefaultLimits(), nil), NewSelfMetrics(self.URL, 0), 4)
	require.NoError(t, json.Unmarshal(serve(h, "GET", "/api/v1/health").Body.Bytes(), &v))
	assert.True(t, strings.Contains(v.Collector.Error, "connect"), v.Collector.Error)
}
