package live

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"time"
)

//go:embed assets
var assets embed.FS

// The page's headers: everything it loads is its own (no inline script or style, no other
// host), and no other page may frame it.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

// MaxResponseBytes bounds one answer of the API; the store's limits keep every answer far
// below it, so reaching it is an error, not a truncation.
const MaxResponseBytes = 8 << 20

// Handler serves the page and the API over a store.
type Handler struct {
	store *Store
	self  *SelfMetrics
	slots chan struct{}
	mux   *http.ServeMux
}

// NewHandler returns the page's handler: at most maxConcurrent requests are served at once,
// the ones over it are answered 503 at once (never queued).
func NewHandler(store *Store, self *SelfMetrics, maxConcurrent int) *Handler {
	h := &Handler{store: store, self: self, slots: make(chan struct{}, max(maxConcurrent, 1)), mux: http.NewServeMux()}
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	h.mux.Handle("GET /{$}", files)
	// Only the files the page loads (not the vendored licence and notes).
	for _, p := range []string{"/app.js", "/style.css", "/vendor/uplot/uPlot.iife.min.js", "/vendor/uplot/uPlot.min.css"} {
		h.mux.Handle("GET "+p, files)
	}
	h.mux.HandleFunc("GET /api/v1/runs", h.runs)
	h.mux.HandleFunc("GET /api/v1/runs/{id}", h.run)
	h.mux.HandleFunc("GET /api/v1/runs/{id}/history", h.history)
	// The same with the id as a query parameter: every id can be asked for this way, where a
	// path is cleaned first (an id "..", or "a/../b", never reaches a handler). The page uses it.
	h.mux.HandleFunc("GET /api/v1/run", h.run)
	h.mux.HandleFunc("GET /api/v1/run/history", h.history)
	h.mux.HandleFunc("GET /api/v1/health", h.health)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many requests at once", http.StatusServiceUnavailable)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
	h.mux.ServeHTTP(w, r)
}

// envelope is every API answer: the API's version and when the answer was made.
type envelope struct {
	Version int       `json:"version"`
	AsOf    time.Time `json:"as_of"`
}

func (h *Handler) write(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err == nil && len(body) > MaxResponseBytes {
		status, body = http.StatusInternalServerError, []byte(`{"error":"answer larger than the API's limit"}`)
	} else if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (h *Handler) env() envelope { return envelope{Version: APIVersion, AsOf: h.store.clk.Now().UTC()} }

func (h *Handler) runs(w http.ResponseWriter, _ *http.Request) {
	h.write(w, http.StatusOK, struct {
		envelope
		Runs   []RunSummary `json:"runs"`
		Status Status       `json:"status"`
	}{h.env(), h.store.Runs(), h.store.Status()})
}

func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	byID(h, w, r, h.store.Run, func(v *RunView) any {
		return struct {
			envelope
			Run *RunView `json:"run"`
		}{h.env(), v}
	})
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	byID(h, w, r, h.store.History, func(v *History) any {
		return struct {
			envelope
			History *History `json:"history"`
		}{h.env(), v}
	})
}

// byID answers what get gives for the request's run id (its path's, else its query's `id`),
// wrapped; 404 for a run the store does not hold.
func byID[T any](h *Handler, w http.ResponseWriter, r *http.Request, get func(string) *T, wrap func(*T) any) {
	id := r.PathValue("id")
	if id == "" {
		id = r.URL.Query().Get("id")
	}
	v := get(id)
	if v == nil {
		h.write(w, http.StatusNotFound, struct {
			envelope
			Error string `json:"error"`
		}{h.env(), "no run " + id})
		return
	}
	h.write(w, http.StatusOK, wrap(v))
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	h.write(w, http.StatusOK, struct {
		envelope
		Live      Status           `json:"live"`
		Collector *CollectorHealth `json:"collector"`
	}{h.env(), h.store.Status(), h.self.Get(r.Context())})
}
