package deploy

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// endpoint is a pod as NetworkPolicies see it: its namespace, its labels and, as a
// destination, its container ports (a policy may name them).
type endpoint struct {
	name   string
	ns     string
	labels map[string]string
	ports  []corev1.ContainerPort
}

func podEndpoint(name, ns string, pod corev1.PodTemplateSpec) endpoint {
	return endpoint{name: name, ns: ns, labels: pod.Labels, ports: pod.Spec.Containers[0].Ports}
}

// selectorMatches: a label selector of a policy matches a label set.
func selectorMatches(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return s.Matches(labels.Set(set))
}

// peerMatches: a rule's peer (of a policy in namespace ns) is the endpoint e. Namespaces carry
// the label kubernetes.io/metadata.name, as the API server sets it. ipBlock peers name no pod.
func peerMatches(t *testing.T, p networkingv1.NetworkPolicyPeer, ns string, e endpoint) bool {
	if p.IPBlock != nil {
		return false
	}
	if p.NamespaceSelector == nil && e.ns != ns ||
		p.NamespaceSelector != nil && !selectorMatches(t, p.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": e.ns}) {
		return false
	}
	return p.PodSelector == nil || selectorMatches(t, p.PodSelector, e.labels)
}

// portMatches: a rule's ports admit port/proto of dst (a named port is dst's container port).
func portMatches(ports []networkingv1.NetworkPolicyPort, dst endpoint, port int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		switch {
		case pp != proto:
		case p.Port == nil:
			return true
		case p.Port.StrVal != "":
			if slices.ContainsFunc(dst.ports, func(c corev1.ContainerPort) bool {
				cp := c.Protocol
				if cp == "" {
					cp = corev1.ProtocolTCP
				}
				return c.Name == p.Port.StrVal && c.ContainerPort == port && cp == proto
			}) {
				return true
			}
		case p.EndPort != nil:
			if port >= p.Port.IntVal && port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == port:
			return true
		}
	}
	return false
}

func policyTypes(p *networkingv1.NetworkPolicy) []networkingv1.PolicyType {
	if len(p.Spec.PolicyTypes) > 0 {
		return p.Spec.PolicyTypes
	}
	types := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if len(p.Spec.Egress) > 0 {
		types = append(types, networkingv1.PolicyTypeEgress)
	}
	return types
}

// allowed evaluates NetworkPolicies as the network plugin does: a connection from src to dst's
// port passes when src's egress (if a policy of src's namespace isolates it) and dst's ingress
// (likewise) each have a rule that admits it.
func allowed(t *testing.T, policies map[string]*networkingv1.NetworkPolicy, src, dst endpoint, port int32, proto corev1.Protocol) bool {
	t.Helper()
	egressOK, ingressOK := true, true
	for _, p := range policies {
		types := policyTypes(p)
		if src.ns == p.Namespace && slices.Contains(types, networkingv1.PolicyTypeEgress) && selectorMatches(t, &p.Spec.PodSelector, src.labels) {
			egressOK = false // isolated: some policy's rule must admit it
		}
		if dst.ns == p.Namespace && slices.Contains(types, networkingv1.PolicyTypeIngress) && selectorMatches(t, &p.Spec.PodSelector, dst.labels) {
			ingressOK = false
		}
	}
	for _, p := range policies {
		types := policyTypes(p)
		if src.ns == p.Namespace && slices.Contains(types, networkingv1.PolicyTypeEgress) && selectorMatches(t, &p.Spec.PodSelector, src.labels) {
			for _, r := range p.Spec.Egress {
				if (len(r.To) == 0 || slices.ContainsFunc(r.To, func(pe networkingv1.NetworkPolicyPeer) bool { return peerMatches(t, pe, p.Namespace, dst) })) &&
					portMatches(r.Ports, dst, port, proto) {
					egressOK = true
				}
			}
		}
		if dst.ns == p.Namespace && slices.Contains(types, networkingv1.PolicyTypeIngress) && selectorMatches(t, &p.Spec.PodSelector, dst.labels) {
			for _, r := range p.Spec.Ingress {
				if (len(r.From) == 0 || slices.ContainsFunc(r.From, func(pe networkingv1.NetworkPolicyPeer) bool { return peerMatches(t, pe, p.Namespace, src) })) &&
					portMatches(r.Ports, dst, port, proto) {
					ingressOK = true
				}
			}
		}
	}
	return egressOK && ingressOK
}

// gymPod is the example Gym pod (kubernetes/examples/gym-job.yaml), in a namespace of its own.
func gymPod(t *testing.T) endpoint {
	t.Helper()
	return podEndpoint("the example Gym pod", "gym", exampleGymJob(t).Spec.Template)
}

// exampleGymJob is kubernetes/examples/gym-job.yaml.
func exampleGymJob(t *testing.T) batchv1.Job {
	t.Helper()
	var job batchv1.Job
	readYAML(t, "kubernetes/examples/gym-job.yaml", &job, yaml.UnmarshalStrict)
	return job
}

// portNamed is the number of a container port of e named one of names.
func portNamed(t *testing.T, e endpoint, names ...string) int32 {
	t.Helper()
	for _, p := range e.ports {
		if slices.Contains(names, p.Name) {
			return p.ContainerPort
		}
	}
	t.Fatalf("%s has no port named %v", e.name, names)
	return 0
}

// hostPort is the host:port of an endpoint URL or a dns:/// target.
func hostPort(t *testing.T, target string) (string, int32) {
	t.Helper()
	if u, err := url.Parse(target); err == nil && u.Scheme != "dns" && u.Host != "" {
		target = u.Host
	}
	host, port, err := net.SplitHostPort(strings.TrimPrefix(target, "dns:///"))
	n, err2 := strconv.Atoi(port)
	if err != nil || err2 != nil {
		t.Fatalf("%q: no host:port", target)
	}
	return host, int32(n)
}

// checkNetworkPolicies: the policies isolate the agent and the gateway both
// ways, and let through exactly what carries data: the example Gym pod to the agent's
// receivers (the ports with a hostPort), and not a pod without its label; the agents to the
// gateway's port of OTELCOL_GYM_GATEWAY_ENDPOINT, and no other pod; Prometheus (namespace
// monitoring, as kube-prometheus-stack labels it) to both telemetry ports and not to the
// receivers; DNS from both; the gateway to the backend of OTELCOL_GYM_REMOTE_WRITE_URL; and
// nothing else out of the agent.
func checkNetworkPolicies(t *testing.T, policies map[string]*networkingv1.NetworkPolicy, agent, gateway endpoint, agentEnv, gatewayEnv map[string]string) {
	t.Helper()
	for _, e := range []endpoint{agent, gateway} {
		types := map[networkingv1.PolicyType]bool{}
		for _, p := range policies {
			if selectorMatches(t, &p.Spec.PodSelector, e.labels) {
				for _, pt := range policyTypes(p) {
					types[pt] = true
				}
			}
		}
		if !types[networkingv1.PolicyTypeIngress] || !types[networkingv1.PolicyTypeEgress] {
			t.Errorf("%s: no NetworkPolicy isolates it for ingress and egress (%v)", e.name, types)
		}
	}
	gym := gymPod(t)
	stranger := endpoint{name: "a pod without the sender label", ns: gym.ns, labels: map[string]string{"app": "other"}}
	prometheus := endpoint{name: "Prometheus", ns: "monitoring", labels: map[string]string{"app.kubernetes.io/name": "prometheus"},
		ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 9090}}}
	dns := endpoint{name: "kube-dns", ns: "kube-system", labels: map[string]string{"k8s-app": "kube-dns"}}
	type flow struct {
		src, dst endpoint
		port     int32
		proto    corev1.Protocol
		want     bool
	}
	var flows []flow
	receivers := 0
	for _, p := range agent.ports {
		if p.HostPort != 0 {
			receivers++
			flows = append(flows, flow{gym, agent, p.ContainerPort, corev1.ProtocolTCP, true},
				flow{stranger, agent, p.ContainerPort, corev1.ProtocolTCP, false},
				flow{prometheus, agent, p.ContainerPort, corev1.ProtocolTCP, false})
		}
	}
	if receivers == 0 {
		t.Errorf("%s has no hostPort: no receiver for the node's Gym pods", agent.name)
	}
	_, gwPort := hostPort(t, agentEnv["OTELCOL_GYM_GATEWAY_ENDPOINT"])
	backendHost, backendPort := hostPort(t, gatewayEnv["OTELCOL_GYM_REMOTE_WRITE_URL"])
	backend := prometheus
	backend.name = "the backend " + backendHost
	if parts := strings.Split(backendHost, "."); len(parts) >= 2 {
		backend.ns = parts[1] // SERVICE.NAMESPACE[.svc...]
	}
	flows = append(flows,
		flow{agent, gateway, gwPort, corev1.ProtocolTCP, true},
		flow{stranger, gateway, gwPort, corev1.ProtocolTCP, false},
		flow{prometheus, agent, portNamed(t, agent, "telemetry", "metrics"), corev1.ProtocolTCP, true},
		flow{prometheus, gateway, portNamed(t, gateway, "telemetry", "metrics"), corev1.ProtocolTCP, true},
		flow{agent, dns, 53, corev1.ProtocolUDP, true}, flow{agent, dns, 53, corev1.ProtocolTCP, true},
		flow{gateway, dns, 53, corev1.ProtocolUDP, true}, flow{gateway, dns, 53, corev1.ProtocolTCP, true},
		flow{gateway, backend, backendPort, corev1.ProtocolTCP, true},
		flow{agent, backend, backendPort, corev1.ProtocolTCP, false},
	)
	for _, f := range flows {
		if got := allowed(t, policies, f.src, f.dst, f.port, f.proto); got != f.want {
			t.Errorf("NetworkPolicies: %s -> %s port %d/%s: allowed %v, want %v", f.src.name, f.dst.name, f.port, f.proto, got, f.want)
		}
	}
}

// TestKustomizeNetworkPolicies: the base's NetworkPolicies, and those of the
// kube-prometheus-stack overlay (whose gateways write to that chart's Prometheus), let the data
// through and nothing else (checkNetworkPolicies).
func TestKustomizeNetworkPolicies(t *testing.T) {
	for _, dir := range []string{"kubernetes", KubePrometheusStackDir} {
		t.Run(dir, func(t *testing.T) {
			m := decode(t, renderDir(t, dir))
			agent, gateway := m.daemonSets["otelcol-gym-agent"], m.deployments["otelcol-gym-gateway"]
			if agent == nil || gateway == nil {
				t.Fatal("no agent DaemonSet or gateway Deployment")
			}
			checkNetworkPolicies(t, m.policies,
				podEndpoint("the agent", agent.Namespace, agent.Spec.Template), podEndpoint("the gateway", gateway.Namespace, gateway.Spec.Template),
				envOf(agent.Spec.Template.Spec.Containers[0]), envOf(gateway.Spec.Template.Spec.Containers[0]))
		})
	}
}
