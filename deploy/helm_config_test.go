package deploy

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// sameYAMLAsFile: text is the file's, or (asYAML) decodes to what the file decodes to.
func sameYAMLAsFile(file, text string, asYAML bool) (bool, error) {
	data, err := os.ReadFile(file)
	if err != nil || !asYAML {
		return string(data) == text, err
	}
	var a, b any
	if err := errors.Join(yaml.Unmarshal(data, &a), yaml.Unmarshal([]byte(text), &b)); err != nil {
		return false, err
	}
	return reflect.DeepEqual(a, b), nil
}

// TestHelmConfigGenerated: the Helm values that carry the collector configuration are those
// the generator writes now from deploy/agent.yaml, kubernetes/config/agent-kubernetes.yaml
// and deploy/gateway.yaml: run `go generate` in deploy/ after changing one.
func TestHelmConfigGenerated(t *testing.T) {
	files, err := HelmConfigFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Errorf("%d generated values files, want 2: %v", len(files), slices.Sorted(maps.Keys(files)))
	}
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s is out of date (%v): run go generate in deploy/", path, err)
		}
	}
	for _, f := range slices.Concat(agentValues, gatewayValues, recorderValues) {
		if _, ok := files[f]; !ok && strings.HasSuffix(f, "-config.yaml") {
			t.Errorf("%s is given to helm but not generated", f)
		}
	}
}

// podAnnotations renders a release and returns its one workload's pod template annotations.
func podAnnotations(t *testing.T, release string, files ...string) map[string]string {
	t.Helper()
	m := decode(t, helmTemplate(t, release, "otelcol-gym", files...))
	for _, ds := range m.daemonSets {
		return ds.Spec.Template.Annotations
	}
	for _, d := range m.deployments {
		return d.Spec.Template.Annotations
	}
	for _, s := range m.statefulSets {
		return s.Spec.Template.Annotations
	}
	t.Fatalf("%s renders no DaemonSet, Deployment or StatefulSet", release)
	return nil
}

// writeValues writes a values file for the test and returns its path.
func writeValues(t *testing.T, v any) string {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHelmConfigRollsPods: a `helm upgrade` with another configuration changes the pod
// template (its checksum annotations), so the DaemonSet, the Deployment and the recorder's
// StatefulSet roll their pods; the same configuration renders the same template (no roll for
// nothing). For the agent, a change of agent-kubernetes.yaml (a ConfigMap of the release's
// extraManifests) rolls them too.
func TestHelmConfigRollsPods(t *testing.T) {
	for _, c := range []struct {
		release string
		files   []string
	}{{"otelcol-gym-agent", agentValues}, {"otelcol-gym-gateway", gatewayValues}, {"otelcol-gym-recorder", recorderValues}} {
		t.Run(c.release, func(t *testing.T) {
			before := podAnnotations(t, c.release, c.files...)
			if again := podAnnotations(t, c.release, c.files...); !maps.Equal(before, again) {
				t.Errorf("the same values render other pod annotations: %v, then %v", before, again)
			}
			if before["checksum/config"] == "" {
				t.Errorf("no checksum/config in the pod template's annotations %v", before)
			}
			changed := writeValues(t, map[string]any{"alternateConfig": map[string]any{
				"service": map[string]any{"telemetry": map[string]any{"logs": map[string]any{"level": "debug"}}}}})
			if after := podAnnotations(t, c.release, append(c.files, changed)...); maps.Equal(before, after) {
				t.Errorf("a new alternateConfig leaves the pod template's annotations as they were (%v): helm upgrade would not roll the pods", after)
			}
			if c.release != "otelcol-gym-agent" {
				return
			}
			var gen struct {
				ExtraManifests []map[string]any `json:"extraManifests"`
			}
			data, err := os.ReadFile(c.files[len(c.files)-1])
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &gen); err != nil || len(gen.ExtraManifests) != 1 {
				t.Fatalf("%s: want one extraManifests object (%v)", c.files[len(c.files)-1], err)
			}
			cm := gen.ExtraManifests[0]
			dataMap, _ := cm["data"].(map[string]any)
			text, _ := dataMap["agent-kubernetes.yaml"].(string)
			if text == "" {
				t.Fatalf("the extraManifests object holds no agent-kubernetes.yaml: %v", cm)
			}
			dataMap["agent-kubernetes.yaml"] = text + "# changed\n"
			changed = writeValues(t, map[string]any{"extraManifests": gen.ExtraManifests})
			if after := podAnnotations(t, c.release, append(c.files, changed)...); maps.Equal(before, after) {
				t.Errorf("a new agent-kubernetes.yaml leaves the pod template's annotations as they were (%v)", after)
			}
		})
	}
}

// TestHelmNetworkPoliciesAndScheduling: the two releases' NetworkPolicies let the data
// through and nothing else (checkNetworkPolicies, as for the kustomize base); the agent
// tolerates the GPU nodes' taints and names the PriorityClass of kubernetes/priorityclass.yaml;
// the gateway release has a PodDisruptionBudget that lets a drain proceed.
func TestHelmNetworkPoliciesAndScheduling(t *testing.T) {
	const ns = "otelcol-gym"
	agent := decode(t, helmTemplate(t, "otelcol-gym-agent", ns, agentValues...))
	gateway := decode(t, helmTemplate(t, "otelcol-gym-gateway", ns, gatewayValues...))
	if len(agent.daemonSets) != 1 || len(gateway.deployments) != 1 || len(gateway.autoscalers) != 1 {
		t.Fatalf("want one DaemonSet, one Deployment and its autoscaler, got %d, %d, %d", len(agent.daemonSets), len(gateway.deployments), len(gateway.autoscalers))
	}
	var agentPod, gatewayPod corev1.PodTemplateSpec
	for _, ds := range agent.daemonSets {
		agentPod = ds.Spec.Template
		checkAgentScheduling(t, "Helm DaemonSet "+ds.Name, ds.Spec.Template.Spec, priorityClassFile(t))
	}
	for _, d := range gateway.deployments {
		gatewayPod = d.Spec.Template
		for _, h := range gateway.autoscalers {
			checkGatewayDisruption(t, gateway.pdbs, d, int(*h.Spec.MinReplicas))
		}
	}
	policies := map[string]*networkingv1.NetworkPolicy{}
	maps.Copy(policies, agent.policies)
	maps.Copy(policies, gateway.policies)
	if len(policies) != 2 {
		t.Errorf("%d NetworkPolicies, want one per release", len(policies))
	}
	checkNetworkPolicies(t, policies, podEndpoint("the Helm agent", ns, agentPod), podEndpoint("the Helm gateway", ns, gatewayPod),
		envOf(agentPod.Spec.Containers[0]), envOf(gatewayPod.Spec.Containers[0]))
}
