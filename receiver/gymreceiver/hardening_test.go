package gymreceiver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/transport"
)

// slowPost opens a connection, sends the headers of a POST and then its body one byte per
// second. It returns the status the receiver answered (0: none before stop).
func slowPost(addr string, stop <-chan struct{}) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return -1
	}
	defer c.Close()
	body := strings.Repeat(`{"event":"sandbox.create_retry","provider":"slow"}`+"\n", 20)
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", transport.EventsPath, addr, len(body))
	answer := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answer <- 0
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	for i := 0; i < len(body); i++ {
		if _, err := c.Write([]byte{body[i]}); err != nil {
			break
		}
		select {
		case status := <-answer:
			return status
		case <-stop:
			return 0
		case <-time.After(time.Second):
		}
	}
	select {
	case status := <-answer:
		return status
	case <-stop:
		return 0
	}
}

// More senders than there are body slots (4 x GOMAXPROCS) trickle their bodies at 1 byte/s,
// again and again; a normal sender beside them keeps getting 200 (they once held every slot,
// and it got 503). Each trickler is cut off with 408 after the grace, and counted.
func TestHTTPSlowSendersDoNotStarveOthers(t *testing.T) {
	url, sink, stop := startReceiver(t, nil)
	addr := strings.TrimPrefix(strings.TrimSuffix(url, transport.EventsPath), "http://")
	slow := 4*runtime.GOMAXPROCS(0) + 2
	done := make(chan struct{})
	var wg sync.WaitGroup
	var cut atomic.Int64
	var statuses sync.Map
	for range slow {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				status := slowPost(addr, done)
				if status == http.StatusRequestTimeout {
					cut.Add(1)
				}
				if status != 0 {
					statuses.Store(status, true)
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // every trickler has sent its headers
	ok, other := 0, map[int]int{}
	good := []byte(`{"event":"sandbox.create_retry","provider":"normal"}` + "\n")
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		status, _, _ := post(t, url, good, nil)
		if status == http.StatusOK {
			ok++
		} else {
			other[status]++
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	t.Logf("normal sender: %d x 200, others %v; %d trickling bodies cut off with 408", ok, other, cut.Load())
	assert.Positive(t, ok)
	assert.Empty(t, other, "every post of the normal sender is accepted while %d senders trickle", slow)
	assert.GreaterOrEqual(t, cut.Load(), int64(slow), "each trickler is cut off after the grace")
	statuses.Range(func(k, _ any) bool {
		assert.Equal(t, http.StatusRequestTimeout, k, "a trickler's answer")
		return true
	})
	stop()
	var slowSeen bool
	md := lastMetrics(t, sink)
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			for k := range ms.At(j).Sum().DataPoints().Len() {
				if v, _ := ms.At(j).Sum().DataPoints().At(k).Attributes().Get("nemo.gym.sandbox.provider"); v.Str() == "slow" {
					slowSeen = true
				}
			}
		}
	}
	assert.False(t, slowSeen, "nothing of a body cut off is applied")
	assert.Equal(t, int64(ok), retryTotal(md))
}

// An HTTP body that arrives slowly but above the minimum rate (32 KiB/s of a 4 MiB body: two
// minutes) does not hold the shutdown past drain_timeout: it is cut off, not applied, and the
// last export carries everything accepted before.
func TestHTTPShutdownDrainDeadline(t *testing.T) {
	const drain = time.Second
	url, sink, stop := startReceiver(t, func(c *Config) { c.DrainTimeout = drain })
	addr := strings.TrimPrefix(strings.TrimSuffix(url, transport.EventsPath), "http://")
	status, _, _ := post(t, url, []byte(`{"event":"sandbox.create_retry","provider":"before"}`), nil)
	require.Equal(t, http.StatusOK, status)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	line := `{"event":"sandbox.create_retry","provider":"slow"}` + "\n"
	const size = 4 << 20
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", transport.EventsPath, addr, size)
	sent := make(chan struct{})
	var written atomic.Int64
	go func() {
		defer close(sent)
		chunk := []byte(strings.Repeat(line, 3<<10/len(line)))
		for n := 0; n < size; n += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return // closed by the shutdown
			}
			written.Add(int64(len(chunk)))
			time.Sleep(100 * time.Millisecond) // about 30 KiB/s
		}
	}()
	time.Sleep(3 * time.Second) // past the grace: the rate alone would let it go on

	start := time.Now()
	stop()
	took := time.Since(start)
	<-sent
	t.Logf("Shutdown took %s with drain_timeout %s", took, drain)
	// Shutdown did not wait for the body (two minutes at this rate): the sender was cut off.
	assert.Less(t, written.Load(), int64(size), "Shutdown ends at the drain deadline, not at the end of the body")
	md := lastMetrics(t, sink)
	assert.Equal(t, int64(1), retryTotal(md), "the last export holds what was accepted, nothing of the cut body")
}
