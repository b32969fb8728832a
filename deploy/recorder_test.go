package deploy

import (
	"maps"
	"net"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statefulPod is a StatefulSet's pod template as its controller makes the pods: each claim
// template becomes a volume of the same name (the pod's own claim).
func statefulPod(s *appsv1.StatefulSet) corev1.PodTemplateSpec {
	pod := *s.Spec.Template.DeepCopy()
	for _, c := range s.Spec.VolumeClaimTemplates {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + s.Name + "-0"}}})
	}
	return pod
}

// writableVolume is the volume the container mounts read-write at dir, or nil.
func writableVolume(spec corev1.PodSpec, dir string) *corev1.Volume {
	for _, vm := range spec.Containers[0].VolumeMounts {
		if dir == "" || filepath.Clean(vm.MountPath) != filepath.Clean(dir) || vm.ReadOnly {
			continue
		}
		for i, v := range spec.Volumes {
			if v.Name == vm.Name {
				return &spec.Volumes[i]
			}
		}
	}
	return nil
}

var wholeRef = regexp.MustCompile(`^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$`)

// fieldOf is the downward-API field a variable of c comes from, directly or through a $(VAR)
// of another variable ("" if none).
func fieldOf(c corev1.Container, name string) string {
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for range len(env) {
		e, ok := env[name]
		switch {
		case !ok:
			return ""
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			return e.ValueFrom.FieldRef.FieldPath
		}
		m := wholeRef.FindStringSubmatch(e.Value)
		if m == nil {
			return ""
		}
		name = m[1]
	}
	return ""
}

// containerPort resolves a Service's target port (a name or a number) on a container.
func containerPort(c corev1.Container, target string) int32 {
	for _, p := range c.Ports {
		if p.Name == target || strconv.Itoa(int(p.ContainerPort)) == target {
			return p.ContainerPort
		}
	}
	return 0
}

// only is the one object of a map, and whether there is exactly one.
func only[V any](m map[string]*V) (*V, bool) {
	for _, v := range m {
		return v, len(m) == 1
	}
	return nil, false
}

// checkRecorder: the flight recorder (the one StatefulSet of rec) is one pod, never scaled nor
// budgeted, on the gateway's configuration, image, args, security context and environment (but
// for OTLP/HTTP, which stays on loopback), named by its stable pod name, with its storage
// directory on a claim of its own that the non-root collector may write (fsGroup); the gateway
// (the one Deployment of gw) has a scratch volume there; and the agents' recorder endpoint is
// the StatefulSet's headless Service, selecting its pod and no gateway, on the port its OTLP
// gRPC receiver listens on.
func checkRecorder(t *testing.T, rec, gw *manifests, agent corev1.Container) {
	t.Helper()
	s, ok := only(rec.statefulSets)
	d, ok2 := only(gw.deployments)
	if !ok || !ok2 {
		t.Fatalf("want one recorder StatefulSet and one gateway Deployment, got %v and %v", keys(rec.statefulSets), keys(gw.deployments))
	}
	name, pod := "StatefulSet "+s.Name, statefulPod(s)
	c, gc := pod.Spec.Containers[0], d.Spec.Template.Spec.Containers[0]

	if s.Spec.Replicas == nil || *s.Spec.Replicas != 1 {
		t.Errorf("%s: replicas %d, want 1: the flight recorder counts right only where all of a run's spans meet", name, deref(s.Spec.Replicas, 1))
	}
	for _, h := range rec.autoscalers {
		if h.Spec.ScaleTargetRef.Name == s.Name {
			t.Errorf("HorizontalPodAutoscaler %s scales the recorder: it must stay one pod", h.Name)
		}
	}
	for _, p := range rec.pdbs {
		if selectorMatches(t, p.Spec.Selector, pod.Labels) {
			t.Errorf("PodDisruptionBudget %s selects the recorder: one pod's budget blocks every drain or allows nothing", p.Name)
		}
	}

	// The gateway's configuration and pod, but for OTLP/HTTP.
	if c.Image != gc.Image || !slices.Equal(c.Command, gc.Command) || !slices.Equal(c.Args, gc.Args) {
		t.Errorf("%s runs %s %v %v, the gateway %s %v %v: want the same", name, c.Image, c.Command, c.Args, gc.Image, gc.Command, gc.Args)
	}
	for _, f := range configArgs(c) {
		if text := mountedConfig(rec, pod.Spec, f); text == "" || text != mountedConfig(gw, d.Spec.Template.Spec, f) {
			t.Errorf("%s: --config %s is not the gateway's", name, f)
		}
	}
	envs := func(c corev1.Container) map[string]corev1.EnvVar {
		out := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			if e.Name != "OTELCOL_GYM_OTLP_HTTP_ENDPOINT" {
				out[e.Name] = e
			}
		}
		return out
	}
	re, ge := envs(c), envs(gc)
	for _, k := range slices.Sorted(maps.Keys(mergeMaps(re, ge))) {
		if !reflect.DeepEqual(re[k], ge[k]) {
			t.Errorf("%s: %s is %+v, the gateway's %+v: want the gateway's environment (an overlay sets both)", name, k, re[k], ge[k])
		}
	}
	if host, _, _ := net.SplitHostPort(envOf(c)["OTELCOL_GYM_OTLP_HTTP_ENDPOINT"]); host != "" && host != "127.0.0.1" {
		t.Errorf("%s: OTLP/HTTP on %s: the agents send gRPC; keep it on loopback", name, host)
	}
	if f := fieldOf(c, "OTELCOL_GYM_NODE_NAME"); f != "metadata.name" {
		t.Errorf("%s: OTELCOL_GYM_NODE_NAME comes from %q, want metadata.name: the stable pod name names its series", name, f)
	}
	if !reflect.DeepEqual(c.SecurityContext, gc.SecurityContext) || c.SecurityContext == nil || !deref(c.SecurityContext.ReadOnlyRootFilesystem, false) {
		t.Errorf("%s: the container's security context must be the gateway's, with a read-only root filesystem", name)
	}
	if r := c.Resources; r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %v: request CPU and memory, limit memory", name, r)
	}

	// Its state on its own claim, writable by the non-root collector.
	dir := envOf(c)["OTELCOL_GYM_STORAGE_DIR"]
	v := writableVolume(pod.Spec, dir)
	if v == nil || v.PersistentVolumeClaim == nil {
		t.Errorf("%s: OTELCOL_GYM_STORAGE_DIR %q is no read-write claim of the StatefulSet: the rollouts would not survive a restart", name, dir)
	} else {
		for _, ct := range s.Spec.VolumeClaimTemplates {
			if ct.Name == v.Name && (!slices.Contains(ct.Spec.AccessModes, corev1.ReadWriteOnce) || ct.Spec.Resources.Requests.Storage().IsZero()) {
				t.Errorf("%s: claim %s: access %v, size %v: want ReadWriteOnce and a size", name, ct.Name, ct.Spec.AccessModes, ct.Spec.Resources.Requests.Storage())
			}
		}
	}
	if sc := pod.Spec.SecurityContext; sc == nil || !deref(sc.RunAsNonRoot, false) || sc.FSGroup == nil {
		t.Errorf("%s: the pod must run as non-root, with an fsGroup so that the claim is writable", name)
	}
	// The gateway writes its file_storage too (gateway.yaml): a scratch volume.
	gdir := envOf(gc)["OTELCOL_GYM_STORAGE_DIR"]
	if gv := writableVolume(d.Spec.Template.Spec, gdir); gv == nil || gv.EmptyDir == nil {
		t.Errorf("Deployment %s: OTELCOL_GYM_STORAGE_DIR %q is no read-write emptyDir: gateway.yaml's file_storage cannot start", d.Name, gdir)
	}

	// The agents' endpoint: the StatefulSet's headless Service, its pod only.
	target := envOf(agent)["OTELCOL_GYM_RECORDER_ENDPOINT"]
	m := regexp.MustCompile(`^dns:///([a-z0-9-]+):(\d+)$`).FindStringSubmatch(target)
	if m == nil || target == envOf(agent)["OTELCOL_GYM_GATEWAY_ENDPOINT"] {
		t.Fatalf("the agents' OTELCOL_GYM_RECORDER_ENDPOINT %q is not dns:///SERVICE:PORT of its own", target)
	}
	svc := rec.services[m[1]]
	if svc == nil {
		t.Fatalf("the agents' recorder %s is no Service of %v", m[1], keys(rec.services))
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || s.Spec.ServiceName != svc.Name {
		t.Errorf("Service %s: clusterIP %q, the StatefulSet's serviceName %q: want the headless governing Service", svc.Name, svc.Spec.ClusterIP, s.Spec.ServiceName)
	}
	if len(svc.Spec.Selector) == 0 || !selectorMatches(t, selectorOf(svc), pod.Labels) || selectorMatches(t, selectorOf(svc), d.Spec.Template.Labels) {
		t.Errorf("Service %s selects %v: want the recorder's pod and no gateway", svc.Name, svc.Spec.Selector)
	}
	for _, g := range gw.services {
		if len(g.Spec.Selector) > 0 && selectorMatches(t, selectorOf(g), pod.Labels) && g.Name != svc.Name {
			t.Errorf("the gateway's Service %s selects the recorder's pod", g.Name)
		}
	}
	_, grpc, _ := net.SplitHostPort(envOf(c)["OTELCOL_GYM_OTLP_GRPC_ENDPOINT"])
	found := false
	for _, p := range svc.Spec.Ports {
		// Headless: the agents dial the pod's address on the port they name.
		if strconv.Itoa(int(p.Port)) == m[2] {
			found = strconv.Itoa(int(containerPort(c, p.TargetPort.String()))) == m[2] && grpc == m[2]
		}
	}
	if !found {
		t.Errorf("Service %s: port %s is not the recorder's OTLP gRPC port (%s)", svc.Name, m[2], grpc)
	}
}

// deref is *p, or def for nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func selectorOf(s *corev1.Service) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: s.Spec.Selector}
}

func mergeMaps[V any](a, b map[string]V) map[string]V {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// checkRecorderPolicies: the recorder is isolated both ways and lets in the agents on the port
// of OTELCOL_GYM_RECORDER_ENDPOINT (not on OTLP/HTTP, not a Gym pod nor a pod without a label)
// and Prometheus on its telemetry port; out, DNS and the backend of its
// OTELCOL_GYM_REMOTE_WRITE_URL, and nothing else.
func checkRecorderPolicies(t *testing.T, policies map[string]*networkingv1.NetworkPolicy, agent, recorder endpoint, agentEnv, recorderEnv map[string]string) {
	t.Helper()
	isolated := map[networkingv1.PolicyType]bool{}
	for _, p := range policies {
		if selectorMatches(t, &p.Spec.PodSelector, recorder.labels) {
			for _, pt := range policyTypes(p) {
				isolated[pt] = true
			}
		}
	}
	if !isolated[networkingv1.PolicyTypeIngress] || !isolated[networkingv1.PolicyTypeEgress] {
		t.Errorf("%s: no NetworkPolicy isolates it for ingress and egress (%v)", recorder.name, isolated)
	}
	gym := gymPod(t)
	stranger := endpoint{name: "a pod without a label", ns: agent.ns, labels: map[string]string{"app": "other"}}
	prometheus := endpoint{name: "Prometheus", ns: "monitoring", labels: map[string]string{"app.kubernetes.io/name": "prometheus"},
		ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 9090}}}
	dns := endpoint{name: "kube-dns", ns: "kube-system", labels: map[string]string{"k8s-app": "kube-dns"}}
	_, port := hostPort(t, agentEnv["OTELCOL_GYM_RECORDER_ENDPOINT"])
	backendHost, backendPort := hostPort(t, recorderEnv["OTELCOL_GYM_REMOTE_WRITE_URL"])
	backend := prometheus
	backend.name = "the backend " + backendHost
	if parts := strings.Split(backendHost, "."); len(parts) >= 2 {
		backend.ns = parts[1] // SERVICE.NAMESPACE[.svc...]
	}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	for _, f := range []struct {
		src, dst endpoint
		port     int32
		proto    corev1.Protocol
		want     bool
	}{
		{agent, recorder, port, tcp, true},
		{agent, recorder, 4318, tcp, false},
		{gym, recorder, port, tcp, false},
		{stranger, recorder, port, tcp, false},
		{prometheus, recorder, portNamed(t, recorder, "telemetry", "metrics"), tcp, true},
		{prometheus, recorder, port, tcp, false},
		{recorder, dns, 53, udp, true}, {recorder, dns, 53, tcp, true},
		{recorder, backend, backendPort, tcp, true},
		{recorder, agent, portNamed(t, agent, "otlp-grpc", "otlp"), tcp, false},
	} {
		if got := allowed(t, policies, f.src, f.dst, f.port, f.proto); got != f.want {
			t.Errorf("NetworkPolicies: %s -> %s port %d/%s: allowed %v, want %v", f.src.name, f.dst.name, f.port, f.proto, got, f.want)
		}
	}
}

// TestKustomizeRecorder: the base and the kube-prometheus-stack overlay run one flight
// recorder (checkRecorder), which the agents reach and which reaches the backend, through the
// NetworkPolicies (checkRecorderPolicies).
func TestKustomizeRecorder(t *testing.T) {
	for _, dir := range []string{"kubernetes", KubePrometheusStackDir} {
		t.Run(dir, func(t *testing.T) {
			m := decode(t, renderDir(t, dir))
			agent, rec := m.daemonSets["otelcol-gym-agent"], m.statefulSets["otelcol-gym-recorder"]
			if agent == nil || rec == nil {
				t.Fatal("no agent DaemonSet or recorder StatefulSet otelcol-gym-recorder")
			}
			if rec.Spec.Template.Spec.ServiceAccountName == m.deployments["otelcol-gym-gateway"].Spec.Template.Spec.ServiceAccountName {
				t.Error("the recorder shares the gateway's service account: give it its own")
			}
			ac := agent.Spec.Template.Spec.Containers[0]
			checkRecorder(t, m, m, ac)
			checkRecorderPolicies(t, m.policies, podEndpoint("the agent", agent.Namespace, agent.Spec.Template),
				podEndpoint("the recorder", rec.Namespace, statefulPod(rec)), envOf(ac), envOf(rec.Spec.Template.Spec.Containers[0]))
		})
	}
}

// TestHelmRecorder: the recorder release (values-recorder.yaml with values-gateway-config.yaml)
// renders one StatefulSet that passes checkPod (deploy/gateway.yaml as the chart's relay,
// validated with the pod's environment) and checkRecorder against the gateway release and the
// agents' values; the three releases' NetworkPolicies let the data through and nothing else.
func TestHelmRecorder(t *testing.T) {
	const ns = "otelcol-gym"
	agent := decode(t, helmTemplate(t, "otelcol-gym-agent", ns, agentValues...))
	gateway := decode(t, helmTemplate(t, "otelcol-gym-gateway", ns, gatewayValues...))
	rec := decode(t, helmTemplate(t, "otelcol-gym-recorder", ns, recorderValues...))
	ds, ok := only(agent.daemonSets)
	s, ok2 := only(rec.statefulSets)
	if !ok || !ok2 || len(rec.deployments)+len(rec.daemonSets) != 0 {
		t.Fatalf("want one agent DaemonSet and the recorder release's one StatefulSet, got %v and %v", keys(agent.daemonSets), keys(rec.statefulSets))
	}
	if s.Name != "otelcol-gym-recorder" {
		t.Errorf("StatefulSet %s: its pod otelcol-gym-recorder-0 names the series (fullnameOverride)", s.Name)
	}
	rec.configSources = map[string]string{}
	for n, cm := range rec.configMaps {
		if _, ok := cm.Data["relay"]; ok {
			rec.configSources[n+"/relay"] = "gateway.yaml"
		}
	}
	checkPod(t, rec, "Helm StatefulSet "+s.Name, statefulPod(s).Spec)
	ac := ds.Spec.Template.Spec.Containers[0]
	checkRecorder(t, rec, gateway, ac)

	policies := map[string]*networkingv1.NetworkPolicy{}
	for _, m := range []*manifests{agent, gateway, rec} {
		maps.Copy(policies, m.policies)
	}
	if len(policies) != 3 {
		t.Errorf("%d NetworkPolicies, want one per release", len(policies))
	}
	d, _ := only(gateway.deployments)
	agentEP := podEndpoint("the Helm agent", ns, ds.Spec.Template)
	checkNetworkPolicies(t, policies, agentEP, podEndpoint("the Helm gateway", ns, d.Spec.Template), envOf(ac), envOf(d.Spec.Template.Spec.Containers[0]))
	checkRecorderPolicies(t, policies, agentEP, podEndpoint("the Helm recorder", ns, statefulPod(s)), envOf(ac), envOf(s.Spec.Template.Spec.Containers[0]))
}
