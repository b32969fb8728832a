//go:build linux

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// testCA is a certificate made for one test, with its key: a certificate authority, or what
// one signed.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	ca, _ := writeCert(t, dir, name, &x509.Certificate{
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	return ca
}

// issue writes a certificate for 127.0.0.1 signed by the CA (for a server or a client) and
// its key, and returns their paths.
func (ca *testCA) issue(t *testing.T, dir, name string, usage x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	c, keyFile := writeCert(t, dir, name, &x509.Certificate{
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}, ca)
	return c.file, keyFile
}

// writeCert signs tmpl (named name, valid from an hour ago for a day) under a new key with
// parent's key (nil: its own, self-signed), writes NAME.crt and NAME.key in dir, and returns
// the certificate (a CA when tmpl is one) and the key's path.
func writeCert(t *testing.T, dir, name string, tmpl *x509.Certificate, parent *testCA) (*testCA, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	require.NoError(t, err)
	tmpl.SerialNumber, tmpl.Subject = serial, pkix.Name{CommonName: name}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	c := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".crt")}
	keyFile := filepath.Join(dir, name+".key")
	require.NoError(t, os.WriteFile(c.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return c, keyFile
}

// TestAgentGatewayMutualTLS: the shipped agent and gateway (deploy/agent.yaml,
// deploy/gateway.yaml with deploy/gateway-mtls.yaml), certificates made here, a real
// Prometheus behind the gateway. An agent with a client certificate of the gateway's CA
// delivers every rollout; one with a certificate of another CA, and one with none, deliver
// nothing (the gateway refuses the handshake; the agents count their failed sends).
func TestAgentGatewayMutualTLS(t *testing.T) {
	t.Parallel()
	prom := harness.StartRemoteWritePrometheus(t)
	dir := t.TempDir()
	ca, rogue := newTestCA(t, dir, "gym-ca"), newTestCA(t, dir, "rogue-ca")
	srvCert, srvKey := ca.issue(t, dir, "gateway", x509.ExtKeyUsageServerAuth)
	gwPort := harness.Port(t)
	startDeployedConfigs(t, "gateway", []string{"gateway.yaml", "gateway-mtls.yaml"}, []string{
		fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", gwPort),
		"OTELCOL_GYM_REMOTE_WRITE_URL=" + prom + "/api/v1/write",
		"OTELCOL_GYM_TLS_CERT_FILE=" + srvCert,
		"OTELCOL_GYM_TLS_KEY_FILE=" + srvKey,
		"OTELCOL_GYM_TLS_CLIENT_CA_FILE=" + ca.file,
	})

	type agentCase struct {
		name       string
		cert, key  string
		delivered  bool
		agent      *deployed
		gym        *gymProcess
		eventsPort int
	}
	goodCert, goodKey := ca.issue(t, dir, "agent", x509.ExtKeyUsageClientAuth)
	rogueCert, rogueKey := rogue.issue(t, dir, "intruder", x509.ExtKeyUsageClientAuth)
	cases := []*agentCase{
		{name: "trusted", cert: goodCert, key: goodKey, delivered: true},
		{name: "another-ca", cert: rogueCert, key: rogueKey},
		{name: "no-certificate"},
	}
	for i, c := range cases {
		node := filepath.Join(dir, c.name)
		require.NoError(t, os.MkdirAll(filepath.Join(node, "gym"), 0o700))
		c.eventsPort = harness.Port(t)
		c.agent = startDeployed(t, "agent-"+c.name, "agent.yaml", []string{
			fmt.Sprintf("OTELCOL_GYM_GATEWAY_ENDPOINT=127.0.0.1:%d", gwPort),
			"OTELCOL_GYM_GATEWAY_CA_FILE=" + ca.file,
			"OTELCOL_GYM_GATEWAY_CERT_FILE=" + c.cert,
			"OTELCOL_GYM_GATEWAY_KEY_FILE=" + c.key,
			"OTELCOL_GYM_STORAGE_DIR=" + filepath.Join(node, "state"),
			fmt.Sprintf("OTELCOL_GYM_EVENTS_ENDPOINT=127.0.0.1:%d", c.eventsPort),
			"OTELCOL_GYM_EVENTS_SOCKET=" + filepath.Join(node, "gym.sock"),
			"OTELCOL_GYM_EVENT_FILES=" + filepath.Join(node, "gym", "*.events.jsonl"),
			"OTELCOL_GYM_COLLECTION_INTERVAL=300ms",
			"OTELCOL_GYM_PROCESS_STATS=false",
			fmt.Sprintf("OTELCOL_GYM_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", harness.Port(t)),
			"OTELCOL_GYM_NODE_NAME=" + c.name,
		})
		c.gym = &gymProcess{instance: "mtls-" + c.name, agent: i}
	}
	ports := make([]int, len(cases))
	for i, c := range cases {
		ports[i] = c.eventsPort
	}
	var agents []*deployed
	for _, c := range cases {
		agents = append(agents, c.agent)
	}
	for range 5 {
		for _, c := range cases {
			c.gym.emit(t, agents, ports, 7)
		}
	}
	waitTotals(t, prom, "the trusted agent", []*gymProcess{cases[0].gym})
	for _, c := range cases[1:] {
		// Its requests wait in its queue, retried (the agent's retry lasts max_elapsed_time).
		require.NoError(t, harness.Eventually(30*time.Second, 250*time.Millisecond, func() error {
			if !strings.Contains(c.agent.LogTail(1<<20), "Exporting failed") {
				return harness.ErrNotYet
			}
			return nil
		}), "%s: its sends fail", c.name)
		t.Logf("%s: %s", c.name, lastLine(c.agent.LogTail(1<<20), "Exporting failed"))
	}
	got, err := rolloutTotals(prom, cases[0].gym.runID())
	require.NoError(t, err)
	assert.Equal(t, float64(cases[0].gym.sent), got[cases[0].gym.instance].total)
	for _, c := range cases[1:] {
		_, found := got[c.gym.instance]
		assert.False(t, found, "%s: nothing of it reaches the backend", c.name)
	}
}

// lastLine is the last line of text that holds sub.
func lastLine(text, sub string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return lines[i]
		}
	}
	return ""
}
