//go:build linux

package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A real Jaeger (v1.75.0, built from its module by `make jaeger` into _build/jaeger) on the
// configuration shipped for users, deploy/jaeger/jaeger.yaml, with its ports moved to free
// loopback ones (e2e/testdata/configs/jaeger.yaml): OTLP in, memory storage, its query API out
// (api_v3, which answers in OTLP JSON, and the UI's /api/traces).

var (
	jaegerOnce sync.Once
	jaegerBin  string
	jaegerErr  error
)

// JaegerBinary is Jaeger's path: $JAEGER_BIN, else _build/jaeger, which the first test that
// needs it builds with `make jaeger` (a no-op when `make test` has built it, as it does
// before go test; go build where make is missing). It fails the test when Jaeger can't be
// built: no test that needs Jaeger is skipped.
func JaegerBinary(t *testing.T) string {
	t.Helper()
	jaegerOnce.Do(func() {
		if jaegerBin = os.Getenv("JAEGER_BIN"); jaegerBin != "" {
			_, jaegerErr = os.Stat(jaegerBin)
			return
		}
		jaegerBin = filepath.Join(Root, "_build", "jaeger")
		cmd := exec.Command("make", "--no-print-directory", "jaeger")
		if _, err := exec.LookPath("make"); err != nil {
			cmd = exec.Command("go", "build", "-modfile=tools/jaeger/go.mod", "-o", jaegerBin,
				"github.com/jaegertracing/jaeger/cmd/jaeger")
		}
		cmd.Dir = Root
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			jaegerErr = fmt.Errorf("building Jaeger (%s): %w\n%s", strings.Join(cmd.Args, " "), err, out)
			return
		}
		if d := time.Since(start); d > 5*time.Second {
			fmt.Fprintf(os.Stderr, "e2e: Jaeger built in %s\n", d.Round(time.Second))
		}
	})
	require.NoError(t, jaegerErr, "Jaeger: `make jaeger` builds _build/jaeger, or set JAEGER_BIN")
	return jaegerBin
}

// JaegerOptions change how StartJaegerWith runs Jaeger.
type JaegerOptions struct {
	// UIAssets is a directory of a built Jaeger UI (its index.html and static/), served at
	// QueryURL in place of the binary's own. A binary built from the Go module embeds no UI:
	// it serves a placeholder page at /, and the API alone.
	UIAssets string
	// MaxTraces bounds the memory storage (100000 when 0).
	MaxTraces int
}

// JaegerPorts are the loopback ports of one Jaeger: OTLP in, the query API, the health check.
type JaegerPorts struct {
	OTLPGRPC, OTLPHTTP, QueryHTTP, QueryGRPC, Health int
	// From JaegerOptions, for the configuration template.
	UIAssets  string
	MaxTraces int
}

// Jaeger is a running Jaeger.
type Jaeger struct {
	*Process
	// OTLPGRPC is the OTLP/gRPC receiver's host:port (an otlp_grpc exporter's endpoint, with
	// tls::insecure); OTLPHTTP the OTLP/HTTP receiver's URL (an otlp_http exporter's).
	OTLPGRPC, OTLPHTTP string
	// QueryURL serves the query API and the UI: http://127.0.0.1:PORT.
	QueryURL string
	Ports    JaegerPorts
}

// StartJaeger starts Jaeger on free loopback ports with memory storage and waits until it
// takes OTLP and answers queries.
func StartJaeger(t *testing.T) *Jaeger {
	t.Helper()
	return StartJaegerWith(t, JaegerOptions{})
}

// StartJaegerWith is StartJaeger with options. It starts it again on other ports when one
// picked was taken in the meantime; t.Cleanup stops it.
func StartJaegerWith(t *testing.T, o JaegerOptions) *Jaeger {
	t.Helper()
	bin := JaegerBinary(t)
	if o.MaxTraces == 0 {
		o.MaxTraces = 100000
	}
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		p := JaegerPorts{
			OTLPGRPC: Port(t), OTLPHTTP: Port(t), QueryHTTP: Port(t), QueryGRPC: Port(t), Health: Port(t),
			UIAssets: o.UIAssets, MaxTraces: o.MaxTraces,
		}
		cfg, err := LoadConfig("jaeger.yaml", p)
		require.NoError(t, err)
		override := filepath.Join(dir, fmt.Sprintf("jaeger-%d.yaml", attempt))
		require.NoError(t, os.WriteFile(override, []byte(cfg), 0o600))
		// Jaeger reads no OTEL_* variable with enable_tracing off; cleared all the same, so
		// that nothing of the test's environment points it elsewhere.
		proc := StartProcessEnv(t, "jaeger", []string{"OTEL_SDK_DISABLED=true", "OTEL_EXPORTER_OTLP_ENDPOINT=",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_TRACES_EXPORTER=none"},
			bin, "--config", filepath.Join(Root, "deploy", "jaeger", "jaeger.yaml"), "--config", override)
		j := &Jaeger{
			Process:  proc,
			OTLPGRPC: fmt.Sprintf("127.0.0.1:%d", p.OTLPGRPC),
			OTLPHTTP: fmt.Sprintf("http://127.0.0.1:%d", p.OTLPHTTP),
			QueryURL: fmt.Sprintf("http://127.0.0.1:%d", p.QueryHTTP),
			Ports:    p,
		}
		// healthcheckv2's /status answers 200 once every component, the OTLP receiver last,
		// has started.
		err = proc.WaitReady(fmt.Sprintf("http://127.0.0.1:%d/status", p.Health), 60*time.Second)
		if err == nil {
			err = proc.WaitReady(j.QueryURL+"/api/v3/services", 10*time.Second)
		}
		if err == nil {
			t.Cleanup(func() { _ = proc.Stop(15 * time.Second) })
			return j
		}
		if attempt < StartAttempts && proc.Exited() && AddressInUse(proc) {
			t.Logf("jaeger: a port was taken, starting again on others (attempt %d)", attempt+1)
			continue
		}
		t.Fatal(err)
	}
}

// ErrTraceNotFound is what Jaeger's query API answers for a trace it does not have (yet).
var ErrTraceNotFound = errors.New("trace not found")

// get GETs path (with its query) from the query API and returns the body of a 200 answer;
// a 404 is ErrTraceNotFound.
func (j *Jaeger) get(ctx context.Context, path string) ([]byte, error) {
	body, err := Get(ctx, j.QueryURL+path, 256<<20)
	var se *StatusError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusNotFound:
		return nil, fmt.Errorf("%s: %w", path, ErrTraceNotFound)
	case se != nil:
		return nil, fmt.Errorf("%w: %s", err, se.Body)
	}
	return body, err
}

// tracesV3 decodes an api_v3 answer ({"result": OTLP TracesData in JSON}).
func tracesV3(body []byte) (ptrace.Traces, error) {
	var ans struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return ptrace.Traces{}, err
	}
	if len(ans.Result) == 0 {
		return ptrace.Traces{}, fmt.Errorf("no result in %.200s", body)
	}
	return (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(ans.Result)
}

// Trace is trace traceID (32 hex digits) as Jaeger's api_v3 returns it (/api/v3/traces/ID):
// OTLP, every resource, scope and span, as the UI shows it (Jaeger's adjusters applied: spans
// sorted, exact duplicates dropped; no clock skew adjustment). ErrTraceNotFound when Jaeger
// has no span of it.
func (j *Jaeger) Trace(ctx context.Context, traceID string) (ptrace.Traces, error) {
	body, err := j.get(ctx, "/api/v3/traces/"+url.PathEscape(traceID))
	if err != nil {
		return ptrace.Traces{}, err
	}
	return tracesV3(body)
}

// FindTraces are the traces (up to limit) that have a span of service (its resource's
// service.name) started between from and to (/api/v3/traces?query.service_name=...), each
// whole, by trace id.
func (j *Jaeger) FindTraces(ctx context.Context, service string, from, to time.Time, limit int) (map[string][]TraceSpan, error) {
	td, err := j.FindTracesOTLP(ctx, service, from, to, limit)
	if err != nil {
		return nil, err
	}
	return TraceSpans(td), nil
}

// FindTracesOTLP is FindTraces as api_v3 answers it, in OTLP (none found: no resource).
func (j *Jaeger) FindTracesOTLP(ctx context.Context, service string, from, to time.Time, limit int) (ptrace.Traces, error) {
	q := url.Values{}
	q.Set("query.service_name", service)
	q.Set("query.start_time_min", from.UTC().Format(time.RFC3339Nano))
	q.Set("query.start_time_max", to.UTC().Format(time.RFC3339Nano))
	q.Set("query.num_traces", fmt.Sprint(limit))
	body, err := j.get(ctx, "/api/v3/traces?"+q.Encode())
	if errors.Is(err, ErrTraceNotFound) {
		return ptrace.NewTraces(), nil
	}
	if err != nil {
		return ptrace.Traces{}, err
	}
	return tracesV3(body)
}

// Services are the service names Jaeger has spans of (/api/v3/services).
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	body, err := j.get(ctx, "/api/v3/services")
	if err != nil {
		return nil, err
	}
	var ans struct {
		Services []string `json:"services"`
	}
	err = json.Unmarshal(body, &ans)
	return ans.Services, err
}

// JaegerTraces waits until Jaeger has every trace of want whole (as many spans as want has of
// it; the exporter batches, so a trace may arrive in parts) or timeout passes, and returns
// them as TraceSpans, by trace id. Then assert.Equal(t, want, got) checks each was found
// there whole: every span, its parent, name, kind, times, status, attributes, resource and
// scope.
func JaegerTraces(t *testing.T, j *Jaeger, want map[string][]TraceSpan, timeout time.Duration) map[string][]TraceSpan {
	t.Helper()
	got := map[string][]TraceSpan{}
	err := Eventually(timeout, 250*time.Millisecond, func() error {
		for id, spans := range want {
			if len(got[id]) >= len(spans) {
				continue
			}
			td, err := j.Trace(context.Background(), id)
			if err != nil { // ErrTraceNotFound while none of its spans has arrived
				return err
			}
			got[id] = TraceSpans(td)[id]
			if len(got[id]) < len(spans) {
				return fmt.Errorf("trace %s: %d of %d spans: %w", id, len(got[id]), len(spans), ErrNotYet)
			}
		}
		return nil
	})
	require.NoError(t, err, "Jaeger at %s", j.QueryURL)
	return got
}

// TraceSpan is one span in a normalized form that compares equal wherever the span went
// (what was sent, what the collector wrote, what Jaeger returns): ids in hex, attributes as
// plain Go values (ints int64, doubles float64, lists []any, maps map[string]any), its
// resource's and scope's with it.
type TraceSpan struct {
	TraceID, SpanID, ParentID string // ParentID "" for a root span
	Name, Kind                string
	Start, End                time.Time
	Status, StatusMessage     string
	Attributes                map[string]any
	Events                    []string // event names, in order
	Links                     int
	Resource                  map[string]any
	Scope, ScopeVersion       string
}

// Duration is the span's end minus its start.
func (s TraceSpan) Duration() time.Duration { return s.End.Sub(s.Start) }

// TraceSpans normalizes td's spans, by trace id, each trace's sorted by start time then span
// id.
func TraceSpans(td ptrace.Traces) map[string][]TraceSpan {
	out := map[string][]TraceSpan{}
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes().AsRaw()
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				s := TraceSpan{
					TraceID:       sp.TraceID().String(),
					SpanID:        sp.SpanID().String(),
					Name:          sp.Name(),
					Kind:          sp.Kind().String(),
					Start:         sp.StartTimestamp().AsTime(),
					End:           sp.EndTimestamp().AsTime(),
					Status:        sp.Status().Code().String(),
					StatusMessage: sp.Status().Message(),
					Attributes:    sp.Attributes().AsRaw(),
					Links:         sp.Links().Len(),
					Resource:      res,
					Scope:         ss.Scope().Name(),
					ScopeVersion:  ss.Scope().Version(),
				}
				if !sp.ParentSpanID().IsEmpty() {
					s.ParentID = sp.ParentSpanID().String()
				}
				for _, ev := range sp.Events().All() {
					s.Events = append(s.Events, ev.Name())
				}
				out[s.TraceID] = append(out[s.TraceID], s)
			}
		}
	}
	for _, spans := range out {
		slices.SortFunc(spans, func(a, b TraceSpan) int {
			return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.SpanID, b.SpanID))
		})
	}
	return out
}

// UITrace is a trace as Jaeger's UI reads it (/api/traces/ID, the query's v1 JSON): spans
// with tags and references, their resources as processes.
type UITrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		StartTime int64    `json:"startTime"` // µs since the epoch
		Duration  int64    `json:"duration"`  // µs
		Tags      []UITag  `json:"tags"`
		ProcessID string   `json:"processID"`
		Warnings  []string `json:"warnings"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string  `json:"serviceName"`
		Tags        []UITag `json:"tags"`
	} `json:"processes"`
}

// UITag is a tag of a span or a process in the UI's JSON.
type UITag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// UITrace is trace traceID as the UI gets it.
func (j *Jaeger) UITrace(ctx context.Context, traceID string) (UITrace, error) {
	body, err := j.get(ctx, "/api/traces/"+url.PathEscape(traceID))
	if err != nil {
		return UITrace{}, err
	}
	var ans struct {
		Data   []UITrace `json:"data"`
		Errors []any     `json:"errors"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return UITrace{}, err
	}
	if len(ans.Data) != 1 || len(ans.Errors) > 0 {
		return UITrace{}, fmt.Errorf("/api/traces/%s: %d traces, errors %v", traceID, len(ans.Data), ans.Errors)
	}
	return ans.Data[0], nil
}
