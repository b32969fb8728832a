package deploy

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// composeFile is the parts of deploy/compose/compose.yaml the checks below read.
type composeFile struct {
	Services map[string]struct {
		Image   string   `json:"image"`
		Command []string `json:"command"`
		Volumes []string `json:"volumes"`
		Ports   []string `json:"ports"`
	} `json:"services"`
}

// TestComposeSpec validates deploy/compose/compose.yaml against the Compose Specification's
// JSON schema (testdata/compose-spec), as `docker compose config` would, and checks what the
// schema cannot: every port published on the host's loopback only, every bind-mounted file
// present, the collector's override valid for the binary and listening where Prometheus
// scrapes it, Prometheus's targets and Grafana's data source named by compose service.
func TestComposeSpec(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("compose", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(asJSON))
	if err != nil {
		t.Fatal(err)
	}
	schemaJSON, err := os.ReadFile(filepath.Join("testdata", "compose-spec", "compose-spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file:///compose-spec.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("file:///compose-spec.json")
	if err != nil {
		t.Fatalf("compiling the Compose schema: %v", err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("compose/compose.yaml does not satisfy the Compose Specification: %v", err)
	}

	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"otelcol-gym", "prometheus", "grafana"} {
		if _, ok := cf.Services[want]; !ok {
			t.Errorf("compose.yaml: no service %s", want)
		}
	}
	for name, svc := range cf.Services {
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %q: every port must be bound to the host's 127.0.0.1", name, p)
			}
		}
		for _, v := range svc.Volumes {
			src, _, ok := strings.Cut(v, ":")
			if !ok || !(strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/")) || strings.HasPrefix(src, "${") {
				continue // a named volume, or a directory the user names
			}
			if _, err := os.Stat(filepath.Join("compose", src)); err != nil {
				t.Errorf("service %s mounts %s: %v", name, src, err)
			}
		}
	}
	if img := cf.Services["otelcol-gym"].Image; !strings.Contains(img, "ghcr.io/gym-telemetry/otelcol-gym:"+releaseVersion(t)) {
		t.Errorf("otelcol-gym image %q: want the released ghcr.io/gym-telemetry/otelcol-gym:%s", img, releaseVersion(t))
	}

	// Prometheus scrapes the collector by service name, on the ports the override listens on.
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	readYAML(t, filepath.Join("compose", "prometheus.yml"), &prom, yaml.Unmarshal)
	override, err := os.ReadFile(filepath.Join("compose", "otelcol-gym.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	targets := 0
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := cf.Services[host]; !ok {
					t.Errorf("prometheus.yml job %s scrapes %s: not a compose service", sc.JobName, target)
				}
				if !bytes.Contains(override, []byte("0.0.0.0:"+port)) && !bytes.Contains(override, []byte("port: "+port)) {
					t.Errorf("prometheus.yml job %s scrapes port %s, which compose/otelcol-gym.yaml does not listen on", sc.JobName, port)
				}
				targets++
			}
		}
	}
	if targets != 2 {
		t.Errorf("prometheus.yml: %d targets, want the Gym metrics and the collector's own", targets)
	}

	var ds struct {
		Datasources []struct {
			URL string `json:"url"`
		} `json:"datasources"`
	}
	readYAML(t, filepath.Join("compose", "grafana-datasource.yaml"), &ds, yaml.Unmarshal)
	if len(ds.Datasources) != 1 {
		t.Fatalf("grafana-datasource.yaml: %d data sources", len(ds.Datasources))
	}
	u, err := url.Parse(ds.Datasources[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cf.Services[u.Hostname()]; !ok {
		t.Errorf("Grafana's data source %s: not a compose service (a container cannot reach the host's loopback)", u)
	}

	// The collector's configuration as the container runs it: the default, then the override.
	def, err := os.ReadFile(filepath.Join("..", "config", "otelcol-gym.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(a, def, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, override, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(collectorBin(t), "validate", "--config", a, "--config", b)
	cmd.Env = append(os.Environ(), "OTELCOL_GYM_STORAGE_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("otelcol-gym validate of the compose collector: %v\n%s", err, out)
	}
}

// readYAML decodes the YAML file at path into into with decode: yaml.Unmarshal, or
// yaml.UnmarshalStrict where an unknown field must fail the test.
func readYAML(t *testing.T, path string, into any, decode func([]byte, any, ...yaml.JSONOpt) error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := decode(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// releaseVersion is ocb's dist.version in builder-config.yaml: the one version the binary, the
// archives and the image carry.
func releaseVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "builder-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Dist struct {
			Version string `json:"version"`
		} `json:"dist"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Dist.Version == "" {
		t.Fatal("builder-config.yaml: no dist.version")
	}
	return cfg.Dist.Version
}
