package console

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
)

const realSDKPath = "../../testdata/console/real-sdk-stdout.log"

// BenchmarkRealSDK: the real Python SDK's console stdout (testdata/console/real-sdk-stdout.log:
// five metrics batches, two spans, a pretty-printed log record, two uvicorn lines) read whole
// by gym_console (classified, decoded into pdata, handed to a sink that drops it), against
// what a Python reader of the same stdout would do at the least: json.loads of every record
// (python_json_loads). Both report bytes of the file per CPU-second (cpu-MB/s); run with -cpu 1.
func BenchmarkRealSDK(b *testing.B) {
	data, err := os.ReadFile(realSDKPath)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	b.Run("gym_console", func(b *testing.B) {
		s := NewLineDecoder("bench", 1<<22, nopSink{}, ratelog.NewLogger(zap.NewNop(), 1, 1))
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		cpu0 := cpuTime()
		b.ResetTimer()
		for range b.N {
			for _, l := range lines {
				_, _ = s.Line(l)
			}
			s.Flush()
		}
		cpu := (cpuTime() - cpu0).Seconds()
		if cpu > 0 {
			b.ReportMetric(float64(len(data))*float64(b.N)/cpu/1e6, "cpu-MB/s")
		}
	})
	b.Run("python_json_loads", func(b *testing.B) {
		py, err := exec.LookPath("python3")
		if err != nil {
			b.Skip("python3 is not installed")
		}
		var size, cpu float64
		for range b.N {
			out, err := exec.Command(py, "-c", pythonConsoleLoads, realSDKPath).Output()
			if err != nil {
				b.Fatalf("python3: %v", err)
			}
			var res struct{ Records, Bytes, CPU float64 }
			if err := json.Unmarshal(out, &res); err != nil {
				b.Fatalf("python3 said %q: %v", out, err)
			}
			if res.Records != 8 {
				b.Fatalf("python3 read %v records, want 8", res.Records)
			}
			size += res.Bytes
			cpu += res.CPU
		}
		if cpu > 0 {
			b.ReportMetric(size/cpu/1e6, "cpu-MB/s")
		}
	})
}

// pythonConsoleLoads reads the stdout as a Python reader would at the least: a line that starts
// with "{" and ends with "}" is a record, a lone "{" opens a pretty-printed one that the lone
// "}" closes, every record is json.loads'ed; other lines are skipped. It times its own passes
// over the file (start-up left out) in CPU time.
const pythonConsoleLoads = `
import json, sys, time
lines = open(sys.argv[1], "rb").read().split(b"\n")
size = sum(len(l) + 1 for l in lines[:-1])
def one_pass():
    n, block = 0, None
    for l in lines:
        if block is not None:
            block.append(l)
            if l == b"}":
                json.loads(b"\n".join(block)); n += 1; block = None
        elif l == b"{":
            block = [l]
        elif l[:1] == b"{" and l[-1:] == b"}":
            json.loads(l); n += 1
    return n
one_pass()
passes, c = 0, time.process_time()
while time.process_time() - c < 1.0:
    n = one_pass(); passes += 1
cpu = time.process_time() - c
print(json.dumps({"records": n, "bytes": size * passes, "cpu": cpu}))
`
