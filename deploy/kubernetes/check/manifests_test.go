// Package check validates the manifests in deploy/kubernetes offline: each
// one is decoded strictly into its Kubernetes API type (an unknown or
// misspelt field, a wrong type or a bad quantity is an error), and the
// references between them are followed: kustomization resources, selectors,
// port names, ConfigMap and Secret keys, the image name.
//
// It is its own module so that the root module does not depend on
// k8s.io/api. Run it with: cd deploy/kubernetes/check && go test ./...
package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// dir holds the manifests, relative to this package.
const dir = ".."

// secretExample is the example Secret: checked, but not a kustomize resource.
const secretExample = "secret.example.yaml"

// kustomization is the part of kustomize's Kustomization type these
// manifests use; a field outside it is an error, so extend it when
// kustomization.yaml grows.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

// podMonitor is the part of monitoring.coreos.com/v1 PodMonitor these
// manifests use (the CRD's Go types would pull in the whole operator).
type podMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		JobLabel          string               `json:"jobLabel,omitempty"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		PodMetricsEndpoints []struct {
			Port          string `json:"port,omitempty"`
			Path          string `json:"path,omitempty"`
			Scheme        string `json:"scheme,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
			Relabelings   []struct {
				SourceLabels []string `json:"sourceLabels,omitempty"`
				Separator    string   `json:"separator,omitempty"`
				TargetLabel  string   `json:"targetLabel,omitempty"`
				Regex        string   `json:"regex,omitempty"`
				Replacement  *string  `json:"replacement,omitempty"`
				Action       string   `json:"action,omitempty"`
			} `json:"relabelings,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// manifests holds every decoded object.
type manifests struct {
	kust       kustomization
	deployment *appsv1.Deployment
	configMaps map[string]*corev1.ConfigMap
	services   []*corev1.Service
	pdbs       []*policyv1.PodDisruptionBudget
	podMons    []*podMonitor
	secret     *corev1.Secret
}

// decodeStrict decodes one YAML document into v, rejecting unknown and
// duplicate fields.
func decodeStrict(t *testing.T, file string, data []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// documents splits a YAML file on document separators.
func documents(data []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{configMaps: map[string]*corev1.ConfigMap{}}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decodeStrict(t, "kustomization.yaml", data, &m.kust)
	if m.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.kust.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: apiVersion/kind = %s/%s, want kustomize.config.k8s.io/v1beta1/Kustomization", m.kust.APIVersion, m.kust.Kind)
	}
	files := append(slices.Clone(m.kust.Resources), secretExample)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", f, err)
		}
		for i, doc := range documents(data) {
			name := fmt.Sprintf("%s (document %d)", f, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				if m.deployment != nil {
					t.Fatalf("%s: a second Deployment", name)
				}
				m.deployment = new(appsv1.Deployment)
				decodeStrict(t, name, doc, m.deployment)
			case "v1 ConfigMap":
				cm := new(corev1.ConfigMap)
				decodeStrict(t, name, doc, cm)
				m.configMaps[cm.Name] = cm
			case "v1 Service":
				s := new(corev1.Service)
				decodeStrict(t, name, doc, s)
				m.services = append(m.services, s)
			case "v1 Secret":
				if f != secretExample {
					t.Errorf("%s: a Secret among the kustomize resources; keep secrets out of the repository (%s is the example)", name, secretExample)
				}
				m.secret = new(corev1.Secret)
				decodeStrict(t, name, doc, m.secret)
			case "policy/v1 PodDisruptionBudget":
				p := new(policyv1.PodDisruptionBudget)
				decodeStrict(t, name, doc, p)
				m.pdbs = append(m.pdbs, p)
			case "monitoring.coreos.com/v1 PodMonitor":
				p := new(podMonitor)
				decodeStrict(t, name, doc, p)
				m.podMons = append(m.podMons, p)
			default:
				t.Fatalf("%s: no check for apiVersion %q kind %q; add one to this test", name, tm.APIVersion, tm.Kind)
			}
		}
	}
	if m.deployment == nil {
		t.Fatal("no Deployment among the kustomize resources")
	}
	if m.secret == nil {
		t.Fatalf("%s holds no Secret", secretExample)
	}
	return m
}

// TestEveryManifestIsAResource: every YAML file beside kustomization.yaml
// is one of its resources (or the example Secret), so none is forgotten.
func TestEveryManifestIsAResource(t *testing.T) {
	var k kustomization
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decodeStrict(t, "kustomization.yaml", data, &k)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		if n == "kustomization.yaml" || n == secretExample {
			continue
		}
		if !slices.Contains(k.Resources, n) {
			t.Errorf("%s is not listed in kustomization.yaml resources", n)
		}
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
			t.Errorf("kustomization.yaml resource %s: %v", r, err)
		}
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	load(t)
}

func podLabels(d *appsv1.Deployment) labels.Set {
	return labels.Set(d.Spec.Template.Labels)
}

func selectorMatches(t *testing.T, what string, sel *metav1.LabelSelector, pod labels.Set) {
	t.Helper()
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		t.Errorf("%s: empty selector (it would select every pod)", what)
		return
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if !s.Matches(pod) {
		t.Errorf("%s: selector %s does not match the Deployment's pod labels %v", what, s, pod)
	}
}

func etlContainer(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "etl" {
			return c
		}
	}
	t.Fatal("deployment.yaml: no container named etl")
	return nil
}

func containerPort(c *corev1.Container, name string) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

func TestDeployment(t *testing.T) {
	m := load(t)
	d := m.deployment
	selectorMatches(t, "deployment.yaml spec.selector", d.Spec.Selector, podLabels(d))
	c := etlContainer(t, d)

	if !slices.ContainsFunc(m.kust.Images, func(i struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	}) bool {
		return i.Name == c.Image
	}) {
		t.Errorf("deployment.yaml: image %q has no entry in kustomization.yaml images", c.Image)
	}

	// Probes: HTTP on a named container port.
	for name, p := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("deployment.yaml: %s is missing or not an httpGet probe", name)
			continue
		}
		port := p.HTTPGet.Port
		if port.Type == intstr.String {
			if _, ok := containerPort(c, port.StrVal); !ok {
				t.Errorf("deployment.yaml: %s uses port %q, which the container does not declare", name, port.StrVal)
			}
		}
	}

	// Resources: requests and limits for CPU and memory.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		if !okReq || !okLim {
			t.Errorf("deployment.yaml: resources need both a request and a limit for %s", r)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("deployment.yaml: %s request %s above its limit %s", r, req.String(), lim.String())
		}
	}

	// Security: non-root, read-only root filesystem, no privilege escalation.
	sc := c.SecurityContext
	psc := d.Spec.Template.Spec.SecurityContext
	switch {
	case sc == nil:
		t.Error("deployment.yaml: the etl container has no securityContext")
	default:
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Error("deployment.yaml: readOnlyRootFilesystem must be true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Error("deployment.yaml: allowPrivilegeEscalation must be false")
		}
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		if !nonRoot {
			t.Error("deployment.yaml: runAsNonRoot must be true")
		}
	}
	if psc != nil && psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		t.Error("deployment.yaml: runAsUser 0 is root")
	}

	// Every mount has a volume, and ConfigMap and Secret volumes point at
	// objects and keys that exist.
	vols := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		if _, ok := vols[vm.Name]; !ok {
			t.Errorf("deployment.yaml: volumeMount %s has no volume", vm.Name)
		}
	}
	for _, v := range vols {
		switch {
		case v.ConfigMap != nil:
			cm := m.configMaps[v.ConfigMap.Name]
			if cm == nil {
				t.Errorf("deployment.yaml: volume %s uses ConfigMap %s, which is not among the resources", v.Name, v.ConfigMap.Name)
				continue
			}
			for _, it := range v.ConfigMap.Items {
				if _, ok := cm.Data[it.Key]; !ok {
					t.Errorf("deployment.yaml: volume %s uses key %s, which ConfigMap %s lacks", v.Name, it.Key, cm.Name)
				}
			}
		case v.Secret != nil:
			if v.Secret.SecretName != m.secret.Name {
				t.Errorf("deployment.yaml: volume %s uses Secret %s; %s describes %s", v.Name, v.Secret.SecretName, secretExample, m.secret.Name)
			}
			for _, it := range v.Secret.Items {
				if !secretHasKey(m.secret, it.Key) {
					t.Errorf("deployment.yaml: volume %s uses Secret key %s, which %s lacks", v.Name, it.Key, secretExample)
				}
			}
		}
	}

	// Secret environment variables come from the Secret the example
	// describes, and its keys exist; no password is written in clear.
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			if ref.Name != m.secret.Name || !secretHasKey(m.secret, ref.Key) {
				t.Errorf("deployment.yaml: env %s refers to Secret %s key %s, which %s does not define", e.Name, ref.Name, ref.Key, secretExample)
			}
			continue
		}
		if strings.Contains(e.Name, "PASSWORD") {
			t.Errorf("deployment.yaml: env %s must come from a Secret (valueFrom.secretKeyRef)", e.Name)
		}
	}
}

func secretHasKey(s *corev1.Secret, key string) bool {
	if _, ok := s.StringData[key]; ok {
		return true
	}
	_, ok := s.Data[key]
	return ok
}

func TestService(t *testing.T) {
	m := load(t)
	if len(m.services) == 0 {
		t.Fatal("no Service among the resources")
	}
	c := etlContainer(t, m.deployment)
	for _, s := range m.services {
		what := "Service " + s.Name
		selectorMatches(t, what, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, podLabels(m.deployment))
		for _, p := range s.Spec.Ports {
			if p.TargetPort.Type == intstr.String {
				if _, ok := containerPort(c, p.TargetPort.StrVal); !ok {
					t.Errorf("%s: targetPort %q is not a port of the etl container", what, p.TargetPort.StrVal)
				}
			}
		}
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	m := load(t)
	for _, p := range m.pdbs {
		selectorMatches(t, "PodDisruptionBudget "+p.Name, p.Spec.Selector, podLabels(m.deployment))
	}
}

func TestPodMonitor(t *testing.T) {
	m := load(t)
	if len(m.podMons) != 1 {
		t.Fatalf("want one PodMonitor among the resources, got %d", len(m.podMons))
	}
	pm := m.podMons[0]
	pod := podLabels(m.deployment)
	selectorMatches(t, "PodMonitor "+pm.Metadata.Name, &pm.Spec.Selector, pod)
	if pm.Spec.JobLabel != "" && !pod.Has(pm.Spec.JobLabel) {
		t.Errorf("PodMonitor: jobLabel %q is not a label of the pods", pm.Spec.JobLabel)
	}
	if len(pm.Spec.PodMetricsEndpoints) == 0 {
		t.Fatal("PodMonitor: no podMetricsEndpoints")
	}
	c := etlContainer(t, m.deployment)
	for i, ep := range pm.Spec.PodMetricsEndpoints {
		what := fmt.Sprintf("PodMonitor podMetricsEndpoints[%d]", i)
		if _, ok := containerPort(c, ep.Port); !ok {
			t.Errorf("%s: port %q is not a named port of the etl container", what, ep.Port)
		}
		if ep.Path != "" && ep.Path != "/metrics" {
			t.Errorf("%s: path %q; etl serves /metrics", what, ep.Path)
		}
		if ep.Interval != "" && ep.ScrapeTimeout != "" {
			iv, err1 := time.ParseDuration(ep.Interval)
			to, err2 := time.ParseDuration(ep.ScrapeTimeout)
			if err1 != nil || err2 != nil {
				t.Errorf("%s: interval %q / scrapeTimeout %q: %v %v", what, ep.Interval, ep.ScrapeTimeout, err1, err2)
			} else if to > iv {
				t.Errorf("%s: scrapeTimeout %s above interval %s", what, to, iv)
			}
		}
		for j, r := range ep.Relabelings {
			switch r.Action {
			case "", "replace", "keep", "drop", "labelmap", "labeldrop", "labelkeep", "hashmod", "lowercase", "uppercase", "keepequal", "dropequal":
			default:
				t.Errorf("%s relabelings[%d]: unknown action %q", what, j, r.Action)
			}
		}
	}
}
