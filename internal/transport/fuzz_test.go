package transport

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/aggregate"
	"github.com/gym-telemetry/otelcol-gym/internal/events"
	"github.com/gym-telemetry/otelcol-gym/internal/follow/followtest"
)

// Fuzz targets of the two ways lines come in: whole HTTP bodies, and byte streams cut by the
// network at arbitrary places. `go test` runs the seeds (f.Add and testdata/fuzz/<Name>/);
// `go test -run '^$' -fuzz '^FuzzHTTPHandler$' -fuzztime 10m ./internal/transport`
// explores.

// Limits of the fuzz targets: small, so that the fuzzer reaches them.
const (
	fuzzMaxLine = 512
	fuzzMaxBody = 16 << 10
)

// fuzzSeeds are lines and bodies every target starts from: good lines of several events,
// each kind of bad line, blank lines, CRLF, partial lines and multi-byte runes.
var fuzzSeeds = []string{
	"",
	"\n",
	" \t\r\n\n",
	`{"event":"sandbox.create_retry","provider":"docker"}`,
	`{"event":"sandbox.create_retry","provider":"docker"}` + "\n",
	`{"event":"resource","attributes":{"service.name":"gym","process.pid":7}}` + "\n" +
		`{"event":"rollout.completed","outcome":"failed","dispatch_name":"math","failure_kind":"transport_timeout","failure_type":"TimeoutError"}` + "\n" +
		`{"event":"sandbox.active","provider":"docker","delta":-1}` + "\r\n" +
		`{"event":"event_loop.lag","loop":"driver","lag_ms":3.2}`,
	`{"event":"server.requests","in_flight":1,"unhandled_exceptions":0,"responses":{"200":5,"0200":3},"cancelled":[{"route":"/x","response_started":true,"count":1}]}` + "\n",
	`{"event":"gc.stats","collections":[1,2,3],"collected":[1,2,3],"uncollectable":[0,0,0],"count":[5,1,0]}` + "\n",
	`{"event":"http.pool.connects","counts":{"a":1,"b":2}}` + "\n",
	`{"event":"sandbox.startup","provider":"docker","duration_ms":NaN}` + "\n",
	`{"event":"sandbox.startup","provider":"docker","duration_ms":-1}` + "\n",
	`{"event":"server.requests","in_flight":0,"unhandled_exceptions":0,"responses":{"600":1}}` + "\n",
	`{"event":"sandbox.create_retry","provider":"d` + "\xff" + `"}` + "\n",
	`{"event":"sandbox.create_retry","provider":"bé"}` + "\n" + `{"event":"sandbox.create_retry","provider":"bé"`,
	`{"event":"teleport"}` + "\n" + `{"event":""}` + "\n" + `[]` + "\n" + `{` + "\n" + `{"event":3}`,
	`{"event":"resource","attributes":{"a":null}}` + "\n" + `{"event":"sandbox.create_retry","provider":"p"}` + "\n",
	`{"event":"x","a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "}\n",
	`{"event":"sandbox.create_retry","provider":"` + strings.Repeat("x", fuzzMaxLine) + `"}` + "\n" + `{"event":"sandbox.create_retry","provider":"p"}` + "\n",
	strings.Repeat(" ", fuzzMaxLine+3) + "\n" + strings.Repeat("z", 2*fuzzMaxLine),
}

// fuzzAggregator is a fresh aggregator for one fuzz input.
func fuzzAggregator(t *testing.T) *aggregate.Aggregator { return newTestAggregator(t) }

// FuzzHTTPHandler sends an arbitrary body (gzip-encoded when asked, and then possibly cut
// short at byte `cut`) through the HTTP handler behind the confighttp middleware the receiver
// uses (decompression, body limits before and after decompression). Without gzip, a `cut` of
// 1 modulo 7 sends the body while the handler's only slot is taken, so the answer is 503. It
// must never panic; the status is 200, 400, 413 or 503; the answer is valid JSON; the counts
// are consistent with the body's lines and with what the line reader does with the same
// bytes; a refused body (400 on reading, 413, 503) applies nothing; the handler serves the
// next body.
func FuzzHTTPHandler(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false, uint16(0))
		f.Add([]byte(s), true, uint16(0))
	}
	f.Add([]byte(strings.Repeat(retry("p")+"\n", 100)), true, uint16(40))
	f.Add([]byte(strings.Repeat(retry("p")+"\n", 400)), false, uint16(0)) // over the body limit
	f.Add([]byte(strings.Repeat(retry("p")+"\n", 400)), true, uint16(0))  // over it once decoded
	f.Add([]byte(retry("p")), false, uint16(1))                           // busy: 503

	f.Fuzz(func(t *testing.T, body []byte, gz bool, cut uint16) {
		agg := fuzzAggregator(t)
		got := followtest.NewCounts()
		h := newEventsHTTPHandler(agg, HTTPOptions{MaxLineBytes: fuzzMaxLine, MaxConcurrent: 1, Wait: time.Millisecond}, got.Record)
		sc := confighttp.NewDefaultServerConfig()
		sc.MaxRequestBodySize = fuzzMaxBody
		srv, err := sc.ToServer(context.Background(), nil, componenttest.NewNopTelemetrySettings(), h)
		if err != nil {
			t.Fatal(err)
		}

		wire := body
		truncated := false
		if gz {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = zw.Write(body)
			_ = zw.Close()
			wire = b.Bytes()
			// Cut the compressed stream after its 10-byte header: the body breaks while the
			// handler reads it (a broken header is refused by confighttp before the handler).
			if c := int(cut); c >= 10 && c < len(wire) {
				wire, truncated = wire[:c], true
			}
		}
		req := httptest.NewRequest(http.MethodPost, EventsPath, bytes.NewReader(wire))
		req.Header.Set("Content-Type", "application/x-ndjson")
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		busy := !gz && cut%7 == 1
		if busy {
			h.slots <- struct{}{} // every slot taken: the body waits Wait, then 503
		}
		rec := httptest.NewRecorder()
		srv.Handler.ServeHTTP(rec, req)
		if busy {
			<-h.slots
		}

		raw := rec.Body.Bytes()
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("status %d: Content-Type %q, want application/json; body %q", rec.Code, ct, raw)
		}
		if !json.Valid(raw) {
			t.Fatalf("status %d: the answer is not JSON: %q", rec.Code, raw)
		}
		overLimit := len(wire) > fuzzMaxBody || len(body) > fuzzMaxBody
		if busy != (rec.Code == http.StatusServiceUnavailable) {
			t.Fatalf("busy %v, status %d: %q", busy, rec.Code, raw)
		}
		switch rec.Code {
		case http.StatusServiceUnavailable:
			if ra := rec.Header().Get("Retry-After"); ra != "1" {
				t.Fatalf("503 with Retry-After %q", ra)
			}
			fuzzNothingApplied(t, agg, got, "503")
			fuzzServesNext(t, srv.Handler)
			return
		case http.StatusRequestEntityTooLarge:
			if !overLimit {
				t.Fatalf("413 for a body of %d bytes (%d on the wire), limit %d", len(body), len(wire), fuzzMaxBody)
			}
			fuzzNothingApplied(t, agg, got, "413")
			fuzzServesNext(t, srv.Handler)
			return
		case http.StatusOK, http.StatusBadRequest:
		default:
			t.Fatalf("status %d, want 200, 400 or 413; body %q", rec.Code, raw)
		}
		if truncated {
			// A compressed body cut short is an error reading it (unless it passed the limit
			// first): nothing applied.
			if rec.Code != http.StatusBadRequest || !bytes.Contains(raw, []byte("reading the body")) {
				t.Fatalf("truncated gzip body: status %d, %q", rec.Code, raw)
			}
			fuzzNothingApplied(t, agg, got, "a truncated body")
			fuzzServesNext(t, srv.Handler)
			return
		}
		if overLimit {
			t.Fatalf("status %d for a body over the limit (%d bytes, %d on the wire)", rec.Code, len(body), len(wire))
		}

		var ans Answer
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ans); err != nil {
			t.Fatalf("status %d: the answer is not an Answer: %v: %q", rec.Code, err, raw)
		}
		lines := int64(bytes.Count(body, []byte("\n")))
		if len(body) > 0 && body[len(body)-1] != '\n' {
			lines++
		}
		if ans.Accepted < 0 || ans.Rejected < 0 || ans.Unknown < 0 || ans.Accepted+ans.Rejected+ans.Unknown > lines {
			t.Fatalf("accepted %d + rejected %d + unknown %d over %d lines", ans.Accepted, ans.Rejected, ans.Unknown, lines)
		}
		wantStatus := http.StatusOK
		if ans.Rejected > 0 && ans.Accepted+ans.Unknown == 0 {
			wantStatus = http.StatusBadRequest
		}
		if rec.Code != wantStatus {
			t.Fatalf("status %d, want %d for %+v", rec.Code, wantStatus, ans)
		}
		if ans.Errors == nil || int64(len(ans.Errors)) != min(ans.Rejected, maxErrors) {
			t.Fatalf("%d errors listed for %d rejected lines", len(ans.Errors), ans.Rejected)
		}
		for i, e := range ans.Errors {
			if e.Line < 1 || int64(e.Line) > lines || (i > 0 && e.Line <= ans.Errors[i-1].Line) || e.Error == "" {
				t.Fatalf("bad error entry %d: %+v (of %d lines)", i, e, lines)
			}
		}
		// Self-telemetry saw what the answer says.
		if got.Accepted != ans.Accepted || got.Unknown != ans.Unknown || sum(got.Rejected) != ans.Rejected {
			t.Fatalf("recorded %d/%d/%v, answered %+v", got.Accepted, got.Unknown, got.Rejected, ans)
		}

		// The same bytes as a stream (ended by a newline, so its last line is whole) give the
		// same counts, by reason, and the same metrics.
		agg2 := fuzzAggregator(t)
		viaStream := followtest.NewCounts()
		lr := newLineReader(events.NewLineDecoder(fuzzMaxLine, agg2.NewSink, events.DefaultResource("http", "")), fuzzMaxLine, viaStream.Record)
		if err := lr.readFrom(bytes.NewReader(append(bytes.Clone(body), '\n'))); err != nil {
			t.Fatal(err)
		}
		lr.finish()
		if viaStream.Accepted != got.Accepted || viaStream.Unknown != got.Unknown || !maps.Equal(nonZero(viaStream.Rejected), nonZero(got.Rejected)) {
			t.Fatalf("HTTP %d/%d/%v, stream %d/%d/%v", got.Accepted, got.Unknown, nonZero(got.Rejected),
				viaStream.Accepted, viaStream.Unknown, nonZero(viaStream.Rejected))
		}
		if a, b := dumpMetrics(agg.Collect(aggregate.Scope{})), dumpMetrics(agg2.Collect(aggregate.Scope{})); a != b {
			t.Fatalf("HTTP and stream aggregate differently\nHTTP:\n%s\nstream:\n%s", a, b)
		}

		fuzzServesNext(t, srv.Handler)
	})
}

// fuzzServesNext checks that the handler keeps serving: a good body is accepted.
func fuzzServesNext(t *testing.T, h http.Handler) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, EventsPath, strings.NewReader(retry("after")))
	req.Header.Set("Content-Type", "application/x-ndjson")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"accepted":1,`) {
		t.Fatalf("a good body after it: %d %s", rec.Code, rec.Body.String())
	}
}

func fuzzNothingApplied(t *testing.T, agg *aggregate.Aggregator, got *followtest.Counts, what string) {
	t.Helper()
	if md := agg.Collect(aggregate.Scope{}); md.DataPointCount() != 0 {
		t.Fatalf("%s applied %d data points", what, md.DataPointCount())
	}
	if got.Accepted != 0 || got.Unknown != 0 || sum(got.Rejected) != 0 {
		t.Fatalf("%s recorded lines: %+v", what, got)
	}
}

// FuzzLineReader feeds a byte stream to the line reader in reads whose lengths the fuzzer
// picks (each byte of cuts is the length of one read, 1..256; the rest arrives in one read),
// and compares with the same bytes read in reads as large as the buffer allows: read
// boundaries never change which lines are accepted, unknown or rejected (by reason), nor what
// is aggregated; the buffer never grows past max+1.
func FuzzLineReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte{1, 7, 50, 3}, uint16(fuzzMaxLine))
		f.Add([]byte(s), []byte{}, uint16(256))
	}
	b := retry("bé")
	f.Add([]byte(retry("a")+"\n"+b+"\n"), []byte{byte(len(retry("a")) + 1 + strings.Index(b, "é") + 1)}, uint16(256))
	f.Add([]byte(strings.Repeat(retry("a")+"\n", 20)), []byte(strings.Repeat("\x01", 200)), uint16(64))
	// Reads that end exactly at max, max+1 and on the newline after a line of max bytes.
	exact := `{"event":"sandbox.create_retry","provider":"` + strings.Repeat("y", 64-46) + `"}`
	f.Add([]byte(exact+"\n"+exact+"x\n"+exact+"\r\n"+retry("a")+"\n"), []byte{64, 1, 65, 1, 64, 2}, uint16(64))

	f.Fuzz(func(t *testing.T, data, cuts []byte, maxLine uint16) {
		max := 1 + int(maxLine)%2048
		one, oneMD := fuzzReadStream(t, max, bytes.NewReader(data))
		var parts []string
		rest := data
		for _, c := range cuts {
			if len(rest) == 0 {
				break
			}
			n := min(int(c)+1, len(rest))
			parts = append(parts, string(rest[:n]))
			rest = rest[n:]
		}
		if len(rest) > 0 {
			parts = append(parts, string(rest))
		}
		cut, cutMD := fuzzReadStream(t, max, &chunks{parts: parts})
		if one.Accepted != cut.Accepted || one.Unknown != cut.Unknown || !maps.Equal(nonZero(one.Rejected), nonZero(cut.Rejected)) {
			t.Fatalf("max %d, reads %d: one read %d/%d/%v, cut %d/%d/%v", max, len(parts),
				one.Accepted, one.Unknown, nonZero(one.Rejected), cut.Accepted, cut.Unknown, nonZero(cut.Rejected))
		}
		if oneMD != cutMD {
			t.Fatalf("max %d, reads %d: aggregates differ\none read:\n%s\ncut:\n%s", max, len(parts), oneMD, cutMD)
		}
		// Every non-blank line is counted once: lines ended by a newline, and a partial tail.
		if n := one.Accepted + one.Unknown + sum(one.Rejected); n > int64(bytes.Count(data, []byte("\n")))+1 {
			t.Fatalf("%d lines counted in %d newlines", n, bytes.Count(data, []byte("\n")))
		}
	})
}

// fuzzReadStream reads r through a fresh line reader to its end, as a connection the peer
// closed; it returns the counts and a dump of the aggregate.
func fuzzReadStream(t *testing.T, max int, r io.Reader) (*followtest.Counts, string) {
	t.Helper()
	agg := fuzzAggregator(t)
	got := followtest.NewCounts()
	lr := newLineReader(events.NewLineDecoder(max, agg.NewSink, events.DefaultResource("tcp", "")), max, got.Record)
	if err := lr.readFrom(r); err != nil {
		t.Fatal(err)
	}
	if len(lr.buf) > max+1 {
		t.Fatalf("buffer of %d bytes, max %d", len(lr.buf), max)
	}
	lr.finish()
	return got, dumpMetrics(agg.Collect(aggregate.Scope{}))
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// dumpMetrics renders md without timestamps, sorted, to compare two aggregates.
func dumpMetrics(md pmetric.Metrics) string {
	var out []string
	for i := range md.ResourceMetrics().Len() {
		rm := md.ResourceMetrics().At(i)
		res := dumpAttrs(rm.Resource().Attributes())
		ms := rm.ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			switch m.Type() {
			case pmetric.MetricTypeSum:
				for k := range m.Sum().DataPoints().Len() {
					dp := m.Sum().DataPoints().At(k)
					out = append(out, fmt.Sprintf("%s %s %s = %d", res, m.Name(), dumpAttrs(dp.Attributes()), dp.IntValue()))
				}
			case pmetric.MetricTypeGauge:
				for k := range m.Gauge().DataPoints().Len() {
					dp := m.Gauge().DataPoints().At(k)
					out = append(out, fmt.Sprintf("%s %s %s = %d", res, m.Name(), dumpAttrs(dp.Attributes()), dp.IntValue()))
				}
			case pmetric.MetricTypeHistogram:
				for k := range m.Histogram().DataPoints().Len() {
					dp := m.Histogram().DataPoints().At(k)
					out = append(out, fmt.Sprintf("%s %s %s = %d %v %v %v %v", res, m.Name(), dumpAttrs(dp.Attributes()),
						dp.Count(), dp.Sum(), dp.Min(), dp.Max(), dp.BucketCounts().AsRaw()))
				}
			default:
				out = append(out, fmt.Sprintf("%s %s: unexpected type %s", res, m.Name(), m.Type()))
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

func dumpAttrs(m pcommon.Map) string {
	var parts []string
	m.Range(func(k string, v pcommon.Value) bool {
		parts = append(parts, fmt.Sprintf("%q=%s(%q)", k, v.Type(), v.AsString()))
		return true
	})
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}
