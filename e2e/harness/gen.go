package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// GenReport is `gymevents gen --json`'s report.
type GenReport struct {
	Target         string  `json:"target"`
	Processes      int     `json:"processes"`
	Connections    int     `json:"connections"`
	Bodies         int64   `json:"bodies"`
	Lines          int64   `json:"lines"`
	Events         int64   `json:"events"`
	Bytes          int64   `json:"bytes"`
	Seconds        float64 `json:"seconds"`
	EventsPerSec   float64 `json:"events_per_second"`
	Answered       bool    `json:"answered"`
	AcceptedLines  int64   `json:"accepted_lines"`
	AcceptedEvents int64   `json:"accepted_events"`
	Rejected       int64   `json:"rejected"`
	Unknown        int64   `json:"unknown"`
	Retries503     int64   `json:"retries_503"`
	FailedLines    int64   `json:"failed_lines"`
	PregenSeconds  float64 `json:"pregen_seconds"`
	Stopped        string  `json:"stopped"`
	Error          string  `json:"error"`
	// CPU is the generator process's own CPU time (user+sys), set by Gen.
	CPU time.Duration `json:"-"`
}

// Gen runs `gymevents gen --json ARGS...` and returns its report.
func Gen(ctx context.Context, gymevents string, args ...string) (GenReport, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, gymevents, append([]string{"gen", "--json"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var rep GenReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return rep, fmt.Errorf("gymevents gen %s: %w\n%s", strings.Join(args, " "), errors.Join(runErr, err), errb.String())
	}
	if cmd.ProcessState != nil {
		rep.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("gymevents gen: %s\n%s", rep.Error, errb.String())
	}
	return rep, nil
}
