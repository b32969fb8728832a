package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// kpsNamespace is the namespace kube-prometheus-stack's release is installed in (the overlay's
// and values.yaml's comments).
const kpsNamespace = "monitoring"

// The generated files of the overlay are those the generator writes now: run `go generate`
// in deploy/ after changing the rules or a dashboard.
func TestKubePrometheusStackGenerated(t *testing.T) {
	files, err := KubePrometheusStackFiles()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is out of date (%v): run go generate in deploy/", path, err)
		}
	}
	onDisk, _ := filepath.Glob(filepath.Join(KubePrometheusStackDir, "dashboards", "*.json"))
	for _, f := range onDisk {
		if _, ok := files[f]; !ok {
			t.Errorf("%s is no dashboard of grafana/dashboards any more: run go generate in deploy/", f)
		}
	}
}

// kpsValues are the keys of the kube-prometheus-stack chart that values.yaml sets; the
// prometheusSpec is decoded strictly into the operator's PrometheusSpec.
type kpsValues struct {
	FullnameOverride string `json:"fullnameOverride"`
	Prometheus       struct {
		PrometheusSpec map[string]any `json:"prometheusSpec"`
	} `json:"prometheus"`
	Grafana struct {
		Sidecar struct {
			Dashboards struct {
				Enabled         bool   `json:"enabled"`
				Label           string `json:"label"`
				LabelValue      string `json:"labelValue"`
				SearchNamespace string `json:"searchNamespace"`
			} `json:"dashboards"`
		} `json:"sidecar"`
	} `json:"grafana"`
}

// chartOnlySpecKeys are keys of the chart's prometheusSpec that the chart consumes itself
// (they pick the selectors it renders) and that are no PrometheusSpec field.
var chartOnlySpecKeys = []string{"podMonitorSelectorNilUsesHelmValues", "serviceMonitorSelectorNilUsesHelmValues", "ruleSelectorNilUsesHelmValues"}

func kubePrometheusStackValues(t *testing.T) (kpsValues, monitoringv1.PrometheusSpec) {
	t.Helper()
	var v kpsValues
	readYAML(t, filepath.Join(KubePrometheusStackDir, "values.yaml"), &v, yaml.UnmarshalStrict)
	sub := map[string]any{}
	for k, val := range v.Prometheus.PrometheusSpec {
		sub[k] = val
	}
	for _, k := range chartOnlySpecKeys {
		delete(sub, k)
	}
	raw, err := json.Marshal(sub)
	if err != nil {
		t.Fatal(err)
	}
	var spec monitoringv1.PrometheusSpec
	if err := yaml.UnmarshalStrict(raw, &spec); err != nil {
		t.Fatalf("values.yaml prometheus.prometheusSpec: strict decoding into PrometheusSpec (v0.95.2): %v", err)
	}
	return v, spec
}

// TestKubePrometheusStackValues: the chart's Prometheus receives remote writes with an
// out-of-order window, and its Grafana sidecar loads the dashboards' ConfigMaps.
func TestKubePrometheusStackValues(t *testing.T) {
	v, spec := kubePrometheusStackValues(t)
	if !spec.EnableRemoteWriteReceiver {
		t.Error("prometheusSpec.enableRemoteWriteReceiver must be true: the gateways remote-write")
	}
	if spec.TSDB == nil || spec.TSDB.OutOfOrderTimeWindow == nil || *spec.TSDB.OutOfOrderTimeWindow == "" {
		t.Error("prometheusSpec.tsdb.outOfOrderTimeWindow must be set: collections arrive out of order through several gateways")
	}
	if v.FullnameOverride == "" {
		t.Error("fullnameOverride must be set: the gateways' remote-write URL names the Prometheus Service by it")
	}
	d := v.Grafana.Sidecar.Dashboards
	if !d.Enabled || d.Label != "grafana_dashboard" || d.LabelValue != "1" || d.SearchNamespace != "ALL" {
		t.Errorf("grafana.sidecar.dashboards %+v: want enabled, label grafana_dashboard=1, every namespace", d)
	}
}

// TestKubePrometheusStackOverlay renders the overlay and decodes every object strictly (the
// monitoring kinds into prometheus-operator v0.95.2's types): every collector workload has a
// PodMonitor on its telemetry port, the PrometheusRule is gym.rules.yaml's groups (and passes
// promtool where installed), every dashboard is a labelled ConfigMap, and the gateways and the
// recorder write to the chart's Prometheus.
func TestKubePrometheusStackOverlay(t *testing.T) {
	m := decode(t, renderDir(t, KubePrometheusStackDir))
	v, _ := kubePrometheusStackValues(t)

	pods := map[string]corev1.PodTemplateSpec{}
	for n, d := range m.daemonSets {
		pods["DaemonSet "+n] = d.Spec.Template
	}
	for n, d := range m.deployments {
		pods["Deployment "+n] = d.Spec.Template
	}
	for n, s := range m.statefulSets {
		pods["StatefulSet "+n] = statefulPod(s)
	}
	if len(pods) != 3 || len(m.podMonitors) != 3 {
		t.Errorf("%d workloads, %d PodMonitors: want the agent, the gateway and the recorder, each monitored", len(pods), len(m.podMonitors))
	}
	for name, pod := range pods {
		checkPod(t, m, name, pod.Spec)
		telemetry := ""
		for _, p := range pod.Spec.Containers[0].Ports {
			if p.ContainerPort == 8888 { // OTELCOL_GYM_TELEMETRY_PORT's default
				telemetry = p.Name
			}
		}
		monitored := false
		for mn, pm := range m.podMonitors {
			sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if pm.Namespace != namespaceOf(m, name) {
				t.Errorf("PodMonitor %s is in namespace %q, not its pods' %q (it selects pods of its own namespace)", mn, pm.Namespace, namespaceOf(m, name))
			}
			for _, ep := range pm.Spec.PodMetricsEndpoints {
				if ep.Port != nil && *ep.Port == telemetry && telemetry != "" {
					monitored = true
				} else {
					t.Errorf("PodMonitor %s scrapes port %v of %s, whose telemetry port is %q", mn, ep.Port, name, telemetry)
				}
			}
		}
		if !monitored {
			t.Errorf("%s: no PodMonitor scrapes its telemetry port", name)
		}
		env := envOf(pod.Spec.Containers[0])
		if telemetryHost := env["OTELCOL_GYM_TELEMETRY_HOST"]; telemetryHost == "" {
			t.Errorf("%s: the telemetry endpoint listens on loopback (OTELCOL_GYM_TELEMETRY_HOST unset): Prometheus cannot scrape it", name)
		}
	}

	gw := m.deployments["otelcol-gym-gateway"]
	if gw == nil {
		t.Fatal("no gateway Deployment")
	}
	want := "http://" + v.FullnameOverride + "-prometheus." + kpsNamespace + ".svc:9090/api/v1/write"
	if got := envOf(gw.Spec.Template.Spec.Containers[0])["OTELCOL_GYM_REMOTE_WRITE_URL"]; got != want {
		t.Errorf("the gateways write to %q, want the chart's Prometheus %q", got, want)
	}
	// The recorder's series (in flight, stalled) go there too: a patch of the gateway alone
	// would leave it writing to the base's backend.
	if rec := m.statefulSets["otelcol-gym-recorder"]; rec == nil {
		t.Error("no recorder StatefulSet")
	} else if got := envOf(rec.Spec.Template.Spec.Containers[0])["OTELCOL_GYM_REMOTE_WRITE_URL"]; got != want {
		t.Errorf("the recorder writes to %q, want the chart's Prometheus %q", got, want)
	}

	// The rule: exactly the groups of gym.rules.yaml.
	rule := m.prometheusRules["otelcol-gym"]
	if rule == nil || len(m.prometheusRules) != 1 {
		t.Fatalf("want one PrometheusRule otelcol-gym, got %v", keys(m.prometheusRules))
	}
	var source struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}
	readYAML(t, "prometheus/gym.rules.yaml", &source, yaml.UnmarshalStrict)
	if !reflect.DeepEqual(source.Groups, rule.Spec.Groups) {
		t.Error("the PrometheusRule's groups differ from prometheus/gym.rules.yaml: run go generate in deploy/")
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		groups, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "rules.yaml")
		if err := os.WriteFile(path, groups, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules on the PrometheusRule's groups: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool is not installed: the rule groups are not checked by it")
	}

	// Every dashboard, byte for byte, in a ConfigMap the sidecar picks up.
	dashboards, _ := filepath.Glob("grafana/dashboards/*.json")
	if len(dashboards) == 0 {
		t.Fatal("no dashboards in grafana/dashboards")
	}
	for _, d := range dashboards {
		data, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for n, cm := range m.configMaps {
			if cm.Data[filepath.Base(d)] == string(data) {
				found = true
				if cm.Labels[v.Grafana.Sidecar.Dashboards.Label] != v.Grafana.Sidecar.Dashboards.LabelValue {
					t.Errorf("ConfigMap %s (%s) lacks the label %s=%q", n, d, v.Grafana.Sidecar.Dashboards.Label, v.Grafana.Sidecar.Dashboards.LabelValue)
				}
			}
		}
		if !found {
			t.Errorf("%s is in no ConfigMap of the overlay", d)
		}
	}
}

// namespaceOf is the namespace of the workload "Kind name".
func namespaceOf(m *manifests, workload string) string {
	for n, d := range m.daemonSets {
		if workload == "DaemonSet "+n {
			return d.Namespace
		}
	}
	for n, d := range m.deployments {
		if workload == "Deployment "+n {
			return d.Namespace
		}
	}
	for n, s := range m.statefulSets {
		if workload == "StatefulSet "+n {
			return s.Namespace
		}
	}
	return ""
}
