package deploy

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
)

const chartDir = "testdata/charts/opentelemetry-collector"

// helmTemplate renders the vendored upstream chart as `helm template NAME CHART -n NAMESPACE -f
// VALUES` does: the values merged over the chart's, checked against its values.schema.json,
// and every template rendered by Helm's engine. It returns the manifests as one YAML stream.
func helmTemplate(t *testing.T, release, namespace, valuesFile string) []byte {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	vals, err := chartutil.ReadValuesFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	top, err := chartutil.ToRenderValuesWithSchemaValidation(chrt, vals,
		chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, caps, true)
	if err != nil {
		t.Fatalf("%s: %v", valuesFile, err)
	}
	// The merged values are checked against the schema here, not by chartutil: its loader
	// would fetch http(s) references, and this test sends nothing off the machine.
	merged, err := top.Table("Values")
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, chrt.Schema, valuesFile, merged)
	files, err := engine.Render(chrt, top)
	if err != nil {
		t.Fatalf("%s: helm template: %v", valuesFile, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") { // NOTES.txt and the partials are not manifests
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var docs [][]byte
	for _, n := range names {
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(files[n], -1) {
			if strings.TrimSpace(stripComments(doc)) != "" {
				docs = append(docs, []byte(strings.TrimSpace(doc)))
			}
		}
	}
	return bytes.Join(docs, []byte("\n---\n"))
}

func stripComments(doc string) string {
	var keep []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// checkSchema validates the merged values against the chart's schema, as `helm template` does.
func checkSchema(t *testing.T, schemaJSON []byte, name string, vals chartutil.Values) {
	t.Helper()
	if len(schemaJSON) == 0 {
		t.Fatal("the chart has no values.schema.json")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler() // its default loader reads file: URLs only
	if err := c.AddResource("file:///values.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("file:///values.schema.json")
	if err != nil {
		t.Fatalf("compiling the chart's schema: %v", err)
	}
	if err := sch.Validate(vals.AsMap()); err != nil {
		t.Fatalf("%s does not satisfy the chart's values.schema.json: %v", name, err)
	}
}

// TestHelmTemplate renders the upstream chart with each values file and checks the result as
// the kustomize base is checked: every object decodes strictly into the Kubernetes API types,
// the pod runs this image's binary on the ConfigMap that deploy/kubernetes/values-*.yaml's
// comments create from deploy/agent.yaml or deploy/gateway.yaml, `otelcol-gym validate`
// accepts that file with the pod's rendered environment, and the agents' gateway address is
// the gateway release's headless Service and its OTLP port.
func TestHelmTemplate(t *testing.T) {
	const ns = "otelcol-gym"
	agent := decode(t, helmTemplate(t, "otelcol-gym-agent", ns, "kubernetes/values-agent.yaml"))
	gateway := decode(t, helmTemplate(t, "otelcol-gym-gateway", ns, "kubernetes/values-gateway.yaml"))

	for _, c := range []struct {
		name, configMap, config string
		m                       *manifests
		spec                    func(*manifests) (string, corev1.PodSpec, bool)
	}{
		{"agent", "otelcol-gym-agent", "agent.yaml", agent, func(m *manifests) (string, corev1.PodSpec, bool) {
			for n, ds := range m.daemonSets {
				return "DaemonSet " + n, ds.Spec.Template.Spec, len(m.daemonSets) == 1 && len(m.deployments) == 0
			}
			return "", corev1.PodSpec{}, false
		}},
		{"gateway", "otelcol-gym-gateway", "gateway.yaml", gateway, func(m *manifests) (string, corev1.PodSpec, bool) {
			for n, d := range m.deployments {
				return "Deployment " + n, d.Spec.Template.Spec, len(m.deployments) == 1 && len(m.daemonSets) == 0
			}
			return "", corev1.PodSpec{}, false
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name, spec, ok := c.spec(c.m)
			if !ok {
				t.Fatalf("want exactly one workload of the values' mode, got %d DaemonSets and %d Deployments", len(c.m.daemonSets), len(c.m.deployments))
			}
			if len(c.m.configMaps) != 0 {
				t.Errorf("the chart rendered ConfigMaps %v: configMap.create must be false (the config is deploy/%s)", keys(c.m.configMaps), c.config)
			}
			// The ConfigMap the values file's comment creates: kubectl create configmap NAME
			// --from-file=relay=deploy/FILE.
			config, err := os.ReadFile(c.config)
			if err != nil {
				t.Fatal(err)
			}
			c.m.configMaps[c.configMap] = &corev1.ConfigMap{Data: map[string]string{"relay": string(config)}}
			c.m.configSources = map[string]string{c.configMap + "/relay": c.config}
			if c.name == "agent" {
				// And the one values-agent.yaml's comment creates from kubernetes/config/.
				const extra = "kubernetes/config/agent-kubernetes.yaml"
				text, err := os.ReadFile(extra)
				if err != nil {
					t.Fatal(err)
				}
				c.m.configMaps["otelcol-gym-agent-kubernetes"] = &corev1.ConfigMap{Data: map[string]string{"agent-kubernetes.yaml": string(text)}}
				c.m.configSources["otelcol-gym-agent-kubernetes/agent-kubernetes.yaml"] = extra
			}

			ctr := spec.Containers[0]
			if want := "ghcr.io/gym-telemetry/otelcol-gym:" + releaseVersion(t); ctr.Image != want {
				t.Errorf("%s: image %q, want the released %q (builder-config.yaml dist.version)", name, ctr.Image, want)
			}
			if !slices.Equal(ctr.Command, []string{"/otelcol-gym"}) {
				t.Errorf("%s: command %v, want the image's entry point /otelcol-gym", name, ctr.Command)
			}
			checkPod(t, c.m, name, spec)
			if c.name == "agent" && !spec.HostPID {
				t.Errorf("%s: hostPID is off: the agent reads the Gym processes' stats on the host", name)
			}
			if sc := ctr.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: the root filesystem must be read-only", name)
			}
		})
	}

	// The agents send to dns:///SERVICE:4317; the gateway release renders that Service,
	// headless, with the OTLP gRPC port, selecting the gateway's pods.
	_, agentSpec, _ := func() (string, corev1.PodSpec, bool) {
		for n, ds := range agent.daemonSets {
			return n, ds.Spec.Template.Spec, true
		}
		return "", corev1.PodSpec{}, false
	}()
	target := envOf(agentSpec.Containers[0])["OTELCOL_GYM_GATEWAY_ENDPOINT"]
	m := regexp.MustCompile(`^dns:///([a-z0-9-]+):(\d+)$`).FindStringSubmatch(target)
	if m == nil {
		t.Fatalf("the agents' OTELCOL_GYM_GATEWAY_ENDPOINT %q is not dns:///SERVICE:PORT", target)
	}
	svc := gateway.services[m[1]]
	if svc == nil {
		t.Fatalf("the agents resolve %s, which the gateway release does not render (it renders %v)", m[1], keys(gateway.services))
	}
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("Service %s has clusterIP %q: it must be headless, so the agents' DNS resolver balances over the gateway pods", m[1], svc.Spec.ClusterIP)
	}
	port := false
	for _, p := range svc.Spec.Ports {
		port = port || strconv.Itoa(int(p.Port)) == m[2]
	}
	if !port {
		t.Errorf("Service %s has no port %s", m[1], m[2])
	}
	for _, d := range gateway.deployments {
		for k, v := range svc.Spec.Selector {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the gateway's pods do not carry", m[1], k, v)
			}
		}
		for _, hpa := range gateway.autoscalers {
			if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != d.Name {
				t.Errorf("HorizontalPodAutoscaler %s scales %s %s, not the gateway Deployment %s", hpa.Name, hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name, d.Name)
			}
		}
	}
	if len(gateway.autoscalers) != 1 {
		t.Errorf("the gateway release renders %d HorizontalPodAutoscalers, want 1 (autoscaling.enabled)", len(gateway.autoscalers))
	}
}
