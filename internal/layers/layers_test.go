package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/etl-project/etl/"

// layers are the module's packages from the bottom up. A package may import
// packages of lower layers only; one of the same layer or above is a
// dependency pointing the wrong way. A new package must be placed here.
var layers = [][]string{
	// Foundations: no other package of the module.
	{"internal/names", "internal/loglimit", "internal/clock", "chunk", "backpressure", "dlq", "schemaregistry"},
	// The configuration, the decoder interface over chunks, and the
	// Protobuf schemas (local and from the registry) and their framing.
	{"config", "decode", "protoschema"},
	// Formats, the transform chain, the Native block encoder and the
	// filler of Kafka's own fields.
	{"decode/avro", "decode/json", "decode/protobuf", "transform", "sink/clickhouse/native", "meta"},
	// The ends and the bookkeeping: Kafka, ClickHouse, checkpoints, table
	// schemas, the record generator.
	{"source/kafka", "sink/clickhouse", "checkpoint", "schema", "gen"},
	// The records' known fields and the schemas they come from.
	{"fields"},
	// The runtime, and the offsets command's logic (checkpoint, not the
	// runtime).
	{"pipeline", "offsets"},
	// The operator commands, built from the runtime's parts.
	{"inspect"},
	// The binaries, and the mutation runner (make mutate).
	{"cmd/etl", "cmd/devbroker", "cmd/floorconsumer", "internal/mutate"},
}

// testOnly are packages for tests: no production package may import them
// (cmd/devbroker, the development broker, serves the registry double).
var testOnly = map[string]bool{
	"internal/testenv":            true,
	"schemaregistry/registrytest": true,
	"decode/internal/decodetest":  true,
	"test/e2e":                    true,
	"deploy":                      true,
	"internal/layers":             true,
}

// imports lists each package of the module with the module's packages its
// non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module)
		got[pkg] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				got[pkg] = append(got[pkg], strings.TrimPrefix(imp, module))
			}
		}
	}
	if len(got) == 0 {
		t.Fatalf("go list named no package of %s", module)
	}
	return got
}

func TestLayers(t *testing.T) {
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	for pkg, imps := range imports(t) {
		if testOnly[pkg] {
			continue
		}
		mine, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s has no layer: place it in the table in internal/layers/layers_test.go", pkg)
			continue
		}
		for _, imp := range imps {
			if testOnly[imp] {
				if pkg != "cmd/devbroker" {
					t.Errorf("%s imports the test package %s", pkg, imp)
				}
				continue
			}
			if theirs, ok := layer[imp]; ok && theirs >= mine {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only the layers below its own", pkg, mine, imp, theirs)
			}
		}
	}
}

// TestOffsetsWithoutRuntime: the offsets command reads checkpoints without
// building the runtime.
func TestOffsetsWithoutRuntime(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goBin, "list", "-deps", "./offsets")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./offsets: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == module+"pipeline" {
			t.Fatalf("offsets depends on %s", p)
		}
	}
}
