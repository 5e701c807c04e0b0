package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPreflight: mistakes that can be seen without a network (a transform
// expression that does not parse, a function that does not exist, a reader
// schema with a typo, a schema file that is missing, a password file that
// is missing or empty) make both `etl
// validate` and the run exit 2, listing every one; no server is needed to
// find them (the addresses here lead nowhere).
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	reader := writeFile(t, "reader.avsc", `{"type":"record","name":"E","fields":[{"name":"id","type":"lng"}]}`)
	base := `pipeline: {name: x}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [t], group_id: g}}
sink: {clickhouse: {addr: ["127.0.0.1:1"], table: t}}
metrics: {listen: "off"}
`
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"expr.yaml", base + `decode: {fields: {x: Int64}}
transform:
  - filter: "x > 0 &&"
  - set:
      y: "uper(s)"
`, []string{
			`expr.yaml:7:13: transform[0].filter: syntax error`,
			`transform[1].set.y: unknown function uper (did you mean "upper"?)`,
		}},
		{"avro.yaml", base + `decode:
  format: avro
  avro: {framing: raw, schema_file: ` + dir + `/missing.avsc, reader_schema: ` + reader + `}
`, []string{
			`decode.avro.reader_schema ` + reader + `: avro: unknown type: lng`,
			`decode.avro.schema_file: open ` + dir + `/missing.avsc: no such file or directory`,
		}},
		{"secrets.yaml", `pipeline: {name: x}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [t], group_id: g, sasl: {mechanism: PLAIN, username: u, password_file: ` + dir + `/kafka-password}}}
sink: {clickhouse: {addr: ["127.0.0.1:1"], table: t, password_file: ` + writeFile(t, "empty-password", "") + `}}
metrics: {listen: "off"}
`, []string{
			`sink.clickhouse.password_file: cannot read the password: `,
			`is empty`,
			`source.kafka.sasl.password_file: cannot read the password: open ` + dir + `/kafka-password: no such file or directory`,
		}},
		{"chtls.yaml", `pipeline: {name: x}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [t], group_id: g}}
sinks:
  a: {clickhouse: {addr: ["127.0.0.1:1"], table: t, tls: {enabled: true, ca_file: ` + dir + `/ca.pem}}}
  b: {clickhouse: {addr: ["127.0.0.1:1"], table: t, tls: {enabled: true, ca_file: ` + writeFile(t, "not-a-ca.pem", "no PEM here") + `}}}
transform:
  - route: {rules: [{when: "true", sink: a}], unmatched: b}
metrics: {listen: "off"}
`, []string{
			`sinks.a.clickhouse.tls.ca_file: open ` + dir + `/ca.pem: no such file or directory`,
			`sinks.b.clickhouse.tls.ca_file: no certificate found in `,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.name, c.yaml)
			for _, args := range [][]string{{"validate", "-config", path}, {"-config", path}} {
				var out, errb bytes.Buffer
				code := run(args, &out, &errb)
				if code != exitUsage {
					t.Fatalf("%v: exit code %d, want %d; stderr:\n%s", args, code, exitUsage, errb.String())
				}
				for _, w := range c.want {
					if !strings.Contains(errb.String(), strings.Replace(w, c.name, path, 1)) {
						t.Errorf("%v: stderr lacks %q:\n%s", args, w, errb.String())
					}
				}
			}
		})
	}
}
