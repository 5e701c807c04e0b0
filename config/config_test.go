package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// env returns a lookup function over a fixed map.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// base is a minimal valid file; broken cases below are written out in full
// so that their line and column numbers can be read off directly.
const base = `pipeline:
  name: demo
source:
  kafka:
    brokers: [k1:9092]
    topics: [events]
    group_id: g
sink:
  clickhouse:
    addr: [c1:9000]
    table: events
`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		yaml string
		want string
	}{
		{
			name: "unknown key with suggestion",
			yaml: base + "    batch: {max_rows: 10, lingr: 1s}\n",
			want: `pipeline.yaml:12:27: sink.clickhouse.batch.lingr: unknown key "lingr" (did you mean "linger"?); allowed keys: max_rows, max_bytes, linger, idle, first_at_once`,
		},
		{
			name: "column both mapped and excluded",
			yaml: base + "    columns: {event_kind: kind}\n    exclude_columns: [event_kind]\n",
			want: `pipeline.yaml:13:22: sink.clickhouse.exclude_columns: column event_kind is also in columns: a column is either filled from a field or left to the server's DEFAULT`,
		},
		{
			name: "column excluded twice",
			yaml: base + "    exclude_columns: [a, a]\n",
			want: `pipeline.yaml:12:22: sink.clickhouse.exclude_columns: column a is listed twice`,
		},
		{
			name: "unknown key without suggestion",
			yaml: base + "colour: red\n",
			want: `pipeline.yaml:12:1: colour: unknown key "colour"; allowed keys: pipeline, delivery, source, decode, transform, sink, sinks, chunk, backpressure, checkpoint, metrics, log`,
		},
		{
			name: "bad duration",
			yaml: base + "    batch: {linger: 5 seconds}\n",
			want: `pipeline.yaml:12:21: sink.clickhouse.batch.linger: invalid duration "5 seconds": use a number with a unit (ns, us, ms, s, m, h), e.g. 500ms, 5s, 1m30s`,
		},
		{
			name: "duration without unit",
			yaml: base + "    dial_timeout: 5\n",
			want: `pipeline.yaml:12:19: sink.clickhouse.dial_timeout: invalid duration 5: use a unit, e.g. 5s`,
		},
		{
			name: "bad byte size with space",
			yaml: base + "    batch:\n      max_bytes: 64 MB\n",
			want: `pipeline.yaml:13:18: sink.clickhouse.batch.max_bytes: invalid byte size "64 MB": use an integer optionally followed (without a space) by one of B, KB, MB, GB, KiB, MiB, GiB, TiB, e.g. 64MiB`,
		},
		{
			name: "bad byte size unit",
			yaml: base + "chunk: {target_bytes: 64XB}\n",
			want: `pipeline.yaml:12:23: chunk.target_bytes: invalid byte size "64XB": use an integer optionally followed (without a space) by one of B, KB, MB, GB, KiB, MiB, GiB, TiB, e.g. 64MiB`,
		},
		{
			name: "missing required key",
			yaml: strings.Replace(base, "    table: events\n", "", 1),
			want: `pipeline.yaml:9:3: sink.clickhouse.table: required key is missing`,
		},
		{
			name: "missing sections point at line 1",
			yaml: "pipeline:\n  name: demo\n",
			want: "pipeline.yaml:1:1: source.kafka: required key is missing\n" +
				"pipeline.yaml:1:1: sink.clickhouse: required key is missing",
		},
		{
			name: "required key present but empty",
			yaml: strings.Replace(base, "table: events", `table: ""`, 1),
			want: `pipeline.yaml:11:12: sink.clickhouse.table: must not be empty`,
		},
		{
			name: "unset required variable",
			yaml: strings.Replace(base, "[k1:9092]", `["${KAFKA_BROKERS:?set it to host:port}"]`, 1),
			want: `pipeline.yaml:5:16: ${KAFKA_BROKERS}: KAFKA_BROKERS is required: set it to host:port`,
		},
		{
			name: "empty required variable",
			env:  map[string]string{"KAFKA_BROKERS": ""},
			yaml: strings.Replace(base, "[k1:9092]", `["${KAFKA_BROKERS:?}"]`, 1),
			want: `pipeline.yaml:5:16: ${KAFKA_BROKERS}: KAFKA_BROKERS is required`,
		},
		{
			name: "unset variable",
			yaml: strings.Replace(base, "group_id: g", "group_id: ${GROUP}", 1),
			want: `pipeline.yaml:7:15: ${GROUP}: environment variable GROUP is not set`,
		},
		{
			name: "malformed reference",
			yaml: strings.Replace(base, "group_id: g", "group_id: ${GROUP-x}", 1),
			want: `pipeline.yaml:7:15: ${GROUP-x}: invalid reference: use ${NAME}, ${NAME:-default} or ${NAME:?message}, where NAME is letters, digits and _`,
		},
		{
			name: "unterminated reference",
			yaml: strings.Replace(base, "group_id: g", "group_id: ${GROUP", 1),
			want: `pipeline.yaml:7:15: unterminated "${"; write "$$" for a literal "$"`,
		},
		{
			name: "unsafe value inside a longer unquoted value",
			env:  map[string]string{"SUFFIX": "x #y"},
			yaml: strings.Replace(base, "group_id: g", "group_id: g-${SUFFIX}", 1),
			want: `pipeline.yaml:7:17: ${SUFFIX}: the value contains characters that are special in YAML; put the whole value in double quotes`,
		},
		{
			name: "wrong scalar type",
			yaml: base + `    batch: {max_rows: "many"}` + "\n",
			want: `pipeline.yaml:12:23: sink.clickhouse.batch.max_rows: expected an integer, got "many"`,
		},
		{
			name: "list where map expected",
			yaml: base + "    batch: [1, 2]\n",
			want: `pipeline.yaml:12:12: sink.clickhouse.batch: expected a mapping, got a list`,
		},
		{
			name: "map where list expected",
			yaml: strings.Replace(base, "[events]", "{a: b}", 1),
			want: `pipeline.yaml:6:13: source.kafka.topics: expected a list, got a mapping`,
		},
		{
			name: "enum value not allowed",
			yaml: strings.Replace(base, "    group_id: g\n", "    group_id: g\n    start_offset: middle\n", 1),
			want: `pipeline.yaml:8:19: source.kafka.start_offset: must be one of earliest, latest; got "middle"`,
		},
		{
			name: "decode format not allowed",
			yaml: base + "decode: {format: thrift}\n",
			want: `pipeline.yaml:12:18: decode.format: must be one of json, avro, protobuf, raw; got "thrift"`,
		},
		{
			name: "raw format without a column for the value",
			yaml: base + "    columns: {off: _offset}\ndecode: {format: raw}\n",
			want: `pipeline.yaml:13:18: decode.format: raw: sink.clickhouse.columns maps no column to _raw, so the records' values would go nowhere`,
		},
		{
			name: "raw format with a transform",
			yaml: base + "    columns: {v: _raw}\ndecode: {format: raw}\ntransform: [{filter: \"true\"}]\n",
			want: `pipeline.yaml:13:18: decode.format: raw records have no fields for transforms to read: leave transform out, or decode them as json or avro`,
		},
		{
			name: "removed insert path",
			yaml: base + "    insert_path: driver\n",
			want: `pipeline.yaml:12:18: sink.clickhouse.insert_path: "driver" was removed: every insert is encoded in the Native format and sent with ch-go; set "chgo" or delete the key`,
		},
		{
			name: "unknown insert path",
			yaml: base + "    insert_path: http\n",
			want: `pipeline.yaml:12:18: sink.clickhouse.insert_path: must be one of chgo; got "http"`,
		},
		{
			name: "avro confluent without a registry",
			yaml: base + "decode: {format: avro}\n",
			want: `pipeline.yaml:12:1: decode.avro.registry.url: required key is missing`,
		},
		{
			name: "low ratio not below high ratio",
			yaml: base + "backpressure:\n  high_ratio: 0.6\n  low_ratio: 0.7\n",
			want: `pipeline.yaml:14:14: backpressure.low_ratio: must be less than high_ratio (0.6), got 0.7`,
		},
		{
			name: "ratio out of range",
			yaml: base + "backpressure: {high_ratio: 1.5}\n",
			want: `pipeline.yaml:12:28: backpressure.high_ratio: must be between 0 and 1 (exclusive), got 1.5`,
		},
		{
			name: "negative max rows",
			yaml: base + "    batch:\n      max_rows: -5\n",
			want: `pipeline.yaml:13:17: sink.clickhouse.batch.max_rows: must be > 0, got -5`,
		},
		{
			name: "negative byte size",
			yaml: base + "backpressure: {max_inflight_bytes: -1}\n",
			want: `pipeline.yaml:12:36: backpressure.max_inflight_bytes: must not be negative, got -1`,
		},
		{
			name: "duration out of range",
			yaml: base + "    batch: {linger: 20m}\n",
			want: `pipeline.yaml:12:21: sink.clickhouse.batch.linger: must be at most 10m0s, got 20m0s`,
		},
		{
			name: "drain timeout and its commit longer than the rebalance timeout",
			yaml: base + "checkpoint: {drain_timeout: 55s}\n",
			want: `pipeline.yaml:12:29: checkpoint.drain_timeout: 55s plus the 10s a revoke's commit may take (1m5s) must fit source.kafka.rebalance_timeout (1m0s): ` +
				`a member still in its revoke when the rebalance timeout ends is dropped from the group and its commit refused; ` +
				`lower checkpoint.drain_timeout to at most 50s or raise source.kafka.rebalance_timeout to at least 1m5s`,
		},
		{
			name: "rebalance timeout shorter than a revoke's commit",
			yaml: strings.Replace(base, "    group_id: g\n", "    group_id: g\n    rebalance_timeout: 6s\n", 1),
			want: `pipeline.yaml:8:24: checkpoint.drain_timeout: 25s plus the 10s a revoke's commit may take (35s) must fit source.kafka.rebalance_timeout (6s): ` +
				`a member still in its revoke when the rebalance timeout ends is dropped from the group and its commit refused; ` +
				`raise source.kafka.rebalance_timeout to at least 35s`,
		},
		{
			name: "duplicate key",
			yaml: base + "    table: other\n",
			want: `pipeline.yaml:12:5: sink.clickhouse.table: duplicate key "table" (first defined at line 11)`,
		},
		{
			name: "sasl without mechanism",
			yaml: strings.Replace(base, "    group_id: g\n", "    group_id: g\n    sasl:\n      username: u\n", 1),
			want: `pipeline.yaml:8:5: source.kafka.sasl.mechanism: required key is missing`,
		},
		{
			name: "settings value not scalar",
			yaml: base + "    settings: {max_threads: [1]}\n",
			want: `pipeline.yaml:12:29: sink.clickhouse.settings.max_threads: setting values must be scalars (integer, number, boolean or string), got a list`,
		},
		{
			name: "metrics listen not an address",
			yaml: base + "metrics: {listen: nowhere}\n",
			want: `pipeline.yaml:12:19: metrics.listen: must be host:port (e.g. 127.0.0.1:9090) or "off"; got "nowhere"`,
		},
		{
			name: "document is not a mapping",
			yaml: "- a\n- b\n",
			want: `pipeline.yaml:1:1: expected a mapping, got a list`,
		},
		{
			name: "yaml syntax error",
			yaml: base + "    table: x: y\n",
			want: `pipeline.yaml:12: invalid YAML: mapping values are not allowed in this context`,
		},
		{
			name: "multiple errors at once",
			yaml: `pipeline:
  workers: -1
source:
  kafka:
    brokers: [k1:9092]
    topics: events
    group_id: g
    start_offset: middle
sink:
  clickhouse:
    addr: [c1:9000]
    batch: {max_rows: 0, linger: 5}
log: {level: loud}
`,
			want: `pipeline.yaml:1:1: pipeline.name: required key is missing
pipeline.yaml:2:12: pipeline.workers: must be >= 0, got -1
pipeline.yaml:6:13: source.kafka.topics: expected a list, got "events"
pipeline.yaml:8:19: source.kafka.start_offset: must be one of earliest, latest; got "middle"
pipeline.yaml:10:3: sink.clickhouse.table: required key is missing
pipeline.yaml:12:23: sink.clickhouse.batch.max_rows: must be > 0, got 0
pipeline.yaml:12:34: sink.clickhouse.batch.linger: invalid duration 5: use a unit, e.g. 5s
pipeline.yaml:13:14: log.level: must be one of debug, info, warn, error; got "loud"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "pipeline.yaml", env(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q\nconfig:\n%s", tt.want, c.Redacted())
			}
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want *Errors", err)
			}
			if c != nil {
				t.Errorf("Parse returned a config along with the error")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error mismatch\ngot:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestErrorsUnwrap(t *testing.T) {
	_, err := Parse([]byte("pipeline: {workers: -1}\n"), "f.yaml", nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("errors.As(*Error) failed on %v", err)
	}
	want := Error{File: "f.yaml", Line: 1, Column: 1, Path: "pipeline.name", Msg: "required key is missing"}
	if *e != want {
		t.Errorf("first error = %+v, want %+v", *e, want)
	}
}

func readExample(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestExample(t *testing.T) {
	c, err := Parse(readExample(t), "example.yaml", env(map[string]string{
		"KAFKA_BROKERS":       "a:9092, b:9092,",
		"CLICKHOUSE_PASSWORD": `p@ss: #wo"rd'`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Pipeline.Name = "demo"
	k := want.Source.Kafka
	k.Brokers = []string{"a:9092", "b:9092"}
	k.Topics = []string{"events"}
	k.GroupID = "etl-demo"
	k.ClientID = "etl-demo"
	ch := want.Sink.ClickHouse
	ch.Addr = []string{"127.0.0.1:9000"}
	ch.Table = "events"
	ch.Password = `p@ss: #wo"rd'`
	want.Decode.OnError = "fail" // derived: no dead-letter topic
	if !reflect.DeepEqual(c, want) {
		t.Errorf("parsed config differs\ngot:\n%s\nwant:\n%s", c.Redacted(), want.Redacted())
	}
	if c.Sink.ClickHouse.Password.Value() != `p@ss: #wo"rd'` {
		t.Errorf("password = %q", c.Sink.ClickHouse.Password.Value())
	}
}

func TestExampleWithoutEnvironment(t *testing.T) {
	c, err := Parse(readExample(t), "example.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Source.Kafka.Brokers; !reflect.DeepEqual(got, []string{"127.0.0.1:9092"}) {
		t.Errorf("brokers = %q", got)
	}
	if got := c.Sink.ClickHouse.Password.Value(); got != "" {
		t.Errorf("password = %q, want empty", got)
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(base, "group_id: g", "group_id: ${ETL_TEST_GROUP}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ETL_TEST_GROUP", "from-env")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source.Kafka.GroupID != "from-env" {
		t.Errorf("group_id = %q, want from-env", c.Source.Kafka.GroupID)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want os.ErrNotExist", err)
	}
}

// TestInterpolation checks that values land in the parsed config exactly
// as given, in every quoting context, without changing the YAML structure.
func TestInterpolation(t *testing.T) {
	tests := []struct {
		name  string
		value string // value of $V, unset if "<unset>"
		table string // YAML text after "table: "
		want  string
	}{
		{"dollar dollar is a literal dollar", "", `"price$$usd"`, "price$usd"},
		{"dollar dollar unquoted", "", `a$$b`, "a$b"},
		{"lone dollar stays", "", `cost$5`, "cost$5"},
		{"default when unset", "<unset>", `${V:-fallback}`, "fallback"},
		{"default when empty", "", `${V:-fallback}`, "fallback"},
		{"value beats default", "real", `${V:-fallback}`, "real"},
		{"default may contain colons", "<unset>", `"${V:-a:b}"`, "a:b"},
		{"plain value", "events_v2", `${V}`, "events_v2"},
		{"inside a longer value", "v2", `events_${V}_x`, "events_v2_x"},
		{"special characters unquoted", `a: b #c, [d]`, `${V}`, `a: b #c, [d]`},
		{"special characters double-quoted", `say "hi" \n`, `"<${V}>"`, `<say "hi" \n>`},
		{"special characters single-quoted", `it's`, `'${V}'`, `it's`},
		{"line break double-quoted", "a\nb", `"${V}"`, "a\nb"},
		{"line break unquoted", "a\nb", `${V}`, "a\nb"},
		{"leading dash", "- x", `${V}`, "- x"},
		{"number stays text for strings", "123", `${V}`, "123"},
		{"null spelling is kept", "null", `${V}`, "null"},
		{"tilde is kept", "~", `${V}`, "~"},
		{"comment is not interpolated", "<unset>", `t # ${V} is ignored`, "t"},
		{"apostrophe in plain value", "<unset>", `it's ${V:-x}`, "it's x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{}
			if tt.value != "<unset>" {
				vars["V"] = tt.value
			}
			src := strings.Replace(base, "table: events", "table: "+tt.table, 1) + "    database: db\n"
			c, err := Parse([]byte(src), "p.yaml", env(vars))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Sink.ClickHouse.Table; got != tt.want {
				t.Errorf("table = %q, want %q", got, tt.want)
			}
			// The line after the substitution must still parse as before.
			if got := c.Sink.ClickHouse.Database; got != "db" {
				t.Errorf("database = %q, want db (document structure changed)", got)
			}
		})
	}
}

func TestInterpolationKeepsLineNumbers(t *testing.T) {
	src := "pipeline:\n  name: \"${MULTI}\"\n  workers: -1\n"
	_, err := Parse([]byte(src), "p.yaml", env(map[string]string{"MULTI": "a\nb\nc"}))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:3:12: pipeline.workers: must be >= 0, got -1") {
		t.Errorf("error = %v, want the workers problem reported on line 3", err)
	}
}

func TestInterpolatedTypes(t *testing.T) {
	src := base + "    batch: {max_rows: ${ROWS}, max_bytes: ${BYTES:-1MiB}, linger: \"${LINGER}\", idle: ${IDLE}}\n"
	c, err := Parse([]byte(src), "p.yaml", env(map[string]string{"ROWS": "500", "LINGER": "250ms", "IDLE": "0s"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Batch{MaxRows: 500, MaxBytes: MiB, Linger: Duration(250 * time.Millisecond), Idle: 0, FirstAtOnce: true}
	if c.Sink.ClickHouse.Batch != want {
		t.Errorf("batch = %+v, want %+v", c.Sink.ClickHouse.Batch, want)
	}
}

func TestDurationsAndByteSizes(t *testing.T) {
	durations := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"500ms", 500 * time.Millisecond, ""},
		{"5s", 5 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"2h", 2 * time.Hour, ""},
		{"1.5s", 1500 * time.Millisecond, ""},
		{`"10us"`, 10 * time.Microsecond, ""},
		{"0s", 0, ""},
		{"5", 0, "invalid duration 5: use a unit, e.g. 5s"},
		{"1.5", 0, "invalid duration 1.5: use a unit, e.g. 5s"},
		{"5 seconds", 0, `invalid duration "5 seconds": use a number with a unit (ns, us, ms, s, m, h), e.g. 500ms, 5s, 1m30s`},
		{"[5s]", 0, "expected a duration such as 5s, got a list"},
	}
	for _, tt := range durations {
		n := scalarNode(t, tt.in)
		got, msg := parseDuration(n)
		if msg != tt.wantErr || got.D() != tt.want {
			t.Errorf("parseDuration(%s) = %v, %q; want %v, %q", tt.in, got, msg, tt.want, tt.wantErr)
		}
	}

	const unitsErr = "use an integer optionally followed (without a space) by one of B, KB, MB, GB, KiB, MiB, GiB, TiB, e.g. 64MiB"
	sizes := []struct {
		in      string
		want    ByteSize
		wantErr string
	}{
		{"0", 0, ""},
		{"1048576", 1 << 20, ""},
		{"0x400", 1024, ""},
		{"512B", 512, ""},
		{"100KB", 100_000, ""},
		{"1MB", 1_000_000, ""},
		{"2GB", 2_000_000_000, ""},
		{"64KiB", 64 << 10, ""},
		{"512MiB", 512 << 20, ""},
		{"1GiB", 1 << 30, ""},
		{"2TiB", 2 << 40, ""},
		{`"4096"`, 4096, ""},
		{"64 MB", 0, `invalid byte size "64 MB": ` + unitsErr},
		{"64XB", 0, `invalid byte size "64XB": ` + unitsErr},
		{"64mib", 0, `invalid byte size "64mib": ` + unitsErr},
		{"64kb", 0, `invalid byte size "64kb": ` + unitsErr},
		{"MiB", 0, `invalid byte size "MiB": ` + unitsErr},
		{"1.5GiB", 0, `invalid byte size "1.5GiB": ` + unitsErr},
		{"1.5", 0, `invalid byte size 1.5: ` + unitsErr},
		{"9999999TiB", 0, `byte size "9999999TiB" is too large`},
	}
	for _, tt := range sizes {
		n := scalarNode(t, tt.in)
		got, msg := parseByteSize(n)
		if msg != tt.wantErr || got != tt.want {
			t.Errorf("parseByteSize(%s) = %d, %q; want %d, %q", tt.in, got, msg, tt.want, tt.wantErr)
		}
	}

	strs := map[ByteSize]string{0: "0", 512: "512B", 64 * KiB: "64KiB", 64 * MiB: "64MiB", 100_000: "100KB", 1001: "1001B", 3 * TiB: "3TiB"}
	for b, want := range strs {
		if got := b.String(); got != want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(b), got, want)
		}
	}
}

func scalarNode(t *testing.T, text string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

func TestSecretsAreMasked(t *testing.T) {
	src := strings.Replace(base, "    table: events\n", "    table: events\n    password: ch-secret-1\n", 1)
	src = strings.Replace(src, "    group_id: g\n", "    group_id: g\n    sasl: {mechanism: PLAIN, username: u, password: kafka-secret-2}\n", 1)
	c, err := Parse([]byte(src), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sink.ClickHouse.Password.Value() != "ch-secret-1" || c.Source.Kafka.SASL.Password.Value() != "kafka-secret-2" {
		t.Fatalf("secrets not parsed: %q %q", c.Sink.ClickHouse.Password.Value(), c.Source.Kafka.SASL.Password.Value())
	}
	// A registry URL carrying a password (refused later, when the
	// registry client is built) is masked too.
	c.Decode.Avro.Registry = &Registry{URL: "https://u:url-secret-3@registry:8081", Username: "u", Password: "registry-secret-4"}
	jsonOut, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var logOut strings.Builder
	slog.New(slog.NewJSONHandler(&logOut, nil)).Info("config", "password", c.Sink.ClickHouse.Password, "sasl", c.Source.Kafka.SASL,
		"registry", c.Decode.Avro.Registry.URL)
	outputs := map[string]string{
		"Redacted": c.Redacted(),
		"%v":       fmt.Sprintf("%v", *c.Sink.ClickHouse),
		"%+v":      fmt.Sprintf("%+v", *c.Source.Kafka.SASL),
		"%#v":      fmt.Sprintf("%#v", *c.Source.Kafka.SASL),
		"registry": fmt.Sprintf("%v %+v", *c.Decode.Avro.Registry, c.Decode.Avro.Registry.URL),
		"json":     string(jsonOut),
		"slog":     logOut.String(),
	}
	for name, out := range outputs {
		if strings.Contains(out, "secret") {
			t.Errorf("%s output reveals a secret:\n%s", name, out)
		}
		if !strings.Contains(out, "******") {
			t.Errorf("%s output has no masked secret:\n%s", name, out)
		}
	}
	if got := Secret("").String(); got != "" {
		t.Errorf("empty secret String() = %q, want empty", got)
	}
}

func TestRedactedRoundTrips(t *testing.T) {
	c, err := Parse(readExample(t), "example.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse([]byte(c.Redacted()), "redacted.yaml", nil)
	if err != nil {
		t.Fatalf("Redacted output does not parse: %v\n%s", err, c.Redacted())
	}
	if !reflect.DeepEqual(c, again) {
		t.Errorf("Redacted output parses to a different config:\n%s", again.Redacted())
	}
}

func TestSettingsValues(t *testing.T) {
	src := base + "    settings: {max_threads: 4, ratio: 0.5, async_insert: true, mode: fast, big: 0x10}\n"
	c, err := Parse([]byte(src), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max_threads": int64(4), "ratio": 0.5, "async_insert": true, "mode": "fast", "big": int64(16)}
	if !reflect.DeepEqual(c.Sink.ClickHouse.Settings, want) {
		t.Errorf("settings = %#v, want %#v", c.Sink.ClickHouse.Settings, want)
	}
}

func TestValidate(t *testing.T) {
	if err := Defaults().Validate(); err == nil || !strings.Contains(err.Error(), "pipeline.name: is required") {
		t.Errorf("Defaults().Validate() = %v, want pipeline.name required", err)
	}
	c := Defaults()
	c.Pipeline.Name = "p"
	c.Source.Kafka.Brokers = []string{"k:9092"}
	c.Source.Kafka.Topics = []string{"t"}
	c.Source.Kafka.GroupID = "g"
	c.Sink.ClickHouse.Addr = []string{"c:9000"}
	c.Sink.ClickHouse.Table = "t"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
	// A revoke's drain and commit must fit the rebalance timeout; exactly
	// fitting is allowed.
	c.Checkpoint.DrainTimeout = Duration(50 * time.Second)
	if err := c.Validate(); err != nil {
		t.Errorf("drain_timeout 50s, rebalance_timeout 60s: Validate() = %v, want nil", err)
	}
	c.Checkpoint.DrainTimeout = Duration(51 * time.Second)
	want := "checkpoint.drain_timeout: 51s plus the 10s a revoke's commit may take (1m1s) must fit source.kafka.rebalance_timeout (1m0s): " +
		"a member still in its revoke when the rebalance timeout ends is dropped from the group and its commit refused; " +
		"lower checkpoint.drain_timeout to at most 50s or raise source.kafka.rebalance_timeout to at least 1m1s"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
	c.Source.Kafka.RebalanceTimeout = Duration(61 * time.Second)
	if err := c.Validate(); err != nil {
		t.Errorf("drain_timeout 51s, rebalance_timeout 61s: Validate() = %v, want nil", err)
	}
	c.Checkpoint.DrainTimeout = Duration(25 * time.Second)
	c.Source.Kafka.RebalanceTimeout = Duration(60 * time.Second)
	c.Sink.ClickHouse.TLS = &TLS{Enabled: true, CertFile: "client.pem"}
	want = "sink.clickhouse.tls.key_file: must be set when cert_file is set"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
	c.Sink.ClickHouse.TLS = &TLS{Enabled: true, CAFile: "ca.pem"}
	c.Sink.ClickHouse.Retry.MaxBackoff = Duration(time.Millisecond)
	want = "sink.clickhouse.retry.max_backoff: must be >= initial_backoff (100ms), got 1ms"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
}

// TestReferenceDefaults checks that every default given in
// docs/CONFIGURATION.md equals the value in Defaults().
func TestReferenceDefaults(t *testing.T) {
	doc, err := os.ReadFile("../docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	defaults := reflect.ValueOf(Defaults()).Elem()
	checked := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		path := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if !strings.Contains(path, ".") {
			continue // not a key row (units, interpolation syntax)
		}
		def := strings.TrimSpace(cells[3])
		field, ok := fieldAt(defaults, path)
		if !ok {
			t.Errorf("reference documents unknown key %q", path)
			continue
		}
		if !strings.HasPrefix(def, "`") {
			// No literal default (required key, empty, or derived at runtime):
			// the built-in value must then be the zero value.
			if !field.IsZero() && field.Kind() != reflect.Pointer && field.Kind() != reflect.Struct {
				t.Errorf("%s: reference gives no default, Defaults() has %v", path, field.Interface())
			}
			continue
		}
		text := strings.Trim(def, "`")
		if field.Kind() == reflect.String {
			text = fmt.Sprintf("%q", text)
		}
		d := newDecoder("doc")
		got := reflect.New(field.Type()).Elem()
		d.decode(scalarNode(t, text), got, path)
		if len(d.errs) > 0 {
			t.Errorf("%s: reference default %s does not parse: %v", path, def, d.errs[0])
			continue
		}
		if !reflect.DeepEqual(got.Interface(), field.Interface()) {
			t.Errorf("%s: reference default %s, Defaults() has %v", path, def, field.Interface())
		}
		checked++
	}
	if checked < 30 {
		t.Errorf("checked only %d defaults in the reference", checked)
	}
}

// TestReferenceCoversEveryKey checks that every key of Config has a row in
// docs/CONFIGURATION.md.
func TestReferenceCoversEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if yamlName(f) == "-" {
				continue // not a key: derived after decoding
			}
			path := joinPath(prefix, yamlName(f))
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft, path)
				continue
			}
			if !strings.Contains(string(doc), "| `"+path+"` |") {
				t.Errorf("key %s is not documented", path)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
}

// fieldAt follows a dotted yaml key path through struct fields.
func fieldAt(v reflect.Value, path string) (reflect.Value, bool) {
	for _, key := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.New(v.Type().Elem())
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return v, false
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if yamlName(v.Type().Field(i)) == key {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return v, false
		}
	}
	return v, true
}

func TestOnErrorDerived(t *testing.T) {
	base := "pipeline: {name: x}\nsource: {kafka: {brokers: [a:1], topics: [t], group_id: g}}\nsink: {clickhouse: {addr: [b:2], table: t}}\n"
	for _, tt := range []struct{ extra, want, err string }{
		{"", "fail", ""},
		{"decode: {dlq: {topic: dead}}\n", "dlq", ""},
		{"decode: {on_error: skip, dlq: {topic: dead}}\n", "skip", ""},
		{"decode: {on_error: dlq}\n", "", "f.yaml:4:1: decode.dlq.topic: required key is missing"},
		{"decode: {on_error: drop}\n", "", `f.yaml:4:20: decode.on_error: must be one of dlq, skip, fail; got "drop"`},
	} {
		c, err := Parse([]byte(base+tt.extra), "f.yaml", env(nil))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %s", tt.extra, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.extra, err)
			continue
		}
		if string(c.Decode.OnError) != tt.want {
			t.Errorf("%q: on_error %q, want %q", tt.extra, c.Decode.OnError, tt.want)
		}
	}
}

// TestMaxRecordBytesDefault: a record value is bounded by default (1 MiB,
// the default fetch_max_partition_bytes); 0 still lifts the limit and a
// negative size is refused.
func TestMaxRecordBytesDefault(t *testing.T) {
	c, err := Parse([]byte(base), "f.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Decode.MaxRecordBytes; got != 1*MiB {
		t.Errorf("default max_record_bytes = %d, want %d", got, 1*MiB)
	}
	for _, tt := range []struct {
		value string
		want  ByteSize
		err   string
	}{
		{"0", 0, ""},
		{"64KiB", 64 * KiB, ""},
		{"16MiB", 16 * MiB, ""},
		{"-1", 0, "decode.max_record_bytes: must be >= 0, got -1"},
	} {
		c, err := Parse([]byte(base+"decode: {max_record_bytes: "+tt.value+"}\n"), "f.yaml", env(nil))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %s", tt.value, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.value, err)
			continue
		}
		if c.Decode.MaxRecordBytes != tt.want {
			t.Errorf("%s: max_record_bytes = %d, want %d", tt.value, c.Decode.MaxRecordBytes, tt.want)
		}
	}
}

// TestRowsPerRecordDefaults: a record's rows are bounded by default
// (100,000 rows; bytes: the smallest batch.max_bytes of the sinks, or the
// key when set); negative values are refused with the key's path.
func TestRowsPerRecordDefaults(t *testing.T) {
	c, err := Parse([]byte(base), "f.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Decode.MaxRowsPerRecord != 100_000 || c.RowBytesPerRecord() != int64(16*MiB) {
		t.Errorf("defaults: max_rows_per_record %d, bytes per record %d; want 100000, %d", c.Decode.MaxRowsPerRecord, c.RowBytesPerRecord(), 16*MiB)
	}
	multi := `pipeline: {name: demo}
source: {kafka: {brokers: [k1:9092], topics: [events], group_id: g}}
sinks:
  a: {clickhouse: {addr: [c1:9000], table: a, batch: {max_bytes: 8MiB}}}
  b: {clickhouse: {addr: [c1:9000], table: b, batch: {max_bytes: 2MiB}}}
`
	if c, err = Parse([]byte(multi), "f.yaml", env(nil)); err != nil {
		t.Fatal(err)
	}
	if got := c.RowBytesPerRecord(); got != int64(2*MiB) {
		t.Errorf("two sinks: bytes per record %d, want the smaller batch.max_bytes %d", got, 2*MiB)
	}
	if c, err = Parse([]byte(multi+"decode: {max_bytes_per_record: 16MiB, max_rows_per_record: 0}\n"), "f.yaml", env(nil)); err != nil {
		t.Fatal(err)
	}
	if c.RowBytesPerRecord() != int64(16*MiB) || c.Decode.MaxRowsPerRecord != 0 {
		t.Errorf("set: bytes per record %d, rows %d; want %d, 0", c.RowBytesPerRecord(), c.Decode.MaxRowsPerRecord, 16*MiB)
	}
	for _, tt := range []struct{ yaml, err string }{
		{"decode: {max_rows_per_record: -1}", "decode.max_rows_per_record: must be >= 0 (0: no limit), got -1"},
		{"decode: {max_bytes_per_record: -1}", "decode.max_bytes_per_record: must be >= 0"},
	} {
		if _, err := Parse([]byte(base+tt.yaml+"\n"), "f.yaml", env(nil)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want %s", tt.yaml, err, tt.err)
		}
	}
}

func TestTableSchemaKeys(t *testing.T) {
	y := `pipeline: {name: p}
source:
  kafka: {brokers: [b:9092], topics: [t], group_id: g}
decode:
  fields:
    zeta: String
    alpha: UInt32
    mid: DateTime
sink:
  clickhouse:
    addr: [c:9000]
    table: t
    schema: {create: true, add_columns: true, order_by: [alpha, mid], engine: ReplacingMergeTree, low_cardinality: true}
`
	c, err := Parse([]byte(y), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Sink.ClickHouse.Schema
	if !sc.Create || !sc.AddColumns || !sc.LowCardinality || sc.Engine != "ReplacingMergeTree" || strings.Join(sc.OrderBy, ",") != "alpha,mid" {
		t.Fatalf("schema = %+v", sc)
	}
	if got := strings.Join(c.Decode.FieldOrder, ","); got != "zeta,alpha,mid" {
		t.Fatalf("FieldOrder = %s, want the file's order", got)
	}
	for _, c := range []struct{ edit, want string }{
		{"order_by: [alpha, mid]", "order_by: [alpha, alpha]"},
		{"order_by: [alpha, mid]", `order_by: [""]`},
	} {
		_, err := Parse([]byte(strings.Replace(y, c.edit, c.want, 1)), "p.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), "sink.clickhouse.schema.order_by") {
			t.Errorf("%s: %v", c.want, err)
		}
	}
	noFields := strings.Replace(y, "  fields:\n    zeta: String\n    alpha: UInt32\n    mid: DateTime\n", "  format: json\n", 1)
	_, err = Parse([]byte(noFields), "p.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "add_columns needs decode.fields") || !strings.Contains(err.Error(), "create needs decode.fields") {
		t.Errorf("create and add_columns without types: %v", err)
	}
}
