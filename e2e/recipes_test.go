//go:build linux

package e2e

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gym-telemetry/otelcol-gym/e2e/harness"
)

// debugExtensions are the extensions that show a collector's insides (pipelines, queues,
// profiles, heap) to whoever reaches them, with their defaults when no endpoint is set.
var debugExtensions = map[string]string{"zpages": "localhost:55679", "pprof": "localhost:1777"}

// envRef is a ${env:NAME} or ${env:NAME:-default} reference.
var envRef = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}$`)

// TestShippedDebugEndpointsAreLoopback reads every collector configuration shipped in config/
// and deploy/ (Helm values' `config:` too) and fails when a zpages or pprof extension listens
// on anything but loopback: by its endpoint, the default of the environment variable it names,
// or any value a shipped file (manifest, compose file, script) gives that variable.
func TestShippedDebugEndpointsAreLoopback(t *testing.T) {
	t.Parallel()
	type extensions map[string]struct {
		Endpoint *string `yaml:"endpoint"`
	}
	vars := map[string]string{} // variable -> the file that names it as a debug endpoint
	checked := 0
	walkShipped(t, func(rel string, data []byte) {
		var cfg struct {
			Extensions extensions `yaml:"extensions"`
			Config     struct {
				Extensions extensions `yaml:"extensions"`
			} `yaml:"config"` // Helm values
		}
		if yaml.Unmarshal(data, &cfg) != nil {
			return // not YAML of a collector configuration
		}
		for _, exts := range []extensions{cfg.Extensions, cfg.Config.Extensions} {
			for id, e := range exts {
				def, ok := debugExtensions[strings.SplitN(id, "/", 2)[0]]
				if !ok {
					continue
				}
				checked++
				endpoint := def
				if e.Endpoint != nil {
					endpoint = *e.Endpoint
				}
				if m := envRef.FindStringSubmatch(endpoint); m != nil {
					vars[m[1]] = rel
					require.NotEmpty(t, m[2], "%s: %s: ${env:%s} without a loopback default", rel, id, m[1])
					endpoint = m[2]
				}
				assert.True(t, loopbackEndpoint(endpoint), "%s: %s listens on %q", rel, id, endpoint)
			}
		}
	})
	require.Positive(t, checked, "no zpages or pprof extension found")
	require.NotEmpty(t, vars)

	// Every value a shipped file gives these variables: NAME=VALUE (scripts, env files),
	// NAME: VALUE (compose), and Kubernetes' `- name: NAME` / `value: VALUE`.
	set := 0
	walkShipped(t, func(rel string, data []byte) {
		text := string(data)
		for v := range vars {
			for _, re := range []*regexp.Regexp{
				regexp.MustCompile(`(?m)(?:^|[^:\w])` + v + `\s*[=:]\s*"?([^"\s}]+)`), // not ${env:NAME:-...}
				regexp.MustCompile(`name:\s*"?` + v + `"?\s*\n\s*value:\s*"?([^"\s]+)`),
			} {
				for _, m := range re.FindAllStringSubmatch(text, -1) {
					set++
					assert.True(t, loopbackEndpoint(m[1]), "%s sets %s to %q", rel, v, m[1])
				}
			}
		}
	})
	t.Logf("%d debug extensions, %d values of %d variables checked", checked, set, len(vars))
}

// walkShipped calls f with every file of config/ and deploy/ but the vendored test charts.
func walkShipped(t *testing.T, f func(rel string, data []byte)) {
	t.Helper()
	for _, dir := range []string{"config", "deploy"} {
		err := filepath.WalkDir(filepath.Join(harness.Root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(harness.Root, path)
			f(rel, data)
			return nil
		})
		require.NoError(t, err)
	}
}

// loopbackEndpoint tells whether host:port names a loopback address (a value built from
// another variable, as the Slurm launcher's 127.0.0.1:$port, counts by its literal host).
func loopbackEndpoint(endpoint string) bool {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		host = endpoint
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func TestLoopbackEndpoint(t *testing.T) {
	for in, want := range map[string]bool{
		"127.0.0.1:55679": true, "localhost:1777": true, "[::1]:1777": true, "127.0.0.2:$port": true,
		":55679": false, "0.0.0.0:55679": false, "10.0.0.1:1777": false, "${env:MY_POD_IP}:1777": false, "[::]:1777": false,
	} {
		assert.Equal(t, want, loopbackEndpoint(in), in)
	}
}

// secretKey names the settings that hold a secret itself (not a file of it).
var secretKey = regexp.MustCompile(`(?i)((^|_)(token|password|passwd|secret|api_key)|^(key_pem|cert_pem|ca_pem|authorization|x-api-key))$`)

// TestShippedSecretsComeFromEnvOrFiles reads every YAML file of config/ and deploy/ and fails
// on a secret written into it: a setting that holds a secret must be a ${env:...} or
// ${file:...} reference (Compose's ${NAME} in a compose file; or name a file: token files,
// cert_file, key_file), and no Kubernetes Secret is shipped with values.
func TestShippedSecretsComeFromEnvOrFiles(t *testing.T) {
	t.Parallel()
	// The collector's ${env:NAME} and ${file:PATH}; Compose's ${NAME} and ${NAME:-default}.
	ref := regexp.MustCompile(`^\$\{((env|file):[^}]+|[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?)\}$`)
	seen := 0
	var walk func(rel, path string, n *yaml.Node)
	walk = func(rel, path string, n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(rel, path, c)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := path + "/" + k.Value
				if secretKey.MatchString(k.Value) && v.Kind == yaml.ScalarNode && v.Value != "" {
					seen++
					assert.Regexp(t, ref, v.Value, "%s: %s holds a secret itself", rel, p)
				}
				if k.Value == "kind" && v.Value == "Secret" {
					for j := 0; j+1 < len(n.Content); j += 2 {
						if d := n.Content[j].Value; d == "data" || d == "stringData" {
							assert.Empty(t, n.Content[j+1].Content, "%s: a Secret shipped with values", rel)
						}
					}
				}
				walk(rel, p, v)
			}
		}
	}
	files := 0
	walkShipped(t, func(rel string, data []byte) {
		if ext := filepath.Ext(rel); ext != ".yaml" && ext != ".yml" {
			return
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		for {
			var doc yaml.Node
			if dec.Decode(&doc) != nil {
				break
			}
			walk(rel, "", &doc)
		}
		files++
	})
	require.Greater(t, files, 10)
	t.Logf("%d YAML files, %d secret settings, each from the environment or a file", files, seen)
}
