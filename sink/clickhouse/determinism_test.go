package clickhouse

import (
	"slices"
	"strings"
	"testing"
)

// TestNondeterministicCalls: every function whose value differs when the
// same block is inserted again is found, in any case and inside other
// calls; names in string literals, quoted text, longer identifiers and
// names not followed by "(" are not; deterministic expressions pass.
func TestNondeterministicCalls(t *testing.T) {
	refused := []string{
		"now", "now64", "nowInBlock", "today", "yesterday", "NOW", "Now64", "current_timestamp", "CURRENT_DATE", "localtimestamp",
		"curdate", "sysdate", "utc_timestamp", "UTCTimestamp", "uptime", "zookeeperSessionUptime",
		"rand", "rand32", "rand64", "randConstant", "randUniform", "randNormal", "randomString", "randomFixedString",
		"randomPrintableASCII", "randomStringUTF8", "fuzzBits",
		"generateUUIDv4", "generateUUIDv7", "generateULID", "generateSnowflakeID", "generateSerialID",
		"blockNumber", "blockSize", "rowNumberInBlock", "rowNumberInAllBlocks", "neighbor", "runningDifference",
		"runningAccumulate", "runningDifferenceStartingWithFirstValue",
		"hostName", "hostname", "FQDN", "fullHostName", "serverUUID", "displayName", "getMacro", "version", "buildId",
		"timezone", "timeZone", "serverTimezone", "connectionId", "queryID", "initialQueryID", "transactionID",
		"filesystemAvailable", "filesystemFree",
	}
	for _, f := range refused {
		for _, expr := range []string{
			f + "()",
			f + " ()",
			"toDate(" + f + "(1, 'x'))",
			"if(a > 0, cityHash64(id), " + f + "())",
			"`x` + " + f + "(\n)",
		} {
			if got := NondeterministicCalls(expr); !slices.Equal(got, []string{f}) {
				t.Errorf("NondeterministicCalls(%q) = %q, want [%s]", expr, got, f)
			}
		}
	}
	for _, expr := range []string{
		"nowhere(x)", "my_now()", "now_ts", "now", "x.now", "'now()'", "'it''s now()'", `'\'now()'`, "concat('rand(', id)",
		"toDate(ts)", "cityHash64(id)", "toStartOfHour(ts)", "id * 2 + 1", "lower(name)", "currentDatabase()", "currentUser()",
		"timezoneOf(ts)", "toTimezone(ts, 'UTC')", "range(3)", "`now`", "\"rand\"", "dictGet('d', 'v', id)", "ingested",
		"toDateTime('2024-01-01 00:00:00')", "randomized", "generated_at", "my_rand(x)", "xrand()",
	} {
		if got := NondeterministicCalls(expr); len(got) != 0 {
			t.Errorf("NondeterministicCalls(%q) = %q, want none", expr, got)
		}
	}
	if got := NondeterministicCalls("now() + rand() + now() + toDate(today())"); !slices.Equal(got, []string{"now", "rand", "today"}) {
		t.Errorf("NondeterministicCalls = %q, want [now rand today]", got)
	}
	if got := ReadsExternalState("dictGetString('d', 'v', id) + joinGet(j, 'v', id) + dictget('d','x', id)"); !slices.Equal(got, []string{"dictGetString", "joinGet", "dictget"}) {
		t.Errorf("ReadsExternalState = %q", got)
	}
}

// TestTargetNondeterministic: which stored columns of a table make a
// replayed block differ, for the columns etl inserts and those it leaves
// to the server.
func TestTargetNondeterministic(t *testing.T) {
	cols := []ColumnInfo{
		{Name: "id", Type: "UInt64"},
		{Name: "ts", Type: "DateTime"},
		{Name: "mat_now", Type: "DateTime", DefaultKind: "MATERIALIZED", DefaultExpr: "now()"},
		{Name: "mat_hash", Type: "UInt64", DefaultKind: "MATERIALIZED", DefaultExpr: "cityHash64(id)"},
		{Name: "mat_day", Type: "Date", DefaultKind: "MATERIALIZED", DefaultExpr: "toDate(ts)"},
		{Name: "def_now", Type: "DateTime", DefaultKind: "DEFAULT", DefaultExpr: "now()"},     // excluded below
		{Name: "def_now_ins", Type: "DateTime", DefaultKind: "DEFAULT", DefaultExpr: "now()"}, // inserted: etl writes the zero value
		{Name: "def_day", Type: "Date", DefaultKind: "DEFAULT", DefaultExpr: "toDate(ts)"},    // excluded, deterministic
		{Name: "def_str", Type: "String", DefaultKind: "DEFAULT", DefaultExpr: "'now()'"},     // excluded, a literal
		{Name: "ali_now", Type: "DateTime", DefaultKind: "ALIAS", DefaultExpr: "now()"},       // not stored
		{Name: "mat_via_alias", Type: "Date", DefaultKind: "MATERIALIZED", DefaultExpr: "toDate(ali_now)"},
		{Name: "mat_via_def", Type: "UInt32", DefaultKind: "MATERIALIZED", DefaultExpr: "toUInt32(def_now)"},
		{Name: "mat_via_ins", Type: "UInt32", DefaultKind: "MATERIALIZED", DefaultExpr: "toUInt32(def_now_ins)"},
		{Name: "mat_dict", Type: "String", DefaultKind: "MATERIALIZED", DefaultExpr: "dictGetString('d', 'v', id)"},
		{Name: "def_macro", Type: "String", DefaultKind: "DEFAULT", DefaultExpr: "getMacro('replica')"}, // inserted, computed by etl
	}
	tg, err := Plan("db", "t", cols, Mapping{Exclude: []string{"def_now", "def_day", "def_str"}})
	if err != nil {
		t.Fatal(err)
	}
	// Client.Plan computes the computable DEFAULTs on the server; mark
	// def_macro as computed, as it would be.
	for _, p := range tg.pending {
		tg.defaults[p.col] = p.expr
	}
	got := map[string]NondeterministicColumn{}
	for _, c := range tg.Nondeterministic(cols) {
		got[c.Name] = c
	}
	want := map[string]string{
		"mat_now":       "calls now() (the time of the insert)",
		"def_now":       "calls now() (the time of the insert)",
		"mat_via_alias": "refers to column ali_now, which calls now()",
		"mat_via_def":   "refers to column def_now, which calls now()",
		"mat_dict":      "calls dictGetString()",
		"def_macro":     "calls getMacro() (the server that runs the insert)",
	}
	for name, why := range want {
		c, ok := got[name]
		if !ok {
			t.Errorf("column %s not found; got %v", name, got)
			continue
		}
		if !strings.Contains(c.Why, why) {
			t.Errorf("column %s: why = %q, want it to contain %q", name, c.Why, why)
		}
		if c.External != (name == "mat_dict") {
			t.Errorf("column %s: External = %v", name, c.External)
		}
		if c.Filled != (name == "def_macro") {
			t.Errorf("column %s: Filled = %v", name, c.Filled)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("column %s reported: %v", name, got[name])
		}
	}
	s := got["def_now"].String()
	for _, part := range []string{"def_now", "DEFAULT", "now()", "the time of the insert"} {
		if !strings.Contains(s, part) {
			t.Errorf("%q lacks %q", s, part)
		}
	}
}
