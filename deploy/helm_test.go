package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// chartValues are the keys of the upstream opentelemetry-collector chart that the values
// files set; the Kubernetes parts decode strictly into the API types.
type chartValues struct {
	Mode  string `json:"mode"`
	Image struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
	} `json:"image"`
	Command struct {
		Name      string   `json:"name"`
		ExtraArgs []string `json:"extraArgs"`
	} `json:"command"`
	ConfigMap struct {
		Create       bool   `json:"create"`
		ExistingName string `json:"existingName"`
	} `json:"configMap"`
	HostPID           bool                `json:"hostPID"`
	PodAnnotations    map[string]string   `json:"podAnnotations"`
	PriorityClassName string              `json:"priorityClassName"`
	Tolerations       []corev1.Toleration `json:"tolerations"`
	NetworkPolicy     struct {
		Enabled           bool                                    `json:"enabled"`
		AllowIngressFrom  []networkingv1.NetworkPolicyPeer        `json:"allowIngressFrom"`
		ExtraIngressRules []networkingv1.NetworkPolicyIngressRule `json:"extraIngressRules"`
		EgressRules       []networkingv1.NetworkPolicyEgressRule  `json:"egressRules"`
	} `json:"networkPolicy"`
	PodDisruptionBudget *struct {
		Enabled        bool                `json:"enabled"`
		MinAvailable   *intstr.IntOrString `json:"minAvailable"`
		MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
	} `json:"podDisruptionBudget"`
	ExtraEnvs          []corev1.EnvVar             `json:"extraEnvs"`
	ExtraVolumes       []corev1.Volume             `json:"extraVolumes"`
	ExtraVolumeMounts  []corev1.VolumeMount        `json:"extraVolumeMounts"`
	SecurityContext    *corev1.SecurityContext     `json:"securityContext"`
	PodSecurityContext *corev1.PodSecurityContext  `json:"podSecurityContext"`
	Resources          corev1.ResourceRequirements `json:"resources"`
	Ports              map[string]struct {
		Enabled       bool   `json:"enabled"`
		ContainerPort int32  `json:"containerPort"`
		ServicePort   int32  `json:"servicePort"`
		HostPort      int32  `json:"hostPort"`
		Protocol      string `json:"protocol"`
	} `json:"ports"`
	LivenessProbe  chartProbe `json:"livenessProbe"`
	ReadinessProbe chartProbe `json:"readinessProbe"`
	// Set by one file only.
	FullnameOverride string `json:"fullnameOverride"`
	ReplicaCount     int    `json:"replicaCount"`
	UseGOMEMLIMIT    bool   `json:"useGOMEMLIMIT"`
	Autoscaling      struct {
		Enabled                        bool `json:"enabled"`
		MinReplicas                    int  `json:"minReplicas"`
		MaxReplicas                    int  `json:"maxReplicas"`
		TargetCPUUtilizationPercentage int  `json:"targetCPUUtilizationPercentage"`
	} `json:"autoscaling"`
	Service struct {
		ClusterIP string `json:"clusterIP"`
	} `json:"service"`
	Statefulset struct {
		VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates"`
	} `json:"statefulset"`
}

type chartProbe struct {
	HTTPGet struct {
		Port int    `json:"port"`
		Path string `json:"path"`
	} `json:"httpGet"`
}

// TestHelmValues: values-agent.yaml, values-gateway.yaml and values-recorder.yaml decode
// strictly; they run this distribution's binary on the ConfigMap holding the matching file of
// deploy/ (the chart mounts its key relay), every mount has its volume (or claim template),
// every OTELCOL_GYM_ variable they set is read by that file, `otelcol-gym validate` accepts it
// with their environment, and the gateway's Service name is the one the agents resolve.
func TestHelmValues(t *testing.T) {
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		values, config, mode string
	}{
		{"kubernetes/values-agent.yaml", "agent.yaml", "daemonset"},
		{"kubernetes/values-gateway.yaml", "gateway.yaml", "deployment"},
		{"kubernetes/values-recorder.yaml", "gateway.yaml", "statefulset"},
	} {
		t.Run(c.values, func(t *testing.T) {
			var v chartValues
			readYAML(t, c.values, &v, yaml.UnmarshalStrict)
			if v.Mode != c.mode {
				t.Errorf("mode %q, want %q", v.Mode, c.mode)
			}
			if !strings.Contains(string(dockerfile), `ENTRYPOINT ["/`+v.Command.Name+`"]`) {
				t.Errorf("command.name %q is not the image's entry point (Dockerfile)", v.Command.Name)
			}
			// The chart makes the ConfigMap of alternateConfig (values-*-config.yaml) and puts
			// its checksum in the pod template: a ConfigMap of one's own would not roll the pods.
			if v.ConfigMap.ExistingName != "" {
				t.Errorf("configMap.existingName %q: the configuration belongs in the values (alternateConfig), so that a change rolls the pods", v.ConfigMap.ExistingName)
			}
			vols := map[string]bool{}
			for _, vol := range v.ExtraVolumes {
				vols[vol.Name] = true
			}
			for _, c := range v.Statefulset.VolumeClaimTemplates {
				vols[c.Name] = true
			}
			for _, m := range v.ExtraVolumeMounts {
				if !vols[m.Name] {
					t.Errorf("extraVolumeMounts %s: no such extraVolume or claim template", m.Name)
				}
			}
			config, err := os.ReadFile(c.config)
			if err != nil {
				t.Fatal(err)
			}
			read := map[string]bool{}
			for _, mm := range envRef.FindAllStringSubmatch(string(config), -1) {
				read[mm[1]] = true
			}
			defer func() { // once read holds the extra configs' variables too
				for _, e := range v.ExtraEnvs {
					if strings.HasPrefix(e.Name, "OTELCOL_GYM_") && !read[e.Name] {
						t.Errorf("extraEnvs sets %s, which %s never reads", e.Name, c.config)
					}
				}
			}()
			// The chart sets MY_POD_IP and OTEL_K8S_POD_NAME (among others) first, then extraEnvs.
			field := func(name, path string) corev1.EnvVar {
				return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
			}
			env := podEnv(corev1.Container{Env: append([]corev1.EnvVar{field("MY_POD_IP", "status.podIP"),
				field("OTEL_K8S_POD_NAME", "metadata.name")}, v.ExtraEnvs...)})
			configs := []string{string(config)}
			for _, f := range configArgs(corev1.Container{Args: v.Command.ExtraArgs}) {
				// Merged over the chart's relay: a file of kubernetes/config/, mounted from a
				// ConfigMap of its own.
				extra, err := os.ReadFile(filepath.Join("kubernetes/config", filepath.Base(f)))
				if err != nil {
					t.Fatalf("command.extraArgs --config %s: %v", f, err)
				}
				configs = append(configs, string(extra))
				for _, mm := range envRef.FindAllStringSubmatch(string(extra), -1) {
					read[mm[1]] = true
				}
			}
			validate(t, c.values, configs, env)
			if v.LivenessProbe.HTTPGet.Port == 0 || v.ReadinessProbe.HTTPGet.Port == 0 {
				t.Error("probes on the health check port are required")
			}
			if c.mode == "daemonset" {
				if !v.HostPID {
					t.Error("the agent needs hostPID for host process stats")
				}
				gw := envOf(corev1.Container{Env: v.ExtraEnvs})["OTELCOL_GYM_GATEWAY_ENDPOINT"]
				var g chartValues
				readYAML(t, "kubernetes/values-gateway.yaml", &g, yaml.UnmarshalStrict)
				if gw != "dns:///"+g.FullnameOverride+":4317" || g.Service.ClusterIP != "None" {
					t.Errorf("agents resolve %q; the gateway chart's Service is %s (clusterIP %q), which must be headless", gw, g.FullnameOverride, g.Service.ClusterIP)
				}
			}
		})
	}
}
