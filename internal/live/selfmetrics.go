package live

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The collector's own metrics the health panel shows, read from its internal telemetry's
// Prometheus endpoint (service.telemetry): a name matches with or without `_total`, and is
// summed by the first of byLabels its samples carry.
var healthFamilies = []struct{ name, title string }{
	{"otelcol_receiver_accepted_metric_points", "metric points accepted"},
	{"otelcol_receiver_refused_metric_points", "metric points refused"},
	{"otelcol_receiver_failed_metric_points", "metric points failed"},
	{"otelcol_receiver_accepted_spans", "spans accepted"},
	{"otelcol_receiver_refused_spans", "spans refused"},
	{"otelcol_receiver_gym_lines_accepted", "event lines accepted"},
	{"otelcol_receiver_gym_lines_rejected", "event lines rejected"},
	{"otelcol_receiver_gym_rollout_rows_rejected", "run-file rows rejected"},
	{"otelcol_processor_gymattrs_points_dropped", "points dropped by gymattrs"},
	{"otelcol_exporter_sent_metric_points", "metric points sent"},
	{"otelcol_exporter_send_failed_metric_points", "metric points failed to send"},
	{"otelcol_exporter_enqueue_failed_metric_points", "metric points not queued"},
	{"otelcol_exporter_queue_size", "exporter queue size"},
	{"otelcol_exporter_queue_capacity", "exporter queue capacity"},
}

var byLabels = []string{"receiver", "exporter", "reason", "processor"}

// Family is one of the collector's own metrics, summed, and by its receiver, exporter or
// reason.
type Family struct {
	Name  string  `json:"name"`
	Title string  `json:"title"`
	Total float64 `json:"total"`
	By    []Count `json:"by"`
}

// ParseSelfMetrics reads the families of healthFamilies from Prometheus text. Lines it cannot
// read, and samples of those families that are NaN or ±Inf (Prometheus text allows them; a
// total of them is no number), are counted as unreadable, never fatal.
func ParseSelfMetrics(r io.Reader) (fams []Family, unreadable int, err error) {
	idx := map[string]int{}
	fams = make([]Family, len(healthFamilies))
	by := make([]map[string]float64, len(healthFamilies))
	for i, f := range healthFamilies {
		idx[f.name] = i
		fams[i] = Family{Name: f.name, Title: f.title, By: []Count{}}
		by[i] = map[string]float64{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := parseSample(line)
		if !ok {
			unreadable++
			continue
		}
		i, found := idx[strings.TrimSuffix(name, "_total")]
		if !found {
			continue
		}
		if !isFinite(value) {
			unreadable++
			continue
		}
		fams[i].Total += value
		for _, l := range byLabels {
			if v, ok := labels[l]; ok {
				by[i][v] += value
				break
			}
		}
	}
	for i := range fams {
		fams[i].By = sortedCounts(by[i])
	}
	return fams, unreadable, sc.Err()
}

// parseSample reads `name{a="x",b="y"} value [timestamp]`.
func parseSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return "", nil, 0, false
	}
	name, rest := line[:end], line[end:]
	labels = map[string]string{}
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, "=\"")
			if eq <= 0 {
				return "", nil, 0, false
			}
			k := rest[:eq]
			rest = rest[eq+2:]
			var v strings.Builder
			for {
				if rest == "" {
					return "", nil, 0, false
				}
				c := rest[0]
				rest = rest[1:]
				if c == '"' {
					break
				}
				if c == '\\' && rest != "" {
					c = rest[0]
					rest = rest[1:]
					if c == 'n' {
						c = '\n'
					}
				}
				v.WriteByte(c)
			}
			labels[k] = v.String()
		}
	}
	f := strings.Fields(rest)
	if len(f) < 1 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}

// SelfMetrics reads the collector's own metrics from a loopback URL, at most once per
// maxAge (a page open in many tabs scrapes once), with a timeout and a size limit.
type SelfMetrics struct {
	// Setting is the configuration key that names url (exporters::<id>::self_metrics): a read
	// that fails says to change it, as the component cannot learn where service.telemetry
	// serves the collector's metrics.
	Setting string

	url    string
	client *http.Client
	maxAge time.Duration

	mu     sync.Mutex
	at     time.Time
	last   *CollectorHealth
	fetchM sync.Mutex // one fetch at a time
}

// CollectorHealth is the collector's own metrics as the health panel shows them.
type CollectorHealth struct {
	URL        string    `json:"url"`
	Setting    string    `json:"setting"` // the configuration key of URL
	At         time.Time `json:"at"`
	Error      string    `json:"error,omitempty"`
	Unreadable int       `json:"unreadable_lines"`
	Families   []Family  `json:"families"`
}

const maxSelfMetricsBytes = 8 << 20

// NewSelfMetrics returns a reader of url ("" turns it off: Get returns nil).
func NewSelfMetrics(url string, timeout time.Duration) *SelfMetrics {
	return &SelfMetrics{url: url, client: &http.Client{Timeout: timeout}, maxAge: 2 * time.Second}
}

// Get returns the collector's health, read again when the last read is older than maxAge.
func (s *SelfMetrics) Get(ctx context.Context) *CollectorHealth {
	if s == nil || s.url == "" {
		return nil
	}
	s.fetchM.Lock()
	defer s.fetchM.Unlock()
	s.mu.Lock()
	if s.last != nil && time.Since(s.at) < s.maxAge {
		defer s.mu.Unlock()
		return s.last
	}
	s.mu.Unlock()
	h := &CollectorHealth{URL: s.url, Setting: cmp.Or(s.Setting, "exporters::gymlive::self_metrics"), At: time.Now(), Families: []Family{}}
	if err := s.fetch(ctx, h); err != nil {
		h.Error = fmt.Sprintf("cannot read the collector's own metrics: %v; if service::telemetry::metrics serves them "+
			"elsewhere, set %s to that URL (or to \"\" to turn this panel off)", err, h.Setting)
	}
	s.mu.Lock()
	s.at, s.last = time.Now(), h
	s.mu.Unlock()
	return h
}

func (s *SelfMetrics) fetch(ctx context.Context, h *CollectorHealth) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", s.url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSelfMetricsBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxSelfMetricsBytes {
		return fmt.Errorf("GET %s: more than %d bytes", s.url, maxSelfMetricsBytes)
	}
	// Another program on the port (Jupyter's default is 8888 too) may serve metrics of its own:
	// without a single otelcol_ sample, the panel would show zeros as the collector's.
	if !bytes.Contains(body, []byte("\notelcol_")) && !bytes.HasPrefix(body, []byte("otelcol_")) {
		return fmt.Errorf("GET %s: no otelcol_ metric: not the collector's own telemetry", s.url)
	}
	fams, bad, err := ParseSelfMetrics(bytes.NewReader(body))
	h.Families, h.Unreadable = fams, bad
	return err
}
