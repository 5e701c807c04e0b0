package check

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// deployDir is the repository's deploy/ folder, relative to this package.
const deployDir = "../.."

// TestKustomizeBuild builds every kustomization under deploy/ with
// kustomize's own build (the code behind `kustomize build` and
// `kubectl kustomize`), so that `kubectl apply -k DIR` works for each: a
// cycle between an overlay and its base, a missing resource or a patch that
// matches nothing fails here. It also checks what each build emits: the
// base's objects, plus the overlay's own.
func TestKustomizeBuild(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(deployDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rel := func(d string) string {
		r, _ := filepath.Rel(deployDir, d)
		return "deploy/" + filepath.ToSlash(r)
	}
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = rel(d)
	}
	slices.Sort(names)
	// The directories the docs tell users to apply: a new one is added
	// here on purpose, with its expected objects.
	want := map[string][]string{
		"deploy/kubernetes": {"ConfigMap/etl-config", "Deployment/etl", "PodDisruptionBudget/etl", "PodMonitor/etl", "Service/etl-metrics"},
		"deploy/keda":       {"ConfigMap/etl-config", "Deployment/etl", "PodDisruptionBudget/etl", "PodMonitor/etl", "ScaledObject/etl", "Service/etl-metrics", "TriggerAuthentication/etl-kafka"},
	}
	var wantNames []string
	for k := range want {
		wantNames = append(wantNames, k)
	}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("kustomizations under deploy/: %v, want %v (add a new one to this test with its objects)", names, wantNames)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, d := range dirs {
		name := rel(d)
		t.Run(name, func(t *testing.T) {
			abs, err := filepath.Abs(d)
			if err != nil {
				t.Fatal(err)
			}
			m, err := k.Run(filesys.MakeFsOnDisk(), abs)
			if err != nil {
				t.Fatalf("kubectl apply -k %s would fail: %v", name, err)
			}
			var got []string
			for _, r := range m.Resources() {
				got = append(got, r.GetKind()+"/"+r.GetName())
				if ns := r.GetNamespace(); ns != "etl" {
					t.Errorf("%s %s/%s: namespace %q, want etl", name, r.GetKind(), r.GetName(), ns)
				}
			}
			slices.Sort(got)
			if w, ok := want[name]; ok && !slices.Equal(got, w) {
				t.Errorf("%s builds %v, want %v", name, got, w)
			}
			out, err := m.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), "image: registry.example.com/etl:0.0.0") {
				t.Errorf("%s: the built Deployment does not use the kustomization's image", name)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(deployDir, "kubernetes", "keda")); err == nil {
		t.Error("deploy/kubernetes/keda exists: an overlay inside its base's folder is a kustomize cycle")
	}
}
