package deploy

import (
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// secretKey is where a pod's bearer token comes from: a key of a Secret.
type secretKey struct{ name, key string }

// checkAgentToken: the agent's gym HTTP and OTLP receivers require the bearer token, read from
// OTELCOL_GYM_TOKEN_FILE, a file of a Secret volume mounted read-only as a directory (a subPath
// mount is never updated by the kubelet); the configs keep agent.yaml's extensions. It returns
// the Secret and key the token comes from.
func checkAgentToken(t *testing.T, m *manifests, name string, spec corev1.PodSpec) secretKey {
	t.Helper()
	c := spec.Containers[0]
	file := envOf(c)["OTELCOL_GYM_TOKEN_FILE"]
	var from secretKey
	for _, vm := range c.VolumeMounts {
		if filepath.Clean(vm.MountPath) != filepath.Dir(file) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name || v.Secret == nil {
				continue
			}
			if !vm.ReadOnly || vm.SubPath != "" {
				t.Errorf("%s: the token's volume %s: mount it read-only and whole (readOnly %v, subPath %q)", name, v.Name, vm.ReadOnly, vm.SubPath)
			}
			if v.Secret.Optional != nil && *v.Secret.Optional {
				t.Errorf("%s: the token's Secret is optional: without it the agent must not start", name)
			}
			for _, it := range v.Secret.Items {
				if it.Path == filepath.Base(file) {
					from = secretKey{v.Secret.SecretName, it.Key}
				}
			}
		}
	}
	if from.name == "" || from.key == "" {
		t.Fatalf("%s: OTELCOL_GYM_TOKEN_FILE %q is not a key of a Secret volume mounted at its directory", name, file)
	}

	// The configs, merged in order as the --config flags are.
	type auth struct {
		Auth *struct {
			Authenticator string `json:"authenticator"`
		} `json:"auth"`
	}
	var cfg struct {
		Extensions map[string]struct {
			Filename string `json:"filename"`
		} `json:"extensions"`
		Receivers struct {
			Gym struct {
				HTTP *auth `json:"http"`
			} `json:"gym"`
			OTLP struct {
				Protocols struct {
					GRPC *auth `json:"grpc"`
					HTTP *auth `json:"http"`
				} `json:"protocols"`
			} `json:"otlp"`
		} `json:"receivers"`
		Service struct {
			Extensions []string `json:"extensions"`
		} `json:"service"`
	}
	var extensions [][]string // each config's service::extensions
	for _, f := range configArgs(c) {
		text := mountedConfig(m, spec, f)
		if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
			t.Fatalf("%s: %s: %v", name, f, err)
		}
		var one struct {
			Service struct {
				Extensions []string `json:"extensions"`
			} `json:"service"`
		}
		_ = yaml.Unmarshal([]byte(text), &one)
		if one.Service.Extensions != nil {
			extensions = append(extensions, one.Service.Extensions)
		}
	}
	r := cfg.Receivers
	for listener, a := range map[string]*auth{"gym http": r.Gym.HTTP, "otlp grpc": r.OTLP.Protocols.GRPC, "otlp http": r.OTLP.Protocols.HTTP} {
		if a == nil || a.Auth == nil || a.Auth.Authenticator != "bearertokenauth" {
			t.Errorf("%s: the %s receiver does not require the bearer token (auth.authenticator: bearertokenauth)", name, listener)
		}
	}
	if f := cfg.Extensions["bearertokenauth"].Filename; !strings.HasPrefix(f, "${env:OTELCOL_GYM_TOKEN_FILE") {
		t.Errorf("%s: bearertokenauth reads %q, not OTELCOL_GYM_TOKEN_FILE", name, f)
	}
	if !slices.Contains(cfg.Service.Extensions, "bearertokenauth") {
		t.Errorf("%s: service::extensions %v lacks bearertokenauth", name, cfg.Service.Extensions)
	}
	// A later list replaces an earlier one: the overlay's must keep every extension of agent.yaml's.
	for _, earlier := range extensions {
		for _, e := range earlier {
			if !slices.Contains(cfg.Service.Extensions, e) {
				t.Errorf("%s: service::extensions %v drops %s of an earlier config", name, cfg.Service.Extensions, e)
			}
		}
	}
	return from
}

// mountedConfig is the text of the --config file f of a pod, from the ConfigMap volume
// mounted at its directory.
func mountedConfig(m *manifests, spec corev1.PodSpec, f string) string {
	for _, vm := range spec.Containers[0].VolumeMounts {
		if filepath.Clean(vm.MountPath) != filepath.Dir(f) {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil || m.configMaps[v.ConfigMap.Name] == nil {
				continue
			}
			for _, it := range v.ConfigMap.Items {
				if it.Path == filepath.Base(f) {
					return m.configMaps[v.ConfigMap.Name].Data[it.Key]
				}
			}
		}
	}
	return ""
}

// headerRef is the value of OTELCOL_GYM_HEADERS and OTEL_EXPORTER_OTLP_HEADERS: the
// Authorization header, percent-encoded, with the token from another variable.
var headerRef = regexp.MustCompile(`^authorization=Bearer%20\$\(([A-Za-z_][A-Za-z0-9_]*)\)$`)

// TestGymPodToken: the example Gym pod (kubernetes/examples/gym-job.yaml) decodes strictly,
// takes its token from the Secret and key that the agent's token file comes from, in the kustomize
// base and in the Helm chart, sends it in both senders' headers, and sends to the agent's
// hostPorts on the node's IP. The base ships no Secret (decode knows no such kind).
func TestGymPodToken(t *testing.T) {
	base := decode(t, render(t))
	agent := base.daemonSets["otelcol-gym-agent"]
	want := checkAgentToken(t, base, "DaemonSet otelcol-gym-agent", agent.Spec.Template.Spec)
	hostPorts := map[string]int32{}
	for _, p := range agent.Spec.Template.Spec.Containers[0].Ports {
		hostPorts[p.Name] = p.HostPort
	}

	c := exampleGymJob(t).Spec.Template.Spec.Containers[0]
	defined := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		for _, ref := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(e.Value, -1) {
			if _, ok := defined[ref[1]]; !ok {
				t.Errorf("%s refers to $(%s), which is not set before it (the kubelet leaves it as it is)", e.Name, ref[1])
			}
		}
		defined[e.Name] = e
	}
	for _, h := range []string{"OTELCOL_GYM_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
		m := headerRef.FindStringSubmatch(defined[h].Value)
		if m == nil {
			t.Errorf("%s=%q: want authorization=Bearer%%20$(VAR)", h, defined[h].Value)
			continue
		}
		src := defined[m[1]].ValueFrom
		if src == nil || src.SecretKeyRef == nil {
			t.Errorf("%s: %s does not come from a Secret", h, m[1])
			continue
		}
		if got := (secretKey{src.SecretKeyRef.Name, src.SecretKeyRef.Key}); got != want {
			t.Errorf("%s: the token comes from %+v, the agent's from %+v", h, got, want)
		}
	}
	if f := defined["HOST_IP"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "status.hostIP" {
		t.Error("HOST_IP: want the node's IP (fieldRef status.hostIP): the agent listens on its hostPorts")
	}
	for v, port := range map[string]string{"OTELCOL_GYM_ENDPOINT": "gym-http", "OTEL_EXPORTER_OTLP_ENDPOINT": "otlp-http"} {
		u, err := url.Parse(defined[v].Value)
		if err != nil || u.Scheme != "http" || u.Hostname() != "$(HOST_IP)" || u.Port() != strconv.Itoa(int(hostPorts[port])) {
			t.Errorf("%s=%q: want http://$(HOST_IP):%d, the agent's %s hostPort", v, defined[v].Value, hostPorts[port], port)
		}
	}

	// The Helm chart's agent: the same token, from the same Secret.
	chart := decode(t, helmTemplate(t, "otelcol-gym-agent", "otelcol-gym", agentValues...))
	for n, ds := range chart.daemonSets {
		if got := checkAgentToken(t, chart, "Helm DaemonSet "+n, ds.Spec.Template.Spec); got != want {
			t.Errorf("Helm DaemonSet %s: the token comes from %+v, the base's from %+v", n, got, want)
		}
	}
}
