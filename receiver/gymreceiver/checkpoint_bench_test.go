package gymreceiver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/gym-telemetry/otelcol-gym/internal/storagetest"
	"github.com/gym-telemetry/otelcol-gym/receiver/gymreceiver/internal/metadata"
)

// BenchmarkCheckpointBeforeAnswer: the cost of checkpoint_before_answer, side by side with
// the default, for one sender posting bodies of 10 lines while the receiver holds 1,000 or
// 100,000 series. The storage is in memory: this is the encoding and the handler's wait;
// the storage extension's write comes on top (docs/performance.md has both).
func BenchmarkCheckpointBeforeAnswer(b *testing.B) {
	for _, series := range []int{1_000, 100_000} {
		for _, durable := range []bool{false, true} {
			b.Run(fmt.Sprintf("series=%d/checkpoint_before_answer=%v", series, durable), func(b *testing.B) {
				st := storagetest.NewMem(nil)
				cfg := createDefaultConfig().(*Config)
				ln := benchAddr(b)
				cfg.HTTP.GetOrInsertDefault().NetAddr.Endpoint = ln
				cfg.Storage = &storageID
				cfg.CheckpointBeforeAnswer = durable
				cfg.CollectionInterval, cfg.ExpireAfter = time.Hour, time.Hour
				r, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, new(consumertest.MetricsSink))
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Start(context.Background(), storageHost(st)); err != nil {
					b.Fatal(err)
				}
				defer func() { _ = r.Shutdown(context.Background()) }()
				url := "http://" + ln + "/v1/events"
				per := 1000 // series per resource, under cardinality_limit
				for p := 0; p < series/per; p++ {
					var body strings.Builder
					fmt.Fprintf(&body, `{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r%d"}}`+"\n", p)
					for i := range per {
						fmt.Fprintf(&body, `{"event":"sandbox.create_retry","provider":"provider-%d"}`+"\n", i)
					}
					benchPost(b, url, []byte(body.String()))
				}
				body := []byte(`{"event":"resource","attributes":{"service.name":"gym","service.instance.id":"r0"}}` + "\n" +
					strings.Repeat(`{"event":"sandbox.create_retry","provider":"provider-1"}`+"\n", 9))
				b.ResetTimer()
				for b.Loop() {
					benchPost(b, url, body)
				}
				b.ReportMetric(float64(len(st.Value("checkpoint"))), "checkpoint-bytes")
			})
		}
	}
}

func benchAddr(b *testing.B) string {
	b.Helper()
	ln, err := netListener{}.listen()
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

func benchPost(b *testing.B, url string, body []byte) {
	resp, err := http.Post(url, "application/x-ndjson", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

type netListener struct{}

func (netListener) listen() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}
