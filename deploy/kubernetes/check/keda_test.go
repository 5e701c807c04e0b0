package check

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kedaDir holds the KEDA overlay, relative to this package.
const kedaDir = "../../keda"

// kedaAlternatives are the files of kedaDir that are not kustomize
// resources: alternatives a user swaps in.
var kedaAlternatives = []string{"scaledobject-prometheus.yaml"}

// partitionsAnnotation declares the topic's partition count on a
// ScaledObject, which maxReplicaCount must not exceed.
const partitionsAnnotation = "etl.dev/topic-partitions"

// scaledObject is the part of keda.sh/v1alpha1 ScaledObject these
// manifests use (KEDA's Go types would pull in the whole operator); a
// field outside it is an error, so extend it when the manifests grow.
type scaledObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount"`
		MaxReplicaCount *int32 `json:"maxReplicaCount"`
		PollingInterval *int32 `json:"pollingInterval"`
		CooldownPeriod  *int32 `json:"cooldownPeriod"`
		Advanced        struct {
			HorizontalPodAutoscalerConfig struct {
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type              string            `json:"type"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
			} `json:"authenticationRef,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

// triggerAuthentication is the part of keda.sh/v1alpha1
// TriggerAuthentication these manifests use.
type triggerAuthentication struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef"`
	} `json:"spec"`
}

// pipelineFile is what the KEDA checks read of the ConfigMap's
// pipeline.yaml.
type pipelineFile struct {
	Pipeline struct {
		Name string `json:"name"`
	} `json:"pipeline"`
	Source struct {
		Kafka struct {
			Topics  []string `json:"topics"`
			GroupID string   `json:"group_id"`
			SASL    *struct {
				Mechanism string `json:"mechanism"`
			} `json:"sasl"`
			TLS *struct {
				Enabled bool `json:"enabled"`
			} `json:"tls"`
		} `json:"kafka"`
	} `json:"source"`
}

// TestKEDA: the KEDA overlay builds on the base, scales the etl
// Deployment, never past the topic's partitions, slowly enough not to
// cause rebalance storms, and reads the lag of the group and topic the
// pipeline consumes, with the brokers, mechanism, TLS and Secret keys etl
// uses.
func TestKEDA(t *testing.T) {
	m := load(t)
	var k kustomization
	data, err := os.ReadFile(filepath.Join(kedaDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decodeStrict(t, "keda/kustomization.yaml", data, &k)
	if !slices.Contains(k.Resources, "../kubernetes") {
		t.Errorf("keda/kustomization.yaml does not build on the base (../kubernetes): %v", k.Resources)
	}
	entries, err := os.ReadDir(kedaDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".yaml") || n == "kustomization.yaml" {
			continue
		}
		files = append(files, n)
		if !slices.Contains(k.Resources, n) && !slices.Contains(kedaAlternatives, n) {
			t.Errorf("keda/%s is neither a resource of keda/kustomization.yaml nor a documented alternative", n)
		}
	}

	var pf pipelineFile
	cm := m.configMaps["etl-config"]
	if cm == nil {
		t.Fatal("no ConfigMap etl-config")
	}
	if err := yaml.Unmarshal([]byte(cm.Data["pipeline.yaml"]), &pf); err != nil {
		t.Fatalf("configmap.yaml pipeline.yaml: %v", err)
	}
	brokers := ""
	for _, e := range etlContainer(t, m.deployment).Env {
		if e.Name == "KAFKA_BROKERS" {
			brokers = e.Value
		}
	}

	auths := map[string]*triggerAuthentication{}
	var objects []*scaledObject
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(kedaDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range documents(data) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("keda/%s: %v", f, err)
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "keda.sh/v1alpha1 ScaledObject":
				so := new(scaledObject)
				decodeStrict(t, "keda/"+f, doc, so)
				objects = append(objects, so)
			case "keda.sh/v1alpha1 TriggerAuthentication":
				ta := new(triggerAuthentication)
				decodeStrict(t, "keda/"+f, doc, ta)
				auths[ta.Metadata.Name] = ta
			default:
				t.Fatalf("keda/%s: no check for apiVersion %q kind %q; add one to this test", f, tm.APIVersion, tm.Kind)
			}
		}
	}
	if len(objects) != 1+len(kedaAlternatives) {
		t.Fatalf("%d ScaledObjects in keda/, want %d", len(objects), 1+len(kedaAlternatives))
	}
	kafkaTriggers, promTriggers := 0, 0
	for _, so := range objects {
		what := "ScaledObject " + so.Metadata.Name
		ref := so.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name != m.deployment.Name {
			t.Errorf("%s: scaleTargetRef %+v, want the Deployment %s", what, ref, m.deployment.Name)
		}
		parts, err := strconv.Atoi(so.Metadata.Annotations[partitionsAnnotation])
		if err != nil || parts < 1 {
			t.Errorf("%s: annotation %s = %q, want the topic's partition count", what, partitionsAnnotation, so.Metadata.Annotations[partitionsAnnotation])
		}
		if so.Spec.MaxReplicaCount == nil || int(*so.Spec.MaxReplicaCount) > parts {
			t.Errorf("%s: maxReplicaCount %s above the topic's %d partitions (a replica past them gets no partition)", what, show(so.Spec.MaxReplicaCount), parts)
		}
		if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount < 1 || so.Spec.MaxReplicaCount != nil && *so.Spec.MinReplicaCount > *so.Spec.MaxReplicaCount {
			t.Errorf("%s: minReplicaCount %s: want 1 to maxReplicaCount (0 would stop consuming, and the lag only shows once it grows)", what, show(so.Spec.MinReplicaCount))
		}
		if so.Spec.CooldownPeriod == nil || *so.Spec.CooldownPeriod < 300 {
			t.Errorf("%s: cooldownPeriod %s, want at least 300 s", what, show(so.Spec.CooldownPeriod))
		}
		b := so.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior
		if b == nil || b.ScaleUp == nil || b.ScaleDown == nil {
			t.Fatalf("%s: no HPA behavior for scaling up and down: every change is a rebalance of the group", what)
		}
		if w := b.ScaleDown.StabilizationWindowSeconds; w == nil || *w < 300 {
			t.Errorf("%s: scaleDown stabilizationWindowSeconds %s, want at least 300", what, show(w))
		}
		for dir, rules := range map[string]*autoscalingv2.HPAScalingRules{"scaleUp": b.ScaleUp, "scaleDown": b.ScaleDown} {
			if len(rules.Policies) == 0 {
				t.Errorf("%s: %s has no policies: the HPA may change many replicas at once", what, dir)
			}
			for _, p := range rules.Policies {
				if p.Type != autoscalingv2.PodsScalingPolicy || p.Value > 2 || p.PeriodSeconds < 60 {
					t.Errorf("%s: %s policy %+v: want at most 2 pods per 60 s or more", what, dir, p)
				}
			}
		}
		if len(so.Spec.Triggers) != 1 {
			t.Fatalf("%s: %d triggers, want 1", what, len(so.Spec.Triggers))
		}
		tr := so.Spec.Triggers[0]
		md := tr.Metadata
		switch tr.Type {
		case "kafka":
			kafkaTriggers++
			if md["consumerGroup"] != pf.Source.Kafka.GroupID {
				t.Errorf("%s: consumerGroup %q, the pipeline's group_id is %q", what, md["consumerGroup"], pf.Source.Kafka.GroupID)
			}
			if !slices.Contains(pf.Source.Kafka.Topics, md["topic"]) {
				t.Errorf("%s: topic %q is not one of the pipeline's %v", what, md["topic"], pf.Source.Kafka.Topics)
			}
			if md["bootstrapServers"] != brokers {
				t.Errorf("%s: bootstrapServers %q, the Deployment's KAFKA_BROKERS is %q", what, md["bootstrapServers"], brokers)
			}
			if md["allowIdleConsumers"] != "false" {
				t.Errorf("%s: allowIdleConsumers %q, want \"false\" (no more replicas than partitions)", what, md["allowIdleConsumers"])
			}
			if n, err := strconv.Atoi(md["lagThreshold"]); err != nil || n < 1 {
				t.Errorf("%s: lagThreshold %q", what, md["lagThreshold"])
			}
			if s := pf.Source.Kafka.SASL; s != nil {
				mech := strings.TrimSuffix(strings.TrimPrefix(s.Mechanism, "${KAFKA_SASL_MECHANISM:-"), "}")
				want := map[string]string{"PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256", "SCRAM-SHA-512": "scram_sha512"}[mech]
				if md["sasl"] != want {
					t.Errorf("%s: sasl %q, the pipeline's mechanism is %s (%q)", what, md["sasl"], s.Mechanism, want)
				}
			}
			if tl := pf.Source.Kafka.TLS; tl != nil && tl.Enabled && md["tls"] != "enable" {
				t.Errorf("%s: tls %q, but the pipeline uses TLS", what, md["tls"])
			}
			if tr.AuthenticationRef == nil || auths[tr.AuthenticationRef.Name] == nil {
				t.Fatalf("%s: authenticationRef names no TriggerAuthentication in keda/", what)
			}
			params := map[string]bool{}
			for _, ref := range auths[tr.AuthenticationRef.Name].Spec.SecretTargetRef {
				params[ref.Parameter] = true
				if ref.Name != m.secret.Name {
					t.Errorf("TriggerAuthentication: parameter %s from Secret %q, the Deployment's is %q", ref.Parameter, ref.Name, m.secret.Name)
				}
				if _, ok := m.secret.StringData[ref.Key]; !ok {
					t.Errorf("TriggerAuthentication: parameter %s reads key %q, which %s does not have", ref.Parameter, ref.Key, secretExample)
				}
			}
			for _, p := range []string{"username", "password", "ca"} {
				if !params[p] {
					t.Errorf("TriggerAuthentication: no %s", p)
				}
			}
		case "prometheus":
			promTriggers++
			q := md["query"]
			if !strings.Contains(q, "etl_source_lag_records") || !strings.Contains(q, `pipeline="`+pf.Pipeline.Name+`"`) {
				t.Errorf("%s: query %q: want etl_source_lag_records of pipeline %q", what, q, pf.Pipeline.Name)
			}
			if n, err := strconv.Atoi(md["threshold"]); err != nil || n < 1 {
				t.Errorf("%s: threshold %q", what, md["threshold"])
			}
		default:
			t.Errorf("%s: trigger type %q", what, tr.Type)
		}
	}
	if kafkaTriggers != 1 || promTriggers != 1 {
		t.Errorf("%d Kafka and %d Prometheus ScaledObjects, want one of each", kafkaTriggers, promTriggers)
	}
}

// show is *p, or "unset".
func show(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}
