package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It picks below the
// usual ephemeral range (32768-60999), where the :0 listeners of tests running in parallel
// land, and never hands out the same port twice; a collision is still possible, and
// StartCollector and StartPrometheus retry on "address already in use".
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if portsGiven[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		portsGiven[port] = true
		return port, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// FreePorts returns n distinct free loopback ports.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// Port is FreePort in a test.
func Port(t *testing.T) int {
	t.Helper()
	p, err := FreePort()
	require.NoError(t, err)
	return p
}

// Ports are the loopback ports of one collector; a configuration template refers to them
// as {{.P.Gym}}, {{.P.Health}}, {{.P.Telemetry}} and so on.
type Ports struct {
	Gym, Health, Telemetry, Prometheus, OTLPSink int
	// The otlp receiver's endpoints in the default configuration.
	OTLPGRPC, OTLPHTTP int
	// The gymlive exporter's page in the default configuration.
	Live int
}

// NewPorts picks a free port for every endpoint of a collector.
func NewPorts(t *testing.T) Ports {
	return Ports{
		Gym:        Port(t),
		Health:     Port(t),
		Telemetry:  Port(t),
		Prometheus: Port(t),
		OTLPGRPC:   Port(t),
		OTLPHTTP:   Port(t),
		Live:       Port(t),
	}
}
