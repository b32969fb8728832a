package transport

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestRefusals: the answers of an authenticator in front of the handler are counted by status
// (401, 403; nothing else), logged with their peer at most 5 times a minute, and the next line
// logged says how many were not; the answers themselves are unchanged.
func TestRefusals(t *testing.T) {
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"accepted":1}`))
		case "Bearer other":
			http.Error(w, "forbidden", http.StatusForbidden)
		case "Bearer bad-body":
			http.Error(w, "too large", http.StatusRequestEntityTooLarge) // the handler's own answer
		default:
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		}
	})
	core, logs := observer.New(zapcore.InfoLevel)
	counted := map[int]int{}
	h := Refusals(auth, func(status int) { counted[status]++ }, zap.New(core))
	now := time.Now()
	h.(*refusals).now = func() time.Time { return now }
	do := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/events", nil)
		req.RemoteAddr = "127.0.0.9:4242"
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	w := do("good")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"accepted":1}`, w.Body.String())
	assert.Equal(t, http.StatusRequestEntityTooLarge, do("bad-body").Code)
	for range 7 {
		assert.Equal(t, http.StatusUnauthorized, do("").Code)
	}
	assert.Equal(t, http.StatusForbidden, do("other").Code)
	assert.Equal(t, map[int]int{401: 7, 403: 1}, counted)
	entries := logs.TakeAll()
	require.Len(t, entries, 5, "5 a minute")
	assert.Equal(t, "127.0.0.9:4242", entries[0].ContextMap()["peer"])
	assert.EqualValues(t, 401, entries[0].ContextMap()["status"])
	assert.EqualValues(t, 0, entries[4].ContextMap()["refusals_not_logged_since_last"])
	now = now.Add(time.Minute)
	do("")
	entries = logs.TakeAll()
	require.Len(t, entries, 1, "a minute later")
	assert.EqualValues(t, 3, entries[0].ContextMap()["refusals_not_logged_since_last"])

	allocs := testing.AllocsPerRun(100, func() { do("good") })
	t.Logf("%.0f allocations per request, the test's request and recorder included", allocs)
}
