package schema

import (
	"strings"
	"testing"

	"github.com/etl-project/etl/config"
)

const batchSchema = `{"type":"record","name":"Batch","fields":[
 {"name":"batch_id","type":"long"},
 {"name":"source","type":"string"},
 {"name":"user","type":{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"]}]}},
 {"name":"sent_at","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"flag","type":"boolean","default":true},
 {"name":"attrs","type":{"type":"map","values":"string"}},
 {"name":"either","type":["string","long"]},
 {"name":"events","type":{"type":"array","items":{"type":"record","name":"Event","fields":[
   {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
   {"name":"kind","type":"string"},
   {"name":"value","type":"long"},
   {"name":"tags","type":{"type":"array","items":"string"}}]}}}]}`

func mustServer(t *testing.T, v string) Server {
	t.Helper()
	s, err := ParseServer(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func names(cols []Column) string {
	var out []string
	for _, c := range cols {
		s := c.Name + " " + c.Type
		if c.Group != "" {
			s += " [" + c.Group + "]"
		}
		if c.Note != "" {
			s += " -- " + c.Note
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

func TestDeriveWithoutChain(t *testing.T) {
	src, err := FromAvro(batchSchema)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := Derive(src, Options{Server: mustServer(t, "24.3")})
	if err != nil {
		t.Fatal(err)
	}
	want := `batch_id Int64
source String
user Tuple(Int64, Nullable(String))
sent_at DateTime64(3)
flag Bool
attrs Map(String, String)
events.ts Array(DateTime64(6)) [events]
events.kind Array(String) [events]
events.value Array(Int64) [events]
events.tags Array(Array(String)) [events]
either  -- a union of 2 non-null types has no ClickHouse type`
	if got := names(cols); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	old, err := Derive(src, Options{Server: mustServer(t, "18.16")})
	if err != nil {
		t.Fatal(err)
	}
	want18 := `batch_id Int64
source String
user Tuple(Int64, Nullable(String))
sent_at DateTime
flag UInt8
events.ts Array(DateTime) [events]
events.kind Array(String) [events]
events.value Array(Int64) [events]
events.tags Array(Array(String)) [events]
attrs  -- ClickHouse 18.16 has no Map type (21.8 and later have)
either  -- a union of 2 non-null types has no ClickHouse type`
	if got := names(old); got != want18 {
		t.Fatalf("18.16: got\n%s\nwant\n%s", got, want18)
	}
	if cols[4].Default != "1" {
		t.Errorf("flag's default is %q, want 1", cols[4].Default)
	}
}

func TestDeriveThroughChain(t *testing.T) {
	src, err := FromAvro(batchSchema)
	if err != nil {
		t.Fatal(err)
	}
	steps := []config.Step{
		{Flatten: "events"},
		{Filter: &config.Expr{Text: "events.value > 0"}},
		{Set: []config.Assignment{
			{Field: "amount", Expr: config.Expr{Text: "events.value * 100"}},
			{Field: "at", Expr: config.Expr{Text: "from_unix_ms(events.value)"}},
			{Field: "big", Expr: config.Expr{Text: "events.value > 10"}},
			{Field: "ratio", Expr: config.Expr{Text: "events.value / 3"}},
			{Field: "who", Expr: config.Expr{Text: "user.name"}},
		}},
		{Rename: map[string]string{"events.kind": "kind", "user.id": "user_id", "batch_id": "batch"}},
		{Drop: []string{"source", "attrs"}},
	}
	cols, err := Derive(src, Options{Steps: steps, Server: mustServer(t, "18.16"), LowCardinality: true,
		Overrides: map[string]string{"event_ts": "events.ts", "event_tags": "events.tags"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `batch Int64
user Tuple(Int64, Nullable(String))
sent_at DateTime
flag UInt8
event_ts DateTime
kind LowCardinality(String)
events.value Int64
event_tags Array(String)
amount Int64
at DateTime
big UInt8
ratio Float64
who LowCardinality(Nullable(String))
user_id Int64
either  -- a union of 2 non-null types has no ClickHouse type`
	if got := names(cols); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	cols24, err := Derive(src, Options{Steps: steps, Server: mustServer(t, "")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols24 {
		if c.Name == "at" && c.Type != "DateTime64(3)" || c.Name == "big" && c.Type != "Bool" || c.Name == "events.ts" && c.Type != "DateTime64(6)" {
			t.Errorf("newest server: %s %s", c.Name, c.Type)
		}
	}
}

func TestDeriveErrors(t *testing.T) {
	src, err := FromAvro(batchSchema)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Derive(src, Options{Steps: []config.Step{{Set: []config.Assignment{{Field: "x", Expr: config.Expr{Text: "source * 2"}}}}}})
	if err == nil || !strings.Contains(err.Error(), "transform[0].set.x") {
		t.Fatalf("a chain that does not compile against the schema: %v", err)
	}
	_, err = Derive(src, Options{Steps: []config.Step{{Set: []config.Assignment{{Field: "x", Expr: config.Expr{Text: "nope + 1"}}}}}})
	if err == nil || !strings.Contains(err.Error(), `unknown field "nope"`) {
		t.Fatalf("an unknown field: %v", err)
	}
}

func TestFromFieldsOrder(t *testing.T) {
	src := FromFields(map[string]string{"b": "String", "a": "UInt32", "c": "DateTime"}, []string{"c", "a"})
	cols, err := Derive(src, Options{Server: mustServer(t, "18.16")})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(cols); got != "c DateTime\na UInt32\nb String" {
		t.Fatalf("got\n%s", got)
	}
}

func TestCreateTable(t *testing.T) {
	src, err := FromAvro(batchSchema)
	if err != nil {
		t.Fatal(err)
	}
	srv := mustServer(t, "18.16")
	cols, err := Derive(src, Options{Server: srv, LowCardinality: true})
	if err != nil {
		t.Fatal(err)
	}
	stmts, text, err := CreateTable(Table{Database: "db", Name: "t", OrderBy: []string{"batch_id", "sent_at"}, IfNotExists: true}, cols, srv)
	if err != nil {
		t.Fatal(err)
	}
	want := "-- field \"attrs\" has no column: ClickHouse 18.16 has no Map type (21.8 and later have)\n" +
		"-- field \"either\" has no column: a union of 2 non-null types has no ClickHouse type\n" +
		"SET allow_experimental_low_cardinality_type = 1;\n" +
		"CREATE TABLE IF NOT EXISTS `db`.`t`\n(\n" +
		"    `batch_id` Int64,\n" +
		"    `source` LowCardinality(String),\n" +
		"    `user` Tuple(Int64, Nullable(String)),\n" +
		"    `sent_at` DateTime,\n" +
		"    `flag` UInt8 DEFAULT 1,\n" +
		"    `events` Nested(\n" +
		"        `ts` DateTime,\n" +
		"        `kind` String,\n" +
		"        `value` Int64,\n" +
		"        `tags` Array(String)\n" +
		"    )\n)\nENGINE = MergeTree\nORDER BY (`batch_id`, `sent_at`);\n"
	if text != want {
		t.Fatalf("got\n%s\nwant\n%s", text, want)
	}
	if len(stmts) != 2 || !strings.HasPrefix(stmts[0], "SET ") || !strings.HasPrefix(stmts[1], "CREATE TABLE") {
		t.Fatalf("statements %q", stmts)
	}
	if _, _, err := CreateTable(Table{Name: "t", OrderBy: []string{"events.kind"}}, cols, srv); err == nil || !strings.Contains(err.Error(), "array") {
		t.Fatalf("an array in the sorting key: %v", err)
	}
	if _, _, err := CreateTable(Table{Name: "t", OrderBy: []string{"nope"}}, cols, srv); err == nil || !strings.Contains(err.Error(), "no such column") {
		t.Fatalf("an unknown sorting key column: %v", err)
	}
	nullable := []Column{{Name: "a", Type: "Nullable(Int64)"}}
	if _, _, err := CreateTable(Table{Name: "t", OrderBy: []string{"a"}}, nullable, srv); err == nil || !strings.Contains(err.Error(), "Nullable") {
		t.Fatalf("a Nullable sorting key column: %v", err)
	}
	if _, text, _ := CreateTable(Table{Name: "t", Engine: "ReplacingMergeTree"}, nullable, mustServer(t, "")); !strings.Contains(text, "ENGINE = ReplacingMergeTree\nORDER BY tuple()") || strings.Contains(text, "SET") {
		t.Fatalf("engine and empty key:\n%s", text)
	}
}

func TestAddColumn(t *testing.T) {
	for _, c := range []struct {
		col  Column
		want string
	}{
		{Column{Name: "n", Type: "Int64"}, "ALTER TABLE `d`.`t` ADD COLUMN `n` Nullable(Int64)"},
		{Column{Name: "n", Type: "Int64", Default: "7"}, "ALTER TABLE `d`.`t` ADD COLUMN `n` Int64 DEFAULT 7"},
		{Column{Name: "s", Type: "Nullable(String)"}, "ALTER TABLE `d`.`t` ADD COLUMN `s` Nullable(String)"},
		{Column{Name: "a", Type: "Array(String)"}, "ALTER TABLE `d`.`t` ADD COLUMN `a` Array(String)"},
		{Column{Name: "l", Type: "LowCardinality(String)"}, "ALTER TABLE `d`.`t` ADD COLUMN `l` LowCardinality(Nullable(String))"},
		{Column{Name: "we`ird", Type: "String", Default: "'x'"}, "ALTER TABLE `d`.`t` ADD COLUMN `we\\`ird` String DEFAULT 'x'"},
	} {
		if got := AddColumn("d", "t", c.col); got != c.want {
			t.Errorf("%+v: got %s, want %s", c.col, got, c.want)
		}
	}
}

func TestServerAdapt(t *testing.T) {
	old, now := mustServer(t, "18.16.1"), mustServer(t, "23.8")
	for _, c := range []struct {
		in, old, now string
	}{
		{"DateTime64(3)", "DateTime", "DateTime64(3)"},
		{"Array(Nullable(DateTime64(6)))", "Array(Nullable(DateTime))", "Array(Nullable(DateTime64(6)))"},
		{"Bool", "UInt8", "Bool"},
		{"Decimal(40, 2)", "", "Decimal(40, 2)"},
		{"Map(String, Int64)", "", "Map(String, Int64)"},
	} {
		if got, _ := old.Adapt(c.in); got != c.old {
			t.Errorf("18.16 %s: %q, want %q", c.in, got, c.old)
		}
		if got, _ := now.Adapt(c.in); got != c.now {
			t.Errorf("23.8 %s: %q, want %q", c.in, got, c.now)
		}
	}
	if _, err := ParseServer("x.y"); err == nil {
		t.Error("a bad version parsed")
	}
}

// TestDeriveMetadata: the columns a sink maps to a record's metadata are
// proposed with the types the server has (DateTime64 and Map from their
// versions on, DateTime and a Nested pair of arrays before); a column of
// a field's name mapped to metadata replaces the field's; field: quotes
// a field (whose column takes the mapped name, as any mapped field's).
func TestDeriveMetadata(t *testing.T) {
	src := FromFields(map[string]string{"id": "Int64", "topic": "String", "_offset": "Int64"}, []string{"id", "topic", "_offset"})
	overrides := map[string]string{"topic": "_topic", "part": "_partition", "off": "_offset", "ts": "_timestamp",
		"key": "_key", "headers": "_headers", "raw": "_raw", "field_off": "field:_offset", "tt": "_timestamp_type"}
	for _, c := range []struct{ server, want string }{
		{"18.16", `id Int64
field_off Int64
headers.key Array(String) [headers]
headers.value Array(String) [headers]
key String
off Int64
part Int32
raw String
topic String
ts DateTime
tt Int8`},
		{"24.3", `id Int64
field_off Int64
headers Map(String, String)
key String
off Int64
part Int32
raw String
topic String
ts DateTime64(3)
tt Int8`},
	} {
		cols, err := Derive(src, Options{Server: mustServer(t, c.server), Overrides: overrides})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(cols); got != c.want {
			t.Errorf("server %s: got\n%s\nwant\n%s", c.server, got, c.want)
		}
	}
	cols, _ := Derive(src, Options{Server: mustServer(t, "18.16"), Overrides: overrides})
	_, text, err := CreateTable(Table{Name: "t"}, cols, mustServer(t, "18.16"))
	if err != nil || !strings.Contains(text, "`headers` Nested(\n        `key` String,\n        `value` String\n    )") {
		t.Errorf("CreateTable: %v\n%s", err, text)
	}
}

// TestDeriveMetadataChain: the chain's expressions read a record's
// metadata like fields; the columns they make are derived with their
// types, the metadata itself makes no column unless mapped.
func TestDeriveMetadataChain(t *testing.T) {
	y := `pipeline: {name: x}
source: {kafka: {brokers: ["a:1"], topics: [t], group_id: g}}
decode: {fields: {id: Int64}}
transform:
  - filter: "_partition != 1"
  - set: {up: "upper(_topic)", o2: "_offset * 2"}
sink: {clickhouse: {addr: ["b:1"], table: t, columns: {off: _offset}}}
`
	cfg, err := config.Parse([]byte(y), "x.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	src := FromFields(map[string]string{"id": "Int64"}, []string{"id"})
	all, err := DeriveSinks(cfg, src, SinkOptions{Server: mustServer(t, "18.16")})
	if err != nil {
		t.Fatal(err)
	}
	want := "id Int64\nup String\no2 Int64\noff Int64"
	if got := names(all["default"]); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestDeriveKeyFields: a decode.fields entry for a field of the key
// (_key.NAME) types the column mapped to it and makes no column of its
// own; a key field nothing types is proposed as String; a type the server
// lacks is a note, not a column.
func TestDeriveKeyFields(t *testing.T) {
	src := FromFields(map[string]string{"id": "Int64", "_key.uid": "UInt64", "_key.at": "DateTime64(3)"}, []string{"id"})
	overrides := map[string]string{"uid": "_key.uid", "region": "_key.region", "at": "_key.at"}
	for _, c := range []struct{ server, want string }{
		{"18.16", "id Int64\nat DateTime\nregion String\nuid UInt64"},
		{"24.3", "id Int64\nat DateTime64(3)\nregion String\nuid UInt64"},
	} {
		cols, err := Derive(src, Options{Server: mustServer(t, c.server), Overrides: overrides})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(cols); got != c.want {
			t.Errorf("server %s: got\n%s\nwant\n%s", c.server, got, c.want)
		}
	}
}
