package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

const ordersSchema = `{"type":"record","name":"Order","fields":[
 {"name":"order_id","type":"string"},
 {"name":"amount","type":"double"},
 {"name":"user","type":{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}},
 {"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}}]}`

// TestValidateUnknownFields: a sink.clickhouse.columns entry mapping a
// column to a field the records cannot have (decode.fields or the Avro
// schema file lists the fields), or an expression reading one, makes
// `etl validate` and the run exit 2 with a message naming the field and
// the closest known one; the same files with the field spelt right pass.
// No server is reached (the addresses lead nowhere).
func TestValidateUnknownFields(t *testing.T) {
	avsc := writeFile(t, "orders.avsc", ordersSchema)
	base := `pipeline: {name: x}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [t], group_id: g}}
metrics: {listen: "off"}
`
	avro := "decode: {format: avro, avro: {framing: raw, schema_file: " + avsc + "}}\n"
	cases := []struct {
		name, bad, good string
		want            []string
	}{
		{"json.yaml",
			base + "decode: {fields: {user.id: UInt64}}\nsink: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t, columns: {user_id: user.idd}}}\n",
			base + "decode: {fields: {user.id: UInt64}}\nsink: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t, columns: {user_id: user.id}}}\n",
			[]string{`sink.clickhouse.columns.user_id: field "user.idd" is not a field of the records`, `(did you mean "user.id"?)`}},
		{"avro.yaml",
			base + avro + "sink: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t, columns: {order_id: order_idd}}}\n",
			base + avro + "sink: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t, columns: {order_id: order_id, uid: user.id, goods: items}}}\n",
			[]string{`sink.clickhouse.columns.order_id: field "order_idd" is not a field of the records: the Avro schema decode.avro.schema_file ` + avsc + ` has no such field (did you mean "order_id"?)`}},
		{"expr.yaml",
			base + avro + "transform:\n  - filter: \"amout > 0\"\nsink: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t}}\n",
			base + avro + "transform:\n  - filter: \"amount > 0\"\nsink: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t}}\n",
			[]string{`transform[0].filter`, `field "amout" is not a field of the records`, `(did you mean "amount"?)`}},
		{"sinks.yaml",
			base + avro + "sinks:\n  a: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t, columns: {uid: user.idd}}}\n  b: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t}}\ntransform:\n  - route: {rules: [{when: \"true\", sink: a}], unmatched: b}\n",
			base + avro + "sinks:\n  a: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t, columns: {uid: user.id}}}\n  b: {clickhouse: {addr: [\"127.0.0.1:1\"], table: t}}\ntransform:\n  - route: {rules: [{when: \"true\", sink: a}], unmatched: b}\n",
			[]string{`sinks.a.clickhouse.columns.uid: field "user.idd"`, `(did you mean "user.id"?)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.name, c.bad)
			for _, args := range [][]string{{"validate", "-config", path}, {"-config", path}} {
				var out, errb bytes.Buffer
				if code := run(args, &out, &errb); code != exitUsage {
					t.Fatalf("%v: exit code %d, want %d; stderr:\n%s", args, code, exitUsage, errb.String())
				}
				for _, w := range c.want {
					if !strings.Contains(errb.String(), w) {
						t.Errorf("%v: stderr lacks %q:\n%s", args, w, errb.String())
					}
				}
			}
			var out, errb bytes.Buffer
			if code := run([]string{"validate", "-config", writeFile(t, "good-"+c.name, c.good)}, &out, &errb); code != exitOK {
				t.Fatalf("the same file with the field spelt right: exit code %d; stderr:\n%s", code, errb.String())
			}
		})
	}
}

// TestValidateConnectUnknownFields: validate -connect, against a real
// ClickHouse and a schema registry, refuses (exit 2) a columns entry whose
// field the registry's latest schema lacks, a columns entry or an
// exclude_columns name the table lacks, and a decode.fields typo, each
// with the closest name; the corrected files pass.
func TestValidateConnectUnknownFields(t *testing.T) {
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "orders", 1)
	ch := testenv.ClickHouse(t)
	ch.Exec(t, "CREATE TABLE default.orders (order_id String, amount Float64, user_id UInt64, ingested_at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY order_id")
	reg := registrytest.New(t)
	reg.Register("orders-value", ordersSchema)
	cfg := func(decode, sink string) string {
		return writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
source: {kafka: {brokers: [%q], topics: [orders], group_id: g}}
decode: %s
sink: {clickhouse: {addr: [%q], table: orders, %s}}
metrics: {listen: "off"}
`, kb.Addr(), decode, ch.TCPAddr(), sink))
	}
	avro := fmt.Sprintf("{format: avro, avro: {framing: confluent, registry: {url: %q}}}", reg.URL())
	check := func(path string, wantCode int, want ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run([]string{"validate", "-connect", "-timeout", "5s", "-config", path}, &out, &errb); code != wantCode {
			t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, wantCode, out.String(), errb.String())
		}
		for _, w := range want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("stderr lacks %q:\nstdout:\n%s\nstderr:\n%s", w, out.String(), errb.String())
			}
		}
	}
	check(cfg(avro, "columns: {order_id: order_idd, user_id: user.id}, exclude_columns: [ingested_at]"), exitUsage,
		`sink.clickhouse.columns.order_id: field "order_idd" is not a field of the records: the latest schema of the registry's subjects orders-value (id `,
		`(did you mean "order_id"?)`)
	check(cfg(avro, "columns: {user_id: user.id}, exclude_columns: [ingested_att]"), exitUsage,
		"exclude_columns names column(s) the table lacks: ingested_att (did you mean ingested_at?)")
	check(cfg(avro, "columns: {user_idd: user.id}, exclude_columns: [ingested_at]"), exitUsage,
		"columns mapping names column(s) the table lacks: user_idd (did you mean user_id?)")
	check(cfg("{fields: {user.id: UInt64}}", "columns: {user_id: user.idd}"), exitUsage,
		`field "user.idd" is not a field of the records`, `(did you mean "user.id"?)`)
	check(cfg(avro, "columns: {user_id: user.id}, exclude_columns: [ingested_at]"), exitOK)
	check(cfg("{fields: {user.id: UInt64}}", "columns: {user_id: user.id}"), exitOK)
}

// TestSchemaNestedAvroColumns: etl schema names the columns of a nested
// Avro schema as sink.clickhouse.columns maps them, as the run fills
// them: a field of a record (user.id) gets a column of its own, an array
// of records mapped whole is a Nested structure of the mapped name, a
// renamed top-level field takes the column's name; a mapped field the
// schema lacks is refused with the closest field.
func TestSchemaNestedAvroColumns(t *testing.T) {
	avsc := writeFile(t, "orders.avsc", ordersSchema)
	cfg := func(columns string) string {
		return writeFile(t, "p.yaml", `pipeline: {name: x}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [t], group_id: g}}
decode: {format: avro, avro: {framing: raw, schema_file: `+avsc+`}}
sink: {clickhouse: {addr: ["127.0.0.1:1"], table: orders, columns: `+columns+`}}
metrics: {listen: "off"}
`)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"schema", "-server-version", "18.16", "-config", cfg("{uid: user.id, goods: items, oid: order_id}")}, &out, &errb); code != exitOK {
		t.Fatalf("exit code %d; stderr:\n%s", code, errb.String())
	}
	ddl := out.String()
	for _, w := range []string{"`oid` String", "`uid` Int64", "`goods` Nested(", "`sku` String", "`qty` Int32", "`user` Tuple(Int64, String)", "`amount` Float64"} {
		if !strings.Contains(ddl, w) {
			t.Errorf("DDL lacks %s:\n%s", w, ddl)
		}
	}
	for _, w := range []string{"`order_id`", "`items`"} {
		if strings.Contains(ddl, w) {
			t.Errorf("DDL has %s, which the map renames:\n%s", w, ddl)
		}
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"schema", "-server-version", "18.16", "-config", cfg("{uid: user.idd}")}, &out, &errb); code != exitUsage {
		t.Fatalf("exit code %d for a mapped field the schema lacks; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if w := `(did you mean "user.id"?)`; !strings.Contains(errb.String(), w) {
		t.Errorf("stderr lacks %q:\n%s", w, errb.String())
	}
}

// TestSchemaAvroKeyFields: with Avro keys, etl schema types the columns
// mapped to the key's fields (_key.NAME) from the latest schema of the
// topic's <topic>-key subject; without that subject it refuses, naming
// it, rather than guessing.
func TestSchemaAvroKeyFields(t *testing.T) {
	reg := registrytest.New(t)
	reg.Register("orders-value", ordersSchema)
	cfg := writeFile(t, "p.yaml", fmt.Sprintf(`pipeline: {name: x}
source: {kafka: {brokers: ["127.0.0.1:1"], topics: [orders], group_id: g}}
decode: {format: avro, avro: {framing: confluent, registry: {url: %q}}, key: {format: avro}}
sink: {clickhouse: {addr: ["127.0.0.1:1"], table: orders, columns: {kid: _key.id, kregion: _key.region, kat: _key.at}}}
metrics: {listen: "off"}
`, reg.URL()))
	var out, errb bytes.Buffer
	if code := run([]string{"schema", "-server-version", "18.16", "-config", cfg}, &out, &errb); code != exitFailed {
		t.Fatalf("exit code %d without the key's subject; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if w := `the latest schema of subject "orders-key", which types the key's fields`; !strings.Contains(errb.String(), w) {
		t.Errorf("stderr lacks %q:\n%s", w, errb.String())
	}
	reg.Register("orders-key", `{"type":"record","name":"K","fields":[{"name":"id","type":"long"},{"name":"region","type":"string"},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}`)
	out.Reset()
	errb.Reset()
	if code := run([]string{"schema", "-server-version", "18.16", "-config", cfg}, &out, &errb); code != exitOK {
		t.Fatalf("exit code %d; stderr:\n%s", code, errb.String())
	}
	for _, w := range []string{"`kid` Int64", "`kregion` String", "`kat` DateTime", "`order_id` String"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("DDL lacks %s:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "_key") {
		t.Errorf("DDL has a column of the key's own name:\n%s", out.String())
	}
}
