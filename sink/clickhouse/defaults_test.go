package clickhouse

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	avrodec "github.com/etl-project/etl/decode/avro"
	jsondec "github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/internal/testenv"
)

// TestPlanDefaultWarnings: DEFAULT expressions that refer to columns or
// call functions that are not deterministic cannot be computed once: Plan
// warns about them and leaves the others to Client.Plan.
func TestPlanDefaultWarnings(t *testing.T) {
	cols := []ColumnInfo{
		{Name: "id", Type: "UInt64"},
		{Name: "a", Type: "Int32", DefaultKind: "DEFAULT", DefaultExpr: "CAST(42, 'Int32')"},
		{Name: "s", Type: "String", DefaultKind: "DEFAULT", DefaultExpr: "'now() and a + 1'"},
		{Name: "b", Type: "Int64", DefaultKind: "DEFAULT", DefaultExpr: "a + 1"},
		{Name: "created", Type: "DateTime", DefaultKind: "DEFAULT", DefaultExpr: "now()"},
		{Name: "day", Type: "Date", DefaultKind: "DEFAULT", DefaultExpr: "toDate(NOW ())"},
		{Name: "r", Type: "UInt32", DefaultKind: "DEFAULT", DefaultExpr: "rand32() % 10"},
		{Name: "g", Type: "UUID", DefaultKind: "DEFAULT", DefaultExpr: "generateUUIDv4()"},
		{Name: "dg", Type: "String", DefaultKind: "DEFAULT", DefaultExpr: "dictGetString('d', 'v', toUInt64(1))"},
		{Name: "q", Type: "String", DefaultKind: "DEFAULT", DefaultExpr: "concat(`s`, \"dummy\")"},
		{Name: "dummy", Type: "UInt8", DefaultKind: "DEFAULT", DefaultExpr: "3"},
		{Name: "x", Type: "UInt8", DefaultKind: "DEFAULT", DefaultExpr: "dummy"},
		{Name: "n.a", Type: "Array(UInt8)", DefaultKind: "DEFAULT", DefaultExpr: "[1, 2]"},
		{Name: "n.b", Type: "Array(UInt8)", DefaultKind: "DEFAULT", DefaultExpr: "arrayMap(v -> v * 2, n.a)"},
		{Name: "tu", Type: "Tuple(Int8, String)", DefaultKind: "DEFAULT", DefaultExpr: "(1, 'z')"},
		{Name: "te", Type: "Int8", DefaultKind: "DEFAULT", DefaultExpr: "tu.1"},
		{Name: "m", Type: "Int8", DefaultKind: "MATERIALIZED", DefaultExpr: "now()"},
		{Name: "e", Type: "String", DefaultKind: "", DefaultExpr: ""},
	}
	tg, err := Plan("default", "t", cols, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"b":       "refers to column(s) a",
		"created": "calls now(), whose value is not the same for every record",
		"day":     "calls NOW()",
		"r":       "calls rand32()",
		"g":       "calls generateUUIDv4()",
		"dg":      "calls dictGetString()",
		"q":       "refers to column(s) s, dummy",
		"x":       "refers to column(s) dummy",
		"n.b":     "refers to column(s) n.a",
		"te":      "refers to column(s) tu",
	}
	if len(tg.Warnings) != len(want) {
		t.Errorf("%d warnings, want %d:\n%s", len(tg.Warnings), len(want), strings.Join(tg.Warnings, "\n"))
	}
	for _, w := range tg.Warnings {
		name, _, _ := strings.Cut(strings.TrimPrefix(w, "column "), ":")
		why, ok := want[name]
		if !ok || !strings.Contains(w, why) || !strings.Contains(w, "list "+name+" in sink.clickhouse.exclude_columns") {
			t.Errorf("warning %q, want one with %q", w, why)
		}
	}
	var pending []string
	for _, p := range tg.pending {
		pending = append(pending, tg.Schema.Names[p.col]+"="+p.expr)
	}
	if got := strings.Join(pending, " "); got != "a=CAST(42, 'Int32') s='now() and a + 1' dummy=3 n.a=[1, 2] tu=(1, 'z')" {
		t.Errorf("pending: %s", got)
	}

	// An excluded column is the server's to fill: no warning.
	var others []string
	for _, c := range cols {
		if c.Name != "id" && c.Name != "a" && insertable(c) {
			others = append(others, c.Name)
		}
	}
	tg, err = Plan("default", "t", cols, Mapping{Exclude: others})
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.Warnings) != 0 || len(tg.pending) != 1 {
		t.Errorf("mapped: warnings %q, pending %v", tg.Warnings, tg.pending)
	}
}

// defaultsTable has a DEFAULT of every kind the issue names; created and b
// cannot be computed by etl.
const defaultsTable = `CREATE TABLE default.defaults (
	id UInt64,
	a Int32 DEFAULT 42,
	s String DEFAULT 'unknown',
	d Date DEFAULT toDate('2020-01-02'),
	f Float64 DEFAULT -1.5,
	ns Nullable(String) DEFAULT 'x',
	arr Array(UInt8) DEFAULT [1, 2],
	created DateTime DEFAULT now(),
	b Int64 DEFAULT a + 1,
	e Enum8('p' = 1, 'q' = 2) DEFAULT 'q',
	tu Tuple(Int8, String) DEFAULT (1, 'z'),
	dec Decimal(9, 2) DEFAULT 1.25,
	u UUID DEFAULT toUUID('01234567-89ab-cdef-0123-456789abcdef'),
	fs FixedString(3) DEFAULT 'ab',
	dt DateTime('UTC') DEFAULT toDateTime('2020-01-02 03:04:05', 'UTC'),
	m Int8 MATERIALIZED a * 2
) ENGINE = MergeTree ORDER BY id`

const defaultsSelect = "SELECT id, a, s, d, f, ns, arr, toUnixTimestamp(created), b, e, tu, dec, u, fs, dt, m FROM default.defaults ORDER BY id FORMAT TabSeparated"

// serverDefaults is what the server itself gives a row that names only
// its id, for the columns etl computes too (created and b are the
// server's alone).
const serverDefaultsSelect = "SELECT a, s, d, f, ns, arr, e, tu, dec, u, fs, dt FROM default.defaults WHERE id = %s FORMAT TabSeparated"

// TestInsertDefaults: JSON records with and without the fields, and Avro
// records whose writer schema lacks them, decoded through the plan and
// inserted into a real table: a missing field takes the column's DEFAULT
// as the server computes it, a null into a column that is not Nullable
// too, a null into a Nullable column stays NULL; now() and a + 1 are
// warned about and take the type's zero value. After an ALTER of a
// DEFAULT, the next plan computes the new value.
func TestInsertDefaults(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, defaultsTable)
	c := connect(t, srv, "defaults")
	tg := plan(t, c)
	if want := "INSERT INTO `default`.`defaults` (`id`, `a`, `s`, `d`, `f`, `ns`, `arr`, `created`, `b`, `e`, `tu`, `dec`, `u`, `fs`, `dt`)"; tg.Query != want {
		t.Fatalf("query %s\nwant %s", tg.Query, want)
	}
	if len(tg.Warnings) != 2 || !strings.HasPrefix(tg.Warnings[0], "column created: DEFAULT now() calls now()") ||
		!strings.HasPrefix(tg.Warnings[1], "column b: DEFAULT a + 1 refers to column(s) a") {
		t.Errorf("warnings:\n%s", strings.Join(tg.Warnings, "\n"))
	}
	for i, name := range tg.Schema.Names {
		if want := name != "id" && name != "created" && name != "b"; tg.Schema.Types[i].HasDefault() != want {
			t.Errorf("column %s: has a default %v, want %v", name, !want, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	jd, err := jsondec.New(tg.Schema, jsondec.Options{Fields: tg.Fields})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chunk.New(tg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{
		`{"id":1}`,
		`{"id":2,"a":7,"s":"v","d":"2021-03-04","f":2.5,"ns":"y","arr":[9],"created":"2026-01-01 00:00:00","b":5,"e":"p","tu":[2,"w"],"dec":"0.5",` +
			`"u":"ffffffff-89ab-cdef-0123-456789abcdef","fs":"xyz","dt":"2030-01-01 00:00:00"}`,
		`{"id":3,"a":null,"s":null,"d":null,"ns":null,"arr":null,"created":null,"b":null,"tu":null,"dt":null}`,
	} {
		if _, err := jd.Decode([]byte(rec), ch); err != nil {
			t.Fatalf("decode %s: %v", rec, err)
		}
	}
	// Avro from a writer schema that lacks most fields; a and ns are
	// [null, T] unions.
	writer := `{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"a","type":["null","int"]},{"name":"ns","type":["null","string"]}]}`
	ad, err := avrodec.New(writer, tg.Schema, avrodec.Options{Fields: tg.Fields})
	if err != nil {
		t.Fatal(err)
	}
	for _, datum := range [][]byte{
		{8, 0, 0},              // id 4, a null, ns null
		{10, 2, 16, 2, 2, 'y'}, // id 5, a 8, ns "y"
	} {
		if _, err := ad.Decode(datum, ch); err != nil {
			t.Fatalf("decode %x: %v", datum, err)
		}
	}
	if err := c.Insert(ctx, tg, []*chunk.Chunk{ch}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	const defaults = "42\tunknown\t2020-01-02\t-1.5\tx\t[1,2]\t0\t0\tq\t(1,'z')\t1.25\t01234567-89ab-cdef-0123-456789abcdef\tab\\0\t2020-01-02 03:04:05\t84"
	want := strings.Join([]string{
		"1\t" + defaults,
		"2\t7\tv\t2021-03-04\t2.5\ty\t[9]\t1767225600\t5\tp\t(2,'w')\t0.50\tffffffff-89ab-cdef-0123-456789abcdef\txyz\t2030-01-01 00:00:00\t14",
		"3\t" + strings.Replace(defaults, "\tx\t", "\t\\N\t", 1),
		"4\t" + strings.Replace(defaults, "\tx\t", "\t\\N\t", 1),
		"5\t" + strings.NewReplacer("42\t", "8\t", "\tx\t", "\ty\t", "\t84", "\t16").Replace(defaults),
	}, "\n")
	if got := srv.Query(t, defaultsSelect); got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}
	// Value-exact against the server's own DEFAULTs: a row that names only
	// its id.
	srv.Exec(t, "INSERT INTO default.defaults (id) VALUES (100)")
	if ours, server := srv.Query(t, strings.Replace(serverDefaultsSelect, "%s", "1", 1)), srv.Query(t, strings.Replace(serverDefaultsSelect, "%s", "100", 1)); ours != server {
		t.Errorf("etl's defaults:\n%s\nthe server's:\n%s", ours, server)
	}

	// The table changes: a new DEFAULT for a and a new column with one.
	// The next plan computes them; the old target is not the same.
	srv.Exec(t, "ALTER TABLE default.defaults MODIFY COLUMN a Int32 DEFAULT 43")
	srv.Exec(t, "ALTER TABLE default.defaults ADD COLUMN k String DEFAULT concat('k', toString(7))")
	tg2 := plan(t, c)
	if tg2.Same(tg) {
		t.Error("the new plan is the same as the old")
	}
	if tg3 := plan(t, c); !tg3.Same(tg2) {
		t.Error("two plans of the same table differ")
	}
	jd2, err := jsondec.New(tg2.Schema, jsondec.Options{Fields: tg2.Fields})
	if err != nil {
		t.Fatal(err)
	}
	ch2, err := chunk.New(tg2.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jd2.Decode([]byte(`{"id":6}`), ch2); err != nil {
		t.Fatal(err)
	}
	if err := c.Insert(ctx, tg2, []*chunk.Chunk{ch2}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if got := srv.Query(t, "SELECT a, k FROM default.defaults WHERE id = 6 FORMAT TabSeparated"); got != "43\tk7" {
		t.Errorf("after ALTER: %q", got)
	}
}

// TestPlanDefaultRefused: an expression the server cannot compute alone
// (an unknown function) is a warning, not a failed plan; the other
// DEFAULTs are computed.
func TestPlanDefaultRefused(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	srv.Exec(t, "CREATE TABLE default.refused (id UInt64, a Int32 DEFAULT 5, s String DEFAULT 'ok') ENGINE = MergeTree ORDER BY id")
	c := connect(t, srv, "refused")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cols, err := c.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The server would refuse this DEFAULT in a CREATE; a newer server's
	// function is the same case.
	cols[1].DefaultExpr = "noSuchFunction(1)"
	tg, err := Plan(c.db, "refused", cols, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.computeDefaults(ctx, tg); err != nil {
		t.Fatal(err)
	}
	if len(tg.Warnings) != 1 || !strings.Contains(tg.Warnings[0], "column a: DEFAULT noSuchFunction(1) the server cannot compute it alone") {
		t.Errorf("warnings %q", tg.Warnings)
	}
	if tg.Schema.Types[1].HasDefault() || !tg.Schema.Types[2].HasDefault() {
		t.Errorf("defaults: a %v, s %v", tg.Schema.Types[1].HasDefault(), tg.Schema.Types[2].HasDefault())
	}
}
