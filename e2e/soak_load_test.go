//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// The soak's load: Gym processes over HTTP, event files, run files, resource churn.

// churn starts short-lived Gym processes: about 12 a second, and 40 a second for 5 s of
// every 30 (a wave of rollouts), until stop.
func (s *soak) churn(stop <-chan struct{}) {
	var procs sync.WaitGroup
	defer procs.Wait()
	start := time.Now()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		rate := 12.0
		if time.Since(start)%(30*time.Second) >= 25*time.Second {
			rate = 40
		}
		// No new process while the agent restarts (the restart holds the write lock).
		s.gate.RLock()
		s.gate.RUnlock() //nolint:staticcheck // SA2001: the wait is the point

		procs.Go(func() { s.gymProcess(i) })
		time.Sleep(time.Duration(float64(time.Second) / rate))
	}
}

// gymProcess is one short-lived Gym process: a real process (sleep) whose pid its resource
// line names, three reports of a few rollouts over its own HTTP connection, then gone.
func (s *soak) gymProcess(i int) {
	s.processes.Add(1)
	cmd := exec.Command("sleep", "2")
	if err := cmd.Start(); err != nil {
		s.fail("process %d: %v", i, err)
		return
	}
	defer func() { _ = cmd.Wait() }()
	g := &gymProcess{instance: fmt.Sprintf("soak-%06d", i), run: "e2e-soak", pid: cmd.Process.Pid}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for range 3 {
		n := 1 + rand.IntN(6)
		body := g.resourceLine() + g.body(n)
		s.gate.RLock()
		ans, err := postNDJSON(client, s.gymURL, body)
		s.gate.RUnlock()
		switch {
		case err != nil:
			s.fail("%s: %v", g.instance, err)
			return
		case ans.Unknown != 0 || ans.Accepted+ans.Rejected != n+1 || ans.Rejected > 1:
			s.fail("%s: %+v", g.instance, ans)
			return
		case ans.Rejected == 1:
			if len(ans.Errors) != 1 || ans.Errors[0].Line != 1 || !strings.Contains(ans.Errors[0].Error, "max_resources") {
				s.fail("%s: %+v", g.instance, ans)
				return
			}
			s.refused.Add(1) // its rollouts go to the default resource: still counted
		}
		s.httpSent.Add(int64(n))
		time.Sleep(300 * time.Millisecond)
	}
}

// postNDJSON posts one body and decodes the answer; an answer other than 200 is an error.
func postNDJSON(client *http.Client, url, body string) (harness.GymAnswer, error) {
	var ans harness.GymAnswer
	resp, err := client.Post(url, "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		return ans, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return ans, err
	}
	if resp.StatusCode != http.StatusOK {
		return ans, fmt.Errorf("%s: %s", resp.Status, data)
	}
	return ans, json.Unmarshal(data, &ans)
}

// eventFile is a long-lived Gym process writing an events file (5 to 15 rollouts every
// 100 ms, through restarts too), rotated every 40 s, by rename and by copy-truncate in turn.
func (s *soak) eventFile(stop <-chan struct{}, i int) {
	g := &gymProcess{instance: fmt.Sprintf("file-w%d", i), run: "e2e-soak"}
	path := filepath.Join(s.logs, fmt.Sprintf("w%d.events.jsonl", i))
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			s.fail("%s: %v", path, err)
		}
		return f
	}
	f := open()
	if f == nil {
		return
	}
	defer func() { f.Close() }()
	// The resource line and the first rollouts in one write: the head that identifies the file
	// (its first KiB) holds their distinct seq fields, so no two files' heads are alike.
	head := true
	write := func(f *os.File, n int) bool {
		data := g.body(n)
		if head {
			data, head = g.resourceLine()+data, false
		}
		if _, err := f.WriteString(data); err != nil {
			s.fail("%s: %v", path, err)
			return false
		}
		s.fileSent.Add(int64(n))
		return true
	}
	held := fmt.Sprintf(`gym_rollout_completed_total{instance=%q}`, g.promInstance())
	var rotated []string
	rotateAt := time.Now().Add(time.Duration(10+13*i) * time.Second)
	for k := 0; ; {
		select {
		case <-stop:
			s.waitHeld(held, int64(g.seq))
			return
		case <-time.After(100 * time.Millisecond):
		}
		if !write(f, 5+rand.IntN(11)) {
			return
		}
		if time.Now().Before(rotateAt) {
			continue
		}
		rotateAt = time.Now().Add(40 * time.Second)
		to := fmt.Sprintf("%s.%d", path, k)
		s.gate.RLock()
		if k%2 == 0 {
			// Rename: the writer still writes a few lines to the renamed file before it opens a
			// new one under the old name; the collector reads the renamed file to its end.
			if err := os.Rename(path, to); err != nil {
				s.fail("rename %s: %v", path, err)
			}
			write(f, 7)
			f.Close()
			if f, head = open(), true; f != nil {
				write(f, 3)
			}
		} else {
			// Copy-truncate loses what is written between the copy and the truncation, whatever
			// the reader: as logrotate would, it is done once the collector has read the file.
			s.waitHeld(held, int64(g.seq))
			if data, err := os.ReadFile(path); err != nil {
				s.fail("copy %s: %v", path, err)
			} else if err := os.WriteFile(to, data, 0o600); err != nil {
				s.fail("copy %s: %v", path, err)
			}
			if err := f.Truncate(0); err != nil {
				s.fail("truncate %s: %v", path, err)
			}
			head = true
		}
		// Before a restart may come: a file renamed away unread would not be found again.
		s.waitHeld(held, int64(g.seq))
		s.gate.RUnlock()
		s.rotations.Add(1)
		k++
		if rotated = append(rotated, to); len(rotated) > 2 {
			_ = os.Remove(rotated[0])
			rotated = rotated[1:]
		}
		if f == nil {
			return
		}
	}
}

// runs writes Gym runs: a new STEM.jsonl (with its manifest naming the run) every 45 s, four
// rows a second for 60 s, every tenth a failure in the sidecar instead; a finished run's files
// are removed once Prometheus holds it whole and soakRunsKept newer ones have finished.
func (s *soak) runs(stop <-chan struct{}) {
	type run struct {
		stem    string
		id      string
		written int64
		end     time.Time
	}
	var active, done []*run
	next := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for row := 0; ; row++ {
		var stopping bool
		select {
		case <-stop:
			stopping = true
		case <-tick.C:
		}
		now := time.Now()
		if !stopping && !now.Before(next) {
			k := s.runsStarted.Add(1)
			r := &run{stem: filepath.Join(s.results, fmt.Sprintf("run%03d", k)), id: fmt.Sprintf("soak-run-%03d", k), end: now.Add(time.Minute)}
			if err := os.WriteFile(r.stem+"_manifest.json", []byte(fmt.Sprintf(`{"run_id":%q}`, r.id)), 0o600); err != nil {
				s.fail("%s: %v", r.stem, err)
			}
			active = append(active, r)
			next = now.Add(45 * time.Second)
		}
		for _, r := range active {
			if stopping || now.After(r.end) {
				continue
			}
			var err error
			if row%10 == 0 {
				err = appendTo(r.stem+"_failures.jsonl", gymFailure(row))
			} else {
				err = appendTo(r.stem+".jsonl", gymRow(row, []string{"1.0", "0.0", "0.5"}[row%3]))
			}
			if err != nil {
				s.fail("%s: %v", r.stem, err)
				continue
			}
			r.written++
			s.runSent.Add(1)
		}
		active = slices.DeleteFunc(active, func(r *run) bool {
			if stopping || now.After(r.end) {
				done = append(done, r)
				return true
			}
			return false
		})
		for len(done) > soakRunsKept || (stopping && len(done) > 0) {
			r := done[0]
			done = done[1:]
			s.waitHeld(fmt.Sprintf(`gym_rollout_completed_total{nemo_run_id=%q}`, r.id), r.written)
			if !stopping {
				for _, suffix := range []string{".jsonl", "_failures.jsonl", "_manifest.json"} {
					_ = os.Remove(r.stem + suffix)
				}
			}
		}
		if stopping {
			return
		}
	}
}

func appendTo(path, data string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
