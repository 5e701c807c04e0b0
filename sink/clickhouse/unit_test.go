package clickhouse

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	chgo "github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"
	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPlanPure(t *testing.T) {
	cols := []ColumnInfo{
		{Name: "id", Type: "UInt64"},
		{Name: "msg", Type: "Nullable(String)"},
		{Name: "twice", Type: "UInt64", DefaultKind: "MATERIALIZED", DefaultExpr: "id * 2"},
		{Name: "plus", Type: "UInt64", DefaultKind: "ALIAS", DefaultExpr: "id + 1"},
		{Name: "tag", Type: "String", DefaultKind: "DEFAULT", DefaultExpr: "'x'"},
	}
	tg, err := Plan("db", "events", cols, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "INSERT INTO `db`.`events` (`id`, `msg`, `tag`)"; tg.Query != want {
		t.Errorf("query = %q, want %q", tg.Query, want)
	}
	if got := strings.Join(tg.Fields, ","); got != "id,msg,tag" {
		t.Errorf("fields = %s", got)
	}
	if got := strings.Join(tg.Schema.Names, ","); got != "id,msg,tag" {
		t.Errorf("schema names = %s", got)
	}
	if tg.Schema.Types[1].Name != "Nullable(String)" {
		t.Errorf("type 1 = %s", tg.Schema.Types[1].Name)
	}

	// The mapping lists only the columns whose field has another name:
	// the others still take the field of their own name.
	tg, err = Plan("db", "events", cols, Mapping{Columns: map[string]string{"msg": "message"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "INSERT INTO `db`.`events` (`id`, `msg`, `tag`)"; tg.Query != want {
		t.Errorf("partial mapping query = %q, want %q", tg.Query, want)
	}
	if got := strings.Join(tg.Fields, ","); got != "id,message,tag" {
		t.Errorf("partial mapping fields = %s", got)
	}
	// An excluded column is left out of the INSERT: the server fills it.
	tg, err = Plan("db", "events", cols, Mapping{Columns: map[string]string{"id": "event_id"}, Exclude: []string{"tag"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "INSERT INTO `db`.`events` (`id`, `msg`)"; tg.Query != want {
		t.Errorf("excluding query = %q, want %q", tg.Query, want)
	}
	if got := strings.Join(tg.Fields, ","); got != "event_id,msg" {
		t.Errorf("excluding fields = %s", got)
	}
	_, err = Plan("db", "events", cols, Mapping{Exclude: []string{"tag", "gone"}})
	if err == nil || !strings.Contains(err.Error(), "exclude_columns names column(s) the table lacks: gone") {
		t.Errorf("unknown excluded column: err = %v", err)
	}
	_, err = Plan("db", "events", cols, Mapping{Columns: map[string]string{"tag": "label"}, Exclude: []string{"tag"}})
	if err == nil || !strings.Contains(err.Error(), "both mapped") {
		t.Errorf("mapped and excluded: err = %v", err)
	}
	_, err = Plan("db", "events", cols, Mapping{Exclude: []string{"id", "msg", "tag"}})
	if err == nil || !strings.Contains(err.Error(), "no insertable column") {
		t.Errorf("everything excluded: err = %v", err)
	}

	_, err = Plan("db", "events", cols, Mapping{Columns: map[string]string{"nope": "x", "id": "id"}})
	if err == nil || !strings.Contains(err.Error(), "nope") || !strings.Contains(err.Error(), "db.events") {
		t.Errorf("unknown mapped column: err = %v", err)
	}
	_, err = Plan("db", "events", cols, Mapping{Columns: map[string]string{"twice": "x"}})
	if err == nil || !strings.Contains(err.Error(), "MATERIALIZED") {
		t.Errorf("materialized mapped column: err = %v", err)
	}
	_, err = Plan("db", "events", append(cols, ColumnInfo{Name: "m", Type: "Variant(String, UInt64)"}), Mapping{})
	if err == nil || !strings.Contains(err.Error(), "column m") || !strings.Contains(err.Error(), "Variant(String, UInt64)") {
		t.Errorf("unsupported type: err = %v", err)
	}
	_, err = Plan("db", "events", []ColumnInfo{{Name: "a`b", Type: "UInt8"}}, Mapping{})
	if err == nil || !strings.Contains(err.Error(), "backtick") {
		t.Errorf("backtick identifier: err = %v", err)
	}
}

func TestConvertSettings(t *testing.T) {
	got, err := convertSettings(map[string]any{
		"a": int64(5), "b": float64(3), "c": true, "d": "best_effort", "e": 1.5, "f": uint64(7), "g": 9,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": 5, "b": 3, "c": true, "d": "best_effort", "e": "1.5", "f": 7, "g": 9}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %#v (%T), want %#v (%T)", k, got[k], got[k], w, w)
		}
	}
	if _, err := convertSettings(map[string]any{"x": []int{1}}); err == nil || !strings.Contains(err.Error(), "setting x") {
		t.Errorf("slice setting: err = %v", err)
	}
	if _, err := convertSettings(map[string]any{"x": uint64(1 << 63)}); err == nil {
		t.Error("uint64 overflow: no error")
	}
}

// TestPermanentClassification: each server code in the table was either
// raised by the 18.16 server in a test (the test is named), or is taken
// from ClickHouse's src/Common/ErrorCodes.cpp with the meaning documented
// there (source "ErrorCodes.cpp", for codes newer servers raise or that
// need a fault these tests cannot make, such as a full disk). Each code is
// classified alike from ch-go's exception (inserts) and clickhouse-go's
// (queries).
func TestPermanentClassification(t *testing.T) {
	wrap := func(err error) error { return &InsertError{Table: "db.t", Err: err} }
	type exc int32 // a server exception of this code, of either type
	for _, tc := range []struct {
		name   string
		source string // the test that saw the code from the server, or its documentation
		err    any    // an error, or an exc
		want   bool
	}{
		{"no such column", "pipeline TestTableDropColumn", exc(16), true},
		{"cannot parse date", "sink/clickhouse TestShardBisectsRefusedRows", exc(38), true},
		{"readonly", "pipeline TestServerRefusals/readonly", exc(164), true},
		{"wrong password", "sink/clickhouse TestChgoErrors", exc(193), true},
		{"unknown table", "pipeline TestServerRefusals/table-dropped", exc(60), true},
		{"memory limit", "pipeline TestServerRefusals/memory-limit", exc(241), false},
		{"table read only", "e2e TestExactlyOnceZooKeeperOutage", exc(242), false},
		{"too many parts", "pipeline TestServerRefusals/too-many-parts", exc(252), false},
		{"unknown status of insert", "pipeline TestExactlyOnceUnknownInsertStatus", exc(319), false},
		{"keeper", "e2e TestExactlyOnceZooKeeperOutage", exc(999), false},
		{"type mismatch", "ErrorCodes.cpp TYPE_MISMATCH", exc(53), true},
		{"cannot parse", "ErrorCodes.cpp CANNOT_PARSE_TEXT", exc(27), true},
		{"access denied", "ErrorCodes.cpp ACCESS_DENIED (20.x and later)", exc(497), true},
		{"auth failed", "ErrorCodes.cpp AUTHENTICATION_FAILED (20.x and later)", exc(516), true},
		{"not enough space", "ErrorCodes.cpp NOT_ENOUGH_SPACE (a disk reservation that fails)", exc(243), false},
		{"no zookeeper", "ErrorCodes.cpp NO_ZOOKEEPER (a server with no ZooKeeper configured)", exc(225), false},
		{"timeout exceeded", "ErrorCodes.cpp TIMEOUT_EXCEEDED", exc(159), false},
		{"append error", "", &appendError{err: errors.New(`could not convert "abc" to decimal`)}, true},
		{"setting type", "", &settingError{name: "max_block_size", value: "1", rev: 54412}, true},
		{"old server", "", &oldServerError{addr: "x:9000", rev: 54000}, true},
		{"type changed", "", &chgoTypeDrift{column: "n", planned: "UInt8", server: "Date"}, true},
		{"login refused, password file", "", &loginRefused{user: "u", err: &chgo.Exception{Code: 193}}, false},
		{"eof", "", io.EOF, false},
		{"deadline", "", context.DeadlineExceeded, false},
		{"canceled", "", context.Canceled, false},
		{"mismatch", "", &mismatchError{"chunk 0 has 2 columns"}, true},
	} {
		errs := []error{}
		switch e := tc.err.(type) {
		case exc:
			errs = append(errs, &chgo.Exception{Code: proto.Error(e), Name: "X", Message: "X: m"}, &ch.Exception{Code: int32(e), Message: "m"})
		case error:
			errs = append(errs, e)
		}
		for _, err := range errs {
			if got := Permanent(wrap(err)); got != tc.want {
				t.Errorf("%s (%s): Permanent(%T) = %v, want %v", tc.name, tc.source, err, got, tc.want)
			}
			if e, isExc := tc.err.(exc); isExc {
				if code, ok := exceptionCode(wrap(err)); !ok || code != int32(e) {
					t.Errorf("%s: exceptionCode(%T) = %d, %v; want %d", tc.name, err, code, ok, e)
				}
			}
		}
	}
	if Permanent(nil) {
		t.Error("Permanent(nil) = true")
	}
}

func TestInsertErrorMessage(t *testing.T) {
	err := &InsertError{Table: "db.t", Column: "amount", Type: "Decimal(18, 4)", Attempts: 3,
		Err: &appendError{spans: "events/0@1[10,20)", err: errors.New(`could not convert "x1" to decimal`)}}
	want := `insert into db.t: column amount (Decimal(18, 4)) (after 3 attempts): chunk with source events/0@1[10,20): could not convert "x1" to decimal`
	if err.Error() != want {
		t.Errorf("message\n got %s\nwant %s", err.Error(), want)
	}
}

func TestBackoffFullJitterCapped(t *testing.T) {
	s := NewShard(ShardOptions{Name: "b", InitialBackoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond})
	for attempt := 1; attempt <= 10; attempt++ {
		limit := min(10*time.Millisecond<<(attempt-1), 80*time.Millisecond)
		var maxSeen time.Duration
		for range 200 {
			d := s.backoff(attempt)
			if d < 0 || d > limit {
				t.Fatalf("attempt %d: backoff %v outside [0, %v]", attempt, d, limit)
			}
			maxSeen = max(maxSeen, d)
		}
		if maxSeen < limit/2 {
			t.Errorf("attempt %d: largest of 200 backoffs %v, want near %v", attempt, maxSeen, limit)
		}
	}
}

func TestMetricsRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1 := NewMetrics(reg, prometheus.Labels{"pipeline": "p"})
	m2 := NewMetrics(reg, prometheus.Labels{"pipeline": "p"})
	m1.forShard("0").records.Add(2)
	m2.forShard("0").records.Add(3)
	if got := testutil.ToFloat64(m1.records.WithLabelValues("0")); got != 5 {
		t.Errorf("shared counter = %v, want 5", got)
	}
	n, err := testutil.GatherAndCount(reg, "etl_queue_capacity", "etl_sink_records_total")
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 { // shard 0's children exist from forShard on
		t.Errorf("series = %d, want 2", n)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", err, probs)
	}
}

func TestResolveCompression(t *testing.T) {
	for _, tc := range []struct {
		setting string
		addrs   []string
		want    string
	}{
		{"auto", []string{"127.0.0.1:9000"}, "none"},
		{"auto", []string{"127.0.0.2:9000", "[::1]:9000", "localhost:9000", "LOCALHOST"}, "none"},
		{"AUTO", []string{"127.0.0.1:9000"}, "none"},
		{"auto", []string{"127.0.0.1:9000", "10.0.0.7:9000"}, "lz4"},
		{"auto", []string{"clickhouse.svc:9000"}, "lz4"}, // names are not resolved
		{"auto", []string{"localhost.example.com:9000"}, "lz4"},
		{"auto", []string{"[::ffff:10.1.2.3]:9000"}, "lz4"},
		{"lz4", []string{"127.0.0.1:9000"}, "lz4"},
		{"none", []string{"10.0.0.7:9000"}, "none"},
		{"zstd", []string{"127.0.0.1:9000"}, "zstd"},
		{"", []string{"10.0.0.7:9000"}, ""},
	} {
		if got := resolveCompression(tc.setting, tc.addrs); got != tc.want {
			t.Errorf("resolveCompression(%q, %v) = %q, want %q", tc.setting, tc.addrs, got, tc.want)
		}
	}
}

// TestSecretRotation: the password of a new connection is what
// PasswordFunc gives now, and the last good one while it fails.
func TestSecretRotation(t *testing.T) {
	pw, fail := "first", false
	s := &secret{fn: func() (string, error) {
		if fail {
			return "", errors.New("cannot read the file")
		}
		return pw, nil
	}, log: slog.New(slog.DiscardHandler), last: "from-config"}
	if got := s.get(); got != "first" {
		t.Fatalf("get = %q, want first", got)
	}
	pw = "second"
	if got := s.get(); got != "second" {
		t.Fatalf("after rotation get = %q, want second", got)
	}
	fail = true
	if got := s.get(); got != "second" {
		t.Fatalf("with the file unreadable get = %q, want the last good one", got)
	}
	fixed := &secret{last: "fixed"}
	if got := fixed.get(); got != "fixed" {
		t.Fatalf("without PasswordFunc get = %q", got)
	}
}

// TestLoginRefusedTransient: a refused login is permanent, unless the
// password comes from a file (loginRefused), when a retry may succeed.
func TestLoginRefusedTransient(t *testing.T) {
	refused := &ch.Exception{Code: 193, Name: "DB::Exception", Message: "Wrong password for user etl"}
	if !Permanent(&InsertError{Table: "t", Err: refused}) {
		t.Fatal("a wrong password with the password in the configuration is transient")
	}
	err := &InsertError{Table: "t", Err: &loginRefused{user: "etl", err: refused}}
	if Permanent(err) {
		t.Fatalf("%v is permanent", err)
	}
	if !strings.Contains(err.Error(), `refuses user "etl"`) || !strings.Contains(err.Error(), "Wrong password") {
		t.Fatalf("message %q", err)
	}
}
