package deploy

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// manifests is the rendered kustomize base, decoded strictly (an unknown field fails) into the
// Kubernetes API types.
type manifests struct {
	namespaces   map[string]*corev1.Namespace
	accounts     map[string]*corev1.ServiceAccount
	configMaps   map[string]*corev1.ConfigMap
	daemonSets   map[string]*appsv1.DaemonSet
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	autoscalers  map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs         map[string]*policyv1.PodDisruptionBudget
	policies     map[string]*networkingv1.NetworkPolicy
	priorities   map[string]*schedulingv1.PriorityClass // cluster-scoped
	// The prometheus-operator kinds of the kube-prometheus-stack overlay.
	podMonitors     map[string]*monitoringv1.PodMonitor
	prometheusRules map[string]*monitoringv1.PrometheusRule
	namespaced      []metav1.ObjectMeta
	renderedYAML    []byte
	// configSources maps "ConfigMap/key" to the file of deploy/ it is created from, where the
	// key is not that file's name (the Helm chart mounts the key relay).
	configSources map[string]string
}

// render runs kustomize (the library kubectl embeds) on kubernetes/.
func render(t *testing.T) []byte {
	t.Helper()
	return renderDir(t, "kubernetes")
}

// renderDir runs kustomize on a directory of deploy/.
func renderDir(t *testing.T, dir string) []byte {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func decode(t *testing.T, rendered []byte) *manifests {
	t.Helper()
	m := &manifests{
		namespaces: map[string]*corev1.Namespace{}, accounts: map[string]*corev1.ServiceAccount{},
		configMaps: map[string]*corev1.ConfigMap{}, daemonSets: map[string]*appsv1.DaemonSet{},
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{}, statefulSets: map[string]*appsv1.StatefulSet{},
		autoscalers: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, renderedYAML: rendered,
		podMonitors: map[string]*monitoringv1.PodMonitor{}, prometheusRules: map[string]*monitoringv1.PrometheusRule{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, policies: map[string]*networkingv1.NetworkPolicy{},
		priorities: map[string]*schedulingv1.PriorityClass{},
	}
	// Each kind the rendered bases may hold, decoded strictly into its API type and filed by
	// name; the cluster-scoped ones are in no namespace.
	kinds := map[string]func(doc []byte) error{
		"v1/Namespace":                            strictInto(m.namespaces),
		"v1/ServiceAccount":                       strictInto(m.accounts),
		"v1/ConfigMap":                            strictInto(m.configMaps),
		"apps/v1/DaemonSet":                       strictInto(m.daemonSets),
		"apps/v1/Deployment":                      strictInto(m.deployments),
		"apps/v1/StatefulSet":                     strictInto(m.statefulSets),
		"v1/Service":                              strictInto(m.services),
		"autoscaling/v2/HorizontalPodAutoscaler":  strictInto(m.autoscalers),
		"policy/v1/PodDisruptionBudget":           strictInto(m.pdbs),
		"networking.k8s.io/v1/NetworkPolicy":      strictInto(m.policies),
		"scheduling.k8s.io/v1/PriorityClass":      strictInto(m.priorities),
		"monitoring.coreos.com/v1/PodMonitor":     strictInto(m.podMonitors),
		"monitoring.coreos.com/v1/PrometheusRule": strictInto(m.prometheusRules),
	}
	clusterScoped := map[string]bool{"v1/Namespace": true, "scheduling.k8s.io/v1/PriorityClass": true}
	for i, doc := range bytes.Split(rendered, []byte("\n---\n")) {
		var head metav1.PartialObjectMetadata // kind and metadata, read loosely to pick the type
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		kind := head.APIVersion + "/" + head.Kind
		decode := kinds[kind]
		if decode == nil {
			t.Fatalf("document %d: %s %s is not a kind this test knows: add its checks", i, head.APIVersion, head.Kind)
		}
		if err := decode(doc); err != nil {
			t.Fatalf("%s %d: strict decoding: %v", head.Kind, i, err)
		}
		if !clusterScoped[kind] {
			m.namespaced = append(m.namespaced, head.ObjectMeta)
		}
	}
	return m
}

// TestKustomizeBase renders deploy/kubernetes, decodes every object strictly and checks what
// refers to what: namespaces, selectors, service accounts, ConfigMaps and their keys, volumes,
// ports, the autoscaler's target, the agents' gateway address, and the environment variables
// the collector configs read.
func TestKustomizeBase(t *testing.T) {
	m := decode(t, render(t))

	want := map[string]int{"Namespace": 1, "DaemonSet": 1, "Deployment": 1, "StatefulSet": 1, "Service": 3, "HorizontalPodAutoscaler": 1,
		"ConfigMap": 2, "PodDisruptionBudget": 1, "NetworkPolicy": 3, "PriorityClass": 1}
	got := map[string]int{"Namespace": len(m.namespaces), "DaemonSet": len(m.daemonSets), "Deployment": len(m.deployments), "StatefulSet": len(m.statefulSets),
		"Service": len(m.services), "HorizontalPodAutoscaler": len(m.autoscalers), "ConfigMap": len(m.configMaps),
		"PodDisruptionBudget": len(m.pdbs), "NetworkPolicy": len(m.policies), "PriorityClass": len(m.priorities)}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%d %s objects, want %d", got[k], k, n)
		}
	}
	for _, meta := range m.namespaced {
		if m.namespaces[meta.Namespace] == nil {
			t.Errorf("%s is in namespace %q, which the base does not create", meta.Name, meta.Namespace)
		}
	}

	type workload struct {
		name     string
		selector *metav1.LabelSelector
		pod      corev1.PodTemplateSpec
	}
	var workloads []workload
	for n, d := range m.daemonSets {
		workloads = append(workloads, workload{"DaemonSet " + n, d.Spec.Selector, d.Spec.Template})
	}
	for n, d := range m.deployments {
		workloads = append(workloads, workload{"Deployment " + n, d.Spec.Selector, d.Spec.Template})
	}
	for n, s := range m.statefulSets { // its pods as the controller makes them: with its claims
		workloads = append(workloads, workload{"StatefulSet " + n, s.Spec.Selector, statefulPod(s)})
	}
	for _, w := range workloads {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil || sel.Empty() {
			t.Errorf("%s: selector %v: %v", w.name, w.selector, err)
			continue
		}
		if !sel.Matches(labels.Set(w.pod.Labels)) {
			t.Errorf("%s: selector %s does not select its own pods (%v)", w.name, sel, w.pod.Labels)
		}
		checkPod(t, m, w.name, w.pod.Spec)
	}

	// Services select pods, and their target ports are ports of those pods.
	for n, s := range m.services {
		var pods []corev1.PodTemplateSpec
		for _, w := range workloads {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(w.pod.Labels)) {
				pods = append(pods, w.pod)
			}
		}
		if len(s.Spec.Selector) == 0 || len(pods) == 0 {
			t.Errorf("Service %s selects no workload's pods (%v)", n, s.Spec.Selector)
			continue
		}
		for _, p := range s.Spec.Ports {
			for _, pod := range pods {
				if !podHasPort(pod.Spec, p.TargetPort.String()) {
					t.Errorf("Service %s: target port %s is not a port of the pods it selects", n, p.TargetPort.String())
				}
			}
		}
	}

	// The autoscaler scales the gateway, whose containers request CPU (utilisation is relative to it).
	for n, h := range m.autoscalers {
		ref := h.Spec.ScaleTargetRef
		d := m.deployments[ref.Name]
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || d == nil {
			t.Errorf("HorizontalPodAutoscaler %s: target %s %s %s is not a Deployment of the base", n, ref.APIVersion, ref.Kind, ref.Name)
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Resources.Requests.Cpu().IsZero() {
				t.Errorf("HorizontalPodAutoscaler %s: container %s requests no CPU", n, c.Name)
			}
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
			t.Errorf("HorizontalPodAutoscaler %s: at least 2 gateways, so that one can fail", n)
		}
	}

	// The agent: host processes visible, its state on the node, and its gateway address is the
	// headless Service (every pod's address, not one virtual IP).
	agent := m.daemonSets["otelcol-gym-agent"]
	if agent == nil {
		t.Fatal("no DaemonSet otelcol-gym-agent")
	}
	if !agent.Spec.Template.Spec.HostPID {
		t.Error("the agent needs hostPID for host process stats")
	}
	env := envOf(agent.Spec.Template.Spec.Containers[0])
	target := strings.TrimPrefix(env["OTELCOL_GYM_GATEWAY_ENDPOINT"], "dns:///")
	host, port, _ := strings.Cut(target, ":")
	svc := m.services[host]
	if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("OTELCOL_GYM_GATEWAY_ENDPOINT %q: %q is not a headless Service of the base", env["OTELCOL_GYM_GATEWAY_ENDPOINT"], host)
	} else if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return fmt.Sprint(p.Port) == port }) {
		t.Errorf("OTELCOL_GYM_GATEWAY_ENDPOINT: port %s is not a port of Service %s", port, host)
	}
	if !mountedAt(agent.Spec.Template.Spec, env["OTELCOL_GYM_STORAGE_DIR"], true) {
		t.Errorf("OTELCOL_GYM_STORAGE_DIR %s is not a hostPath mount: the queue would not survive the pod", env["OTELCOL_GYM_STORAGE_DIR"])
	}
	for _, k := range []string{"OTELCOL_GYM_EVENTS_SOCKET", "OTELCOL_GYM_EVENT_FILES"} {
		if !mountedAt(agent.Spec.Template.Spec, filepath.Dir(env[k]), true) {
			t.Errorf("%s %s: its directory is not a hostPath mount the node's Gym pods can share", k, env[k])
		}
	}
	checkRunFiles(t, m, agent)
}

// checkRunFiles: the agent reads Gym's run files: its rollouts source is on, on
// OTELCOL_GYM_RUN_FILES, whose directory is Gym's results, mounted read-only from the node; and
// each hostPath volume is named after what it holds.
func checkRunFiles(t *testing.T, m *manifests, agent *appsv1.DaemonSet) {
	t.Helper()
	spec := agent.Spec.Template.Spec
	c := spec.Containers[0]
	env := envOf(c)
	runFiles := env["OTELCOL_GYM_RUN_FILES"]
	if runFiles == "" {
		t.Fatal("the agent does not set OTELCOL_GYM_RUN_FILES: Gym's run files are not read")
	}
	// The directory above the first glob: the results directory.
	results := runFiles[:strings.IndexAny(runFiles+"*", "*?[")]
	results = filepath.Clean(results)
	if !strings.HasSuffix(runFiles[:len(results)+1], "/") {
		results = filepath.Dir(results)
	}

	// The last config that sets receivers.gym.rollouts.include wins (later --config merge over
	// earlier ones); it must read the run files the pod names.
	include := ""
	for _, f := range configArgs(c) {
		var cfg struct {
			Receivers struct {
				Gym struct {
					Rollouts *struct {
						Include []string `json:"include"`
					} `json:"rollouts"`
				} `json:"gym"`
			} `json:"receivers"`
		}
		if err := yaml.Unmarshal([]byte(mountedConfig(m, spec, f)), &cfg); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r := cfg.Receivers.Gym.Rollouts; r != nil && len(r.Include) > 0 {
			include = strings.Join(r.Include, ",")
		}
	}
	if !strings.Contains(include, "${env:OTELCOL_GYM_RUN_FILES") {
		t.Errorf("the agent's rollouts source reads %q, not OTELCOL_GYM_RUN_FILES", include)
	}

	// What each hostPath volume holds, by where it is mounted.
	want := map[string]string{
		filepath.Clean(env["OTELCOL_GYM_STORAGE_DIR"]): "state",
		filepath.Dir(env["OTELCOL_GYM_EVENTS_SOCKET"]): "socket",
		filepath.Dir(env["OTELCOL_GYM_EVENT_FILES"]):   "event-files",
		results: "gym-results",
	}
	readOnly := map[string]bool{"event-files": true, "gym-results": true}
	found := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != vm.Name || v.HostPath == nil {
				continue
			}
			name, ok := want[filepath.Clean(vm.MountPath)]
			if !ok {
				t.Errorf("hostPath volume %s at %s: no variable of the agent names that directory", v.Name, vm.MountPath)
				continue
			}
			found[name] = true
			if v.Name != name {
				t.Errorf("hostPath volume %s at %s holds %s: name it %s", v.Name, vm.MountPath, name, name)
			}
			if readOnly[name] != vm.ReadOnly {
				t.Errorf("volume %s at %s: readOnly %v, want %v (the agent only reads Gym's files)", v.Name, vm.MountPath, vm.ReadOnly, readOnly[name])
			}
		}
	}
	for dir, name := range want {
		if !found[name] {
			t.Errorf("no hostPath volume at %s (%s)", dir, name)
		}
	}
}

// kubectlKustomize: where kubectl is installed, `kubectl kustomize` renders the base offline
// to the same objects.
func TestKubectlKustomize(t *testing.T) {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed; TestKustomizeBase renders with the kustomize library")
	}
	out, err := exec.Command(bin, "kustomize", "kubernetes").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize kubernetes: %v", err)
	}
	a, b := decode(t, out), decode(t, render(t))
	for _, kind := range []struct {
		name string
		x, y []string
	}{
		{"ConfigMap", keys(a.configMaps), keys(b.configMaps)},
		{"Service", keys(a.services), keys(b.services)},
		{"Deployment", keys(a.deployments), keys(b.deployments)},
		{"DaemonSet", keys(a.daemonSets), keys(b.daemonSets)},
		{"StatefulSet", keys(a.statefulSets), keys(b.statefulSets)},
	} {
		if !slices.Equal(kind.x, kind.y) {
			t.Errorf("%s: kubectl renders %v, the library %v", kind.name, kind.x, kind.y)
		}
	}
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// strictInto decodes a document into a new T strictly (an unknown field fails) and files it
// in into under its name.
func strictInto[T any, P interface {
	*T
	GetName() string
}](into map[string]*T) func(doc []byte) error {
	return func(doc []byte) error {
		o := P(new(T))
		if err := yaml.UnmarshalStrict(doc, o); err != nil {
			return err
		}
		into[o.GetName()] = o
		return nil
	}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func podHasPort(spec corev1.PodSpec, port string) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port || fmt.Sprint(p.ContainerPort) == port {
				return true
			}
		}
	}
	return false
}

// mountedAt: some container mounts a volume at dir (a hostPath one when hostPath).
func mountedAt(spec corev1.PodSpec, dir string, hostPath bool) bool {
	for _, c := range spec.Containers {
		for _, vm := range c.VolumeMounts {
			if filepath.Clean(vm.MountPath) != filepath.Clean(dir) {
				continue
			}
			for _, v := range spec.Volumes {
				if v.Name == vm.Name && (!hostPath || v.HostPath != nil) {
					return true
				}
			}
		}
	}
	return false
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)`)

// checkPod checks a pod template against the rendered objects: its service account, its
// volumes and mounts, its ConfigMap keys, the --config file it is given (which must be the
// matching file of deploy/, and which `otelcol-gym validate` must accept with the pod's
// environment), its probes' ports, and that every OTELCOL_GYM_ variable it sets is read by
// that config.
func checkPod(t *testing.T, m *manifests, name string, spec corev1.PodSpec) {
	t.Helper()
	if m.accounts[spec.ServiceAccountName] == nil {
		t.Errorf("%s: service account %q is not in the base", name, spec.ServiceAccountName)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
		if cm := v.ConfigMap; cm != nil {
			obj := m.configMaps[cm.Name]
			if obj == nil {
				t.Errorf("%s: volume %s: ConfigMap %q is not in the base", name, v.Name, cm.Name)
				continue
			}
			for _, it := range cm.Items {
				if _, ok := obj.Data[it.Key]; !ok {
					t.Errorf("%s: volume %s: ConfigMap %s has no key %q", name, v.Name, cm.Name, it.Key)
				}
			}
		}
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
	}
	c := spec.Containers[0]
	if want := "ghcr.io/gym-telemetry/otelcol-gym:" + releaseVersion(t); c.Image != want {
		t.Errorf("%s: image %q, want the released %q (builder-config.yaml dist.version)", name, c.Image, want)
	}
	used := map[string]bool{}
	configFiles := configArgs(c)
	if len(configFiles) == 0 {
		t.Fatalf("%s: no --config", name)
	}
	configFile := configFiles[0] // deploy/agent.yaml or deploy/gateway.yaml; the rest merge over it
	texts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			t.Errorf("%s: mount %s: no such volume", name, vm.Name)
			continue
		}
		used[vm.Name] = true
		if v.ConfigMap == nil || m.configMaps[v.ConfigMap.Name] == nil { // the latter reported above
			continue
		}
		for _, it := range v.ConfigMap.Items {
			if path := filepath.Join(vm.MountPath, it.Path); slices.Contains(configFiles, path) {
				configText := m.configMaps[v.ConfigMap.Name].Data[it.Key]
				texts[path] = configText
				src := it.Key // deploy/agent.yaml, deploy/gateway.yaml
				if path != configFile {
					src = "kubernetes/config/" + it.Key // Kubernetes-only: no copy of a file of deploy/
				}
				// Byte for byte, but as YAML where Helm's chart writes a configuration out
				// again (alternateConfig, without its comments).
				f, rewritten := m.configSources[v.ConfigMap.Name+"/"+it.Key]
				if rewritten {
					src = f
				}
				if same, err := sameYAMLAsFile(src, configText, rewritten); err != nil {
					t.Errorf("%s: the ConfigMap key %s is no file of deploy/: %v", name, src, err)
				} else if !same {
					t.Errorf("%s: ConfigMap %s key %s differs from deploy/%s: copy it to kubernetes/config/ (or run go generate)", name, v.ConfigMap.Name, it.Key, src)
				}
			}
		}
	}
	for n := range volumes {
		if !used[n] {
			t.Errorf("%s: volume %s is mounted nowhere", name, n)
		}
	}
	var configs []string
	for _, f := range configFiles {
		if texts[f] == "" {
			t.Fatalf("%s: --config %q is no file of a mounted ConfigMap", name, f)
		}
		configs = append(configs, texts[f])
	}
	configText := strings.Join(configs, "\n")
	// A probe reaches the health check on the pod's IP: by a named container port, or by the
	// port number the health check listens on (OTELCOL_GYM_HEALTH_ENDPOINT), which the kubelet
	// probes whether or not a container port declares it.
	_, healthPort, _ := net.SplitHostPort(envOf(c)["OTELCOL_GYM_HEALTH_ENDPOINT"])
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("%s: readiness and liveness probes on the health check are required", name)
		case p.HTTPGet.Port.Type == intstr.Int && healthPort != "":
			if p.HTTPGet.Port.String() != healthPort {
				t.Errorf("%s: probe port %s, but the health check listens on %s (OTELCOL_GYM_HEALTH_ENDPOINT)", name, p.HTTPGet.Port.String(), healthPort)
			}
		case !podHasPort(spec, p.HTTPGet.Port.String()):
			t.Errorf("%s: probe port %s is not a container port", name, p.HTTPGet.Port.String())
		}
	}
	read := map[string]bool{}
	for _, mm := range envRef.FindAllStringSubmatch(configText, -1) {
		read[mm[1]] = true
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "OTELCOL_GYM_") && !read[e.Name] {
			t.Errorf("%s: sets %s, which %s never reads", name, e.Name, strings.Join(configFiles, " + "))
		}
	}
	validate(t, name, configs, podEnv(c))
}

// configArgs are the --config files of a container, in order.
func configArgs(c corev1.Container) []string {
	var out []string
	args := append(slices.Clone(c.Command), c.Args...)
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			out = append(out, args[i+1])
		} else if f, ok := strings.CutPrefix(a, "--config="); ok {
			out = append(out, f)
		}
	}
	return out
}

// podEnv is the container's environment as the kubelet would set it: downward-API fields
// with sample values, $(VAR) references expanded.
func podEnv(c corev1.Container) []string {
	vals := map[string]string{}
	var out []string
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil && f.FieldRef != nil {
			v = map[string]string{"status.podIP": "127.0.0.1", "spec.nodeName": "node-1", "status.hostIP": "127.0.0.1", "metadata.name": "pod-0"}[f.FieldRef.FieldPath]
		}
		v = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(v, func(ref string) string {
			return vals[ref[2:len(ref)-1]]
		})
		vals[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out
}

// collectorBin is the otelcol-gym binary (make build), or OTELCOL_GYM_BIN.
func collectorBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("OTELCOL_GYM_BIN")
	if bin == "" {
		bin = filepath.Join("..", "_build", "otelcol-gym")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (make test-deploy builds it first)", bin, err)
	}
	return bin
}

// validate runs `otelcol-gym validate` on configurations (merged in order, as several --config
// are) with the given environment.
func validate(t *testing.T, name string, configs []string, env []string) {
	t.Helper()
	args := []string{"validate"}
	for i, config := range configs {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("config-%d.yaml", i))
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	cmd := exec.Command(collectorBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: otelcol-gym validate: %v\n%s", name, err, out)
	}
}
