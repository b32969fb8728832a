package deploy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// The scheduler's bounds on a PriorityClass a user creates: above it, the system classes
// (system-cluster-critical, system-node-critical), which the node's own components hold.
const highestUserPriority = 1_000_000_000

// gpuTaints are the taints GPU node pools carry (NVIDIA's GPU operator and the clouds' GPU
// pools taint nvidia.com/gpu, with or without a value).
var gpuTaints = []corev1.Taint{
	{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule},
	{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule},
	{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
}

// checkAgentScheduling: the agent's pod lands on tainted GPU nodes, and has a priority class
// that is shipped (classes: the PriorityClasses it may name), above workloads without one and
// below the system classes, and not every pod's default.
func checkAgentScheduling(t *testing.T, name string, spec corev1.PodSpec, classes map[string]*schedulingv1.PriorityClass) {
	t.Helper()
	for _, taint := range gpuTaints {
		tolerated := false
		for _, tol := range spec.Tolerations {
			tolerated = tolerated || tol.ToleratesTaint(klog.Background(), &taint, false)
		}
		if !tolerated {
			t.Errorf("%s does not tolerate the GPU nodes' taint %s: no agent on GPU nodes", name, taint.ToString())
		}
	}
	pc := classes[spec.PriorityClassName]
	switch {
	case spec.PriorityClassName == "":
		t.Errorf("%s has no priorityClassName: on a full node it waits behind every workload", name)
	case pc == nil:
		t.Errorf("%s: priorityClassName %q is no PriorityClass shipped with it (%v)", name, spec.PriorityClassName, keys(classes))
	case pc.Value <= 0 || pc.Value > highestUserPriority:
		t.Errorf("PriorityClass %s: value %d, want above 0 (workloads without a class) and at most %d (below the system classes)", pc.Name, pc.Value, highestUserPriority)
	case pc.GlobalDefault:
		t.Errorf("PriorityClass %s must not be the cluster's default", pc.Name)
	}
}

// checkGatewayDisruption: exactly one PodDisruptionBudget selects the gateway's pods, and with
// the autoscaler's minimum of replicas it lets a drain evict one while at least one serves.
func checkGatewayDisruption(t *testing.T, pdbs map[string]*policyv1.PodDisruptionBudget, gateway *appsv1.Deployment, minReplicas int) {
	t.Helper()
	var found []*policyv1.PodDisruptionBudget
	for _, p := range pdbs {
		if p.Namespace == gateway.Namespace && selectorMatches(t, p.Spec.Selector, gateway.Spec.Template.Labels) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d PodDisruptionBudgets select the gateway's pods, want 1", len(found))
	}
	p := found[0]
	var disruptions int
	switch {
	case p.Spec.MaxUnavailable != nil && p.Spec.MinAvailable == nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(p.Spec.MaxUnavailable, minReplicas, true)
		if err != nil {
			t.Fatal(err)
		}
		disruptions = n
	case p.Spec.MinAvailable != nil && p.Spec.MaxUnavailable == nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(p.Spec.MinAvailable, minReplicas, true)
		if err != nil {
			t.Fatal(err)
		}
		disruptions = minReplicas - n
	default:
		t.Fatalf("PodDisruptionBudget %s: set one of minAvailable and maxUnavailable", p.Name)
	}
	if disruptions < 1 || disruptions > minReplicas-1 {
		t.Errorf("PodDisruptionBudget %s: with %d gateways it allows %d evictions, want between 1 (drains proceed) and %d (one keeps serving)",
			p.Name, minReplicas, disruptions, minReplicas-1)
	}
}

// TestKustomizeAgentScheduling: the base's agent tolerates the GPU nodes' taints and has the
// base's PriorityClass; the gateway has its PodDisruptionBudget.
func TestKustomizeAgentScheduling(t *testing.T) {
	m := decode(t, render(t))
	agent := m.daemonSets["otelcol-gym-agent"]
	gateway := m.deployments["otelcol-gym-gateway"]
	hpa := m.autoscalers["otelcol-gym-gateway"]
	if agent == nil || gateway == nil || hpa == nil || hpa.Spec.MinReplicas == nil {
		t.Fatal("no agent DaemonSet, gateway Deployment or its autoscaler with minReplicas")
	}
	checkAgentScheduling(t, "DaemonSet otelcol-gym-agent", agent.Spec.Template.Spec, m.priorities)
	checkGatewayDisruption(t, m.pdbs, gateway, int(*hpa.Spec.MinReplicas))
	for _, p := range m.pdbs {
		if selectorMatches(t, p.Spec.Selector, agent.Spec.Template.Labels) {
			t.Errorf("PodDisruptionBudget %s selects the agents: a DaemonSet's pods are not evicted by a drain", p.Name)
		}
	}
}

// priorityClassFile is the PriorityClass the Helm agent names (kubectl apply -f it first).
func priorityClassFile(t *testing.T) map[string]*schedulingv1.PriorityClass {
	t.Helper()
	var pc schedulingv1.PriorityClass
	readYAML(t, "kubernetes/priorityclass.yaml", &pc, yaml.UnmarshalStrict)
	return map[string]*schedulingv1.PriorityClass{pc.Name: &pc}
}
