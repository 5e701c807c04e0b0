package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVersion: etl version prints one line each for etl, Go, franz-go,
// ch-go and clickhouse-go, with the versions the binary was built with.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("version: code %d, stderr %q", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 6 || lines[5] != "" {
		t.Fatalf("version printed %q, want 5 lines each ending in a newline", out.String())
	}
	want := []string{"etl " + version, "go " + strings.TrimPrefix(runtime.Version(), "go"), "franz-go v1.", "ch-go v0.", "clickhouse-go v2."}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], w)
		}
	}
}

// TestHelp: etl -help and etl help list every command with a line each
// and exit 0; each command's -help gives its synopsis and flags; an
// unknown command is named as unknown, with the list, and exits 2.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-help"}, {"-h"}, {"--help"}, {"help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("%v: code %d, stderr %q", args, code, errb.String())
		}
		for _, c := range commands {
			if !strings.Contains(out.String(), "\n  "+c.name+" ") || !strings.Contains(out.String(), c.summary) {
				t.Errorf("%v does not list %s:\n%s", args, c.name, out.String())
			}
		}
	}
	flags := map[string]string{"run": "-config", "validate": "-connect", "gen": "-brokers", "tail": "-raw", "offsets": "-format", "offsets reset": "-execute", "version": "", "help": ""}
	for _, c := range commands {
		words := strings.Fields(c.name)
		for _, args := range [][]string{append(words, "-help"), append([]string{"help"}, words...)} {
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 {
				t.Fatalf("%v: code %d, stderr %q", args, code, errb.String())
			}
			if !strings.HasPrefix(out.String(), "Usage: "+c.usage+"\n") || !strings.Contains(out.String(), flags[c.name]) {
				t.Errorf("%v printed:\n%s", args, out.String())
			}
		}
	}
	for _, args := range [][]string{{"foo"}, {"help", "foo"}, {"validat", "-config", "x.yaml"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		name := args[0]
		if name == "help" {
			name = args[1]
		}
		if code != exitUsage || !strings.Contains(errb.String(), `unknown command "`+name+`"`) ||
			!strings.Contains(errb.String(), "validate") || out.Len() != 0 {
			t.Errorf("%v: code %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-config", "x.yaml", "extra"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), `unexpected argument "extra"`) {
		t.Errorf("a stray argument: code %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run(nil, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "-config is required") || !strings.Contains(errb.String(), "Commands:") {
		t.Errorf("no arguments: code %d, stderr %q", code, errb.String())
	}
}

// TestValidateBrokenFiles: `etl validate` exits 2 and prints every problem
// with file, line, column and key path.
func TestValidateBrokenFiles(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown-key.yaml", `pipeline: {name: x}
source: {kafka: {brokers: [a:1], topics: [t], group_id: g}}
sink:
  clickhouse:
    addr: [b:2]
    table: t
    batch: {lingr: 1s}
`, []string{`unknown-key.yaml:7:13: sink.clickhouse.batch.lingr: unknown key "lingr" (did you mean "linger"?)`}},
		{"two-errors.yaml", `pipeline: {name: x}
source: {kafka: {brokers: [a:1], topics: [t], group_id: g, start_offset: middle}}
sink:
  clickhouse:
    addr: [b:2]
    batch: {max_rows: -5}
`, []string{
			`two-errors.yaml:2:74: source.kafka.start_offset:`,
			`two-errors.yaml:4:3: sink.clickhouse.table: required key is missing`,
			`two-errors.yaml:6:23: sink.clickhouse.batch.max_rows:`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.name, c.yaml)
			var out, errb bytes.Buffer
			code := run([]string{"validate", "-config", path}, &out, &errb)
			if code != exitUsage {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitUsage, errb.String())
			}
			for _, w := range c.want {
				if !strings.Contains(errb.String(), strings.Replace(w, c.name, path, 1)) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

// TestValidateConnect: `etl validate -connect` reaches a real broker and
// ClickHouse, reports the column mapping, and fails with a clear message
// for a missing topic and for a missing table.
func TestValidateConnect(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 2)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	cfg := func(topic, table string) string {
		return writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
source: {kafka: {brokers: [%q], topics: [%s], group_id: g}}
sink: {clickhouse: {addr: [%q], table: %s}}
metrics: {listen: "off"}
`, kb.Addr(), topic, ch.TCPAddr(), table))
	}
	var out, errb bytes.Buffer
	if code := run([]string{"validate", "-connect", "-config", cfg("events", "events")}, &out, &errb); code != 0 {
		t.Fatalf("exit code %d; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, w := range []string{"topic events has 2 partitions", "table default.events has 6 insertable columns", "column note Nullable(String) <- field note"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}

	out.Reset()
	errb.Reset()
	if code := run([]string{"validate", "-connect", "-config", cfg("evnets", "missing")}, &out, &errb); code != exitFailed {
		t.Fatalf("exit code %d for a missing topic and table", code)
	}
	for _, w := range []string{`topic "evnets" does not exist (did you mean "events"?)`, "table default.missing does not exist"} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errb.String())
		}
	}
}

// TestValidatePrintMasksSecrets: the effective configuration is printed
// with defaults filled in and the password masked.
func TestValidatePrintMasksSecrets(t *testing.T) {
	path := writeFile(t, "p.yaml", `pipeline: {name: x}
source: {kafka: {brokers: [a:1], topics: [t], group_id: g, sasl: {mechanism: PLAIN, username: u, password: "${KPASS}"}}}
sink: {clickhouse: {addr: [b:2], table: t, password: hunter2}}
`)
	t.Setenv("KPASS", "kafka-secret")
	var out, errb bytes.Buffer
	if code := run([]string{"validate", "-print", "-config", path}, &out, &errb); code != 0 {
		t.Fatalf("exit code %d: %s", code, errb.String())
	}
	for _, secret := range []string{"hunter2", "kafka-secret"} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("printed configuration shows a secret:\n%s", out.String())
		}
	}
	for _, w := range []string{"max_rows: 1000000", "drain_timeout: 25s", "******"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("printed configuration lacks %q:\n%s", w, out.String())
		}
	}
}

// TestValidateConnectSinks: `validate -connect` checks a `sinks:`
// configuration (every sink's table), the dead-letter topic and the chain
// compiled against the tables: a misspelled field is refused with a
// did-you-mean, a missing dead-letter topic is named, and the fixed file
// passes with every sink reported.
func TestValidateConnectSinks(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 2)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.clicks (id UInt64, kind String) ENGINE = MergeTree ORDER BY id")
	ch.Exec(t, "CREATE TABLE default.others (id UInt64, kind String) ENGINE = MergeTree ORDER BY id")
	cfg := func(field string) string {
		return writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
source: {kafka: {brokers: [%q], topics: [events], group_id: g}}
decode: {on_error: dlq, dlq: {topic: events.dlq}, fields: {value: Int64}}
transform:
  - filter: "%s > 0"
  - route:
      rules: [{when: "kind == 'click'", sink: clicks}]
      unmatched: others
sinks:
  clicks: {clickhouse: {addr: [%q], table: clicks}}
  others: {clickhouse: {addr: [%q], table: others}}
metrics: {listen: "off"}
`, kb.Addr(), field, ch.TCPAddr(), ch.TCPAddr()))
	}
	var out, errb bytes.Buffer
	code := run([]string{"validate", "-connect", "-config", cfg("valeu")}, &out, &errb)
	if code != exitUsage {
		t.Fatalf("exit code %d for a misspelled field, want %d; stdout:\n%s", code, exitUsage, out.String())
	}
	for _, w := range []string{`decode.dlq.topic: topic "events.dlq" does not exist`, `field "valeu" has no known type`, `did you mean "value" (Int64)?`} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errb.String())
		}
	}

	kb.CreateTopic(t, "events.dlq", 1)
	out.Reset()
	errb.Reset()
	if code := run([]string{"validate", "-connect", "-config", cfg("value")}, &out, &errb); code != 0 {
		t.Fatalf("exit code %d; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, w := range []string{"sink clicks:", "table default.clicks has 2 insertable columns", "sink others:", "transform: 2 steps compiled", "dlq: topic events.dlq", "topic events.dlq has 1 partitions"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}
}

// TestValidateConnectAvro: with Confluent framing, `validate -connect`
// fetches the latest schema of each subject from the registry and checks
// that it fills the table: a registry that is down, a prewarm subject it
// does not know, and a writer schema whose field cannot go into its column
// (array<string> into String) are each refused by name; the last two are
// mistakes of the configuration or the producers (exit 2), the first an
// outage (exit 1).
func TestValidateConnectAvro(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.ev (id Int64, tags String) ENGINE = MergeTree ORDER BY id")
	reg := registrytest.New(t)
	reg.Register("good-value", `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"tags","type":"string"}]}`)
	reg.Register("events-value", `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"tags","type":{"type":"array","items":"string"}}]}`)
	cfg := func(prewarm string) string {
		return writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
source: {kafka: {brokers: [%q], topics: [events], group_id: g}}
decode:
  format: avro
  avro: {framing: confluent, registry: {url: %q}%s}
sink: {clickhouse: {addr: [%q], table: ev}}
metrics: {listen: "off"}
`, kb.Addr(), reg.URL(), prewarm, ch.TCPAddr()))
	}
	check := func(path string, wantCode int, want ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run([]string{"validate", "-connect", "-timeout", "5s", "-config", path}, &out, &errb); code != wantCode {
			t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, wantCode, out.String(), errb.String())
		}
		for _, w := range want {
			if !strings.Contains(out.String()+errb.String(), w) {
				t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", w, out.String(), errb.String())
			}
		}
	}
	// The topic's subject (the default naming) has a field that cannot go
	// into its column.
	check(cfg(""), exitUsage, "subject events-value", "tags")
	check(cfg(", prewarm_subjects: [good-value, nosuch-value]"), exitUsage, `subject "nosuch-value"`, "subject good-value, latest schema id")
	check(cfg(", prewarm_subjects: [good-value]"), exitOK, "subject good-value, latest schema id")
	reg.SetDown(true)
	check(cfg(", prewarm_subjects: [good-value]"), exitFailed, "decode.avro.registry")
}

// TestValidateConnectBrokerHints: when the brokers cannot be reached,
// `validate -connect` names the likely cause, and ClickHouse, checked with
// its own timeout, still passes: TLS against a plaintext listener, and
// ClickHouse's HTTP port given as a broker (exit 1: servers that cannot be
// reached). SASL against a listener that closes the connection on the
// authentication is a configuration error (exit 2).
func TestValidateConnectBrokerHints(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	for _, tc := range []struct {
		name, broker, tls, want string
		code                    int
	}{
		{"tls-to-plaintext", kb.Addr(), ", tls: {enabled: true, insecure_skip_verify: true}", "TLS handshake to a plaintext listener?", exitFailed},
		{"http-port", ch.HTTPAddr(), "", "an HTTP server answered", exitFailed},
		{"sasl-not-enabled", kb.Addr(), ", sasl: {mechanism: PLAIN, username: u, password: p}", "that the listener takes SASL", exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
source: {kafka: {brokers: [%q], topics: [events], group_id: g%s}}
sink: {clickhouse: {addr: [%q], table: events}}
metrics: {listen: "off"}
`, tc.broker, tc.tls, ch.TCPAddr()))
			var out, errb bytes.Buffer
			if code := run([]string{"validate", "-connect", "-timeout", "4s", "-config", path}, &out, &errb); code != tc.code {
				t.Fatalf("exit code %d; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errb.String())
			}
			if !strings.Contains(out.String(), "table default.events has 6 insertable columns") {
				t.Errorf("ClickHouse was not checked on its own:\n%s", out.String())
			}
		})
	}
}

// TestValidateConnectExactlyOnce: `validate -connect` refuses
// delivery: exactly_once on a table that does not drop re-inserted blocks
// (a plain MergeTree), as startup does, with exit 2.
func TestValidateConnectExactlyOnce(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	path := writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
delivery: exactly_once
source: {kafka: {brokers: [%q], topics: [events], group_id: g}}
sink: {clickhouse: {addr: [%q], table: events}}
metrics: {listen: "off"}
`, kb.Addr(), ch.TCPAddr()))
	var out, errb bytes.Buffer
	if code := run([]string{"validate", "-connect", "-config", path}, &out, &errb); code != exitUsage {
		t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitUsage, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "exactly_once needs a table that drops a block it already has, and default.events (sink default) is MergeTree") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}
