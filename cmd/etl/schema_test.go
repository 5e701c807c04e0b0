package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestSchemaJSON: etl schema derives a JSON pipeline's table from
// decode.fields, in the file's order, through the chain, for the version
// it is given (no server); it refuses a JSON pipeline without types and
// a sorting key the rows lack.
func TestSchemaJSON(t *testing.T) {
	cfg := writeFile(t, "p.yaml", `pipeline: {name: p}
source:
  kafka: {brokers: ["127.0.0.1:1"], topics: [t], group_id: g}
decode:
  fields:
    ts: DateTime64(3)
    user: String
    amount: Decimal(18, 4)
    tags: Array(String)
    ok: Bool
transform:
  - set: {cents: "int(amount * 100)", day: "truncate(ts, 'day')"}
  - rename: {user: user_name}
sink:
  clickhouse:
    addr: ["127.0.0.1:1"]
    database: db
    table: t
    schema: {order_by: [user_name, ts], engine: ReplacingMergeTree}
`)
	var out, errb bytes.Buffer
	if code := run([]string{"schema", "-config", cfg, "-server-version", "18.16", "-low-cardinality"}, &out, &errb); code != 0 {
		t.Fatalf("code %d: %s", code, errb.String())
	}
	want := "-- sink default, for ClickHouse 18.16\n" +
		"SET allow_experimental_low_cardinality_type = 1;\n" +
		"CREATE TABLE `db`.`t`\n(\n" +
		"    `ts` DateTime,\n" +
		"    `user_name` LowCardinality(String),\n" +
		"    `amount` Decimal(18, 4),\n" +
		"    `tags` Array(String),\n" +
		"    `ok` UInt8,\n" +
		"    `cents` Int64,\n" +
		"    `day` DateTime\n" +
		")\nENGINE = ReplacingMergeTree\nORDER BY (`user_name`, `ts`);\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if code := run([]string{"schema", "-config", cfg, "-server-version", "24.8", "-order-by", "day"}, &out, &errb); code != 0 {
		t.Fatalf("code %d: %s", code, errb.String())
	}
	for _, w := range []string{"`ts` DateTime64(3),", "`ok` Bool,", "`day` DateTime64(3)\n", "ORDER BY `day`;"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("24.8 lacks %q:\n%s", w, out.String())
		}
	}
	errb.Reset()
	if code := run([]string{"schema", "-config", cfg, "-server-version", "24.8", "-order-by", "tags"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `order by "tags": an array`) {
		t.Errorf("an array sorting key: code %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"schema", "-config", cfg}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "pass -server-version") {
		t.Errorf("no server and no version: code %d, %s", code, errb.String())
	}
	noTypes := writeFile(t, "q.yaml", strings.Replace(readText(t, cfg), "  fields:\n    ts: DateTime64(3)\n    user: String\n    amount: Decimal(18, 4)\n    tags: Array(String)\n    ok: Bool\n", "  format: json\n", 1))
	errb.Reset()
	if code := run([]string{"schema", "-config", noTypes, "-server-version", "18.16"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "decode.fields is empty") {
		t.Errorf("JSON without types: code %d, %s", code, errb.String())
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSchemaRaw: etl schema derives a raw pipeline's table from its
// column map alone: the value and the metadata beside it, with the types
// the server has.
func TestSchemaRaw(t *testing.T) {
	cfg := writeFile(t, "p.yaml", `pipeline: {name: p}
source:
  kafka: {brokers: ["127.0.0.1:1"], topics: [t], group_id: g}
decode: {format: raw}
sink:
  clickhouse:
    addr: ["127.0.0.1:1"]
    table: t
    columns: {value: _raw, partition: _partition, offset: _offset, at: _timestamp, headers: _headers}
`)
	var out, errb bytes.Buffer
	if code := run([]string{"schema", "-config", cfg, "-server-version", "18.16", "-order-by", "partition,offset"}, &out, &errb); code != 0 {
		t.Fatalf("code %d: %s", code, errb.String())
	}
	want := "-- sink default, for ClickHouse 18.16\n" +
		"CREATE TABLE `default`.`t`\n(\n" +
		"    `at` DateTime,\n" +
		"    `headers` Nested(\n        `key` String,\n        `value` String\n    ),\n" +
		"    `offset` Int64,\n" +
		"    `partition` Int32,\n" +
		"    `value` String\n" +
		")\nENGINE = MergeTree\nORDER BY (`partition`, `offset`);\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
