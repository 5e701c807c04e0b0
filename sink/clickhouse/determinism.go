package clickhouse

import (
	"fmt"
	"slices"
	"strings"
)

// Columns the server computes, and exactly-once delivery.
//
// Exactly-once relies on ClickHouse dropping a replayed block because it
// is identical to the first insert. The server computes some stored
// columns itself: every MATERIALIZED column, and the DEFAULT of a column
// the INSERT leaves out (exclude_columns). If such an expression calls a
// function whose value is not the same when the same block is inserted
// again (now(), rand(), generateUUIDv4(), ...), the replayed block's
// stored content differs from the first, the server keeps both and every
// replayed row reads twice. etl fills the other DEFAULT columns itself: a
// record without the field gets the type's zero value, or the DEFAULT
// value etl computed once when it read the table; the second is fixed
// only if the expression is (it is computed again after a restart).

// NondeterministicColumn is a stored column of the table whose value is
// not the same when a block is inserted again.
type NondeterministicColumn struct {
	Name string
	// Kind is MATERIALIZED or DEFAULT.
	Kind string
	Expr string
	// Why says what makes it differ: the functions it calls, or the
	// columns it refers to.
	Why string
	// Filled is true for an inserted DEFAULT column whose value etl
	// computes for records without the field.
	Filled bool
	// External is true when the value is fixed only while a dictionary
	// or a Join table it reads does not change (dictGet(), joinGet()):
	// a warning rather than a refusal.
	External bool
}

func (c NondeterministicColumn) String() string {
	s := fmt.Sprintf("column %s %s %s %s", c.Name, c.Kind, c.Expr, c.Why)
	if c.Filled {
		s += " (etl computes this DEFAULT once each time it reads the table, for records without the field)"
	}
	return s
}

// Nondeterministic returns the stored columns of the table cols describes
// whose value differs when the same insert block of t is inserted again
// (see the comment above): MATERIALIZED columns, DEFAULT columns t leaves
// out, and DEFAULT columns t inserts whose value etl computed, when the
// expression calls a function of NondeterministicFuncs or refers to a
// column (ALIAS, EPHEMERAL, or one of the above) whose value does; and,
// with External set, those whose value reads a dictionary or a Join
// table (ReadsExternalState).
func (t *Target) Nondeterministic(cols []ColumnInfo) []NondeterministicColumn {
	inserted := make(map[string]int, len(t.Schema.Names))
	for i, n := range t.Schema.Names {
		inserted[n] = i
	}
	names := make(map[string]bool, len(cols))
	for _, c := range cols {
		names[c.Name] = true
	}
	// computed reports whether the value of c comes from its expression
	// (rather than from the record), and whether etl computes it.
	computed := func(c ColumnInfo) (yes, byEtl bool) {
		if strings.TrimSpace(c.DefaultExpr) == "" {
			return false, false
		}
		switch strings.ToUpper(c.DefaultKind) {
		case "MATERIALIZED", "ALIAS":
			return true, false
		case "DEFAULT", "EPHEMERAL":
			i, ok := inserted[c.Name]
			if !ok {
				return true, false
			}
			// Inserted: the record's field, or what etl appends for a
			// missing one: the type's zero value, or the DEFAULT it
			// computed when it read the table.
			return t.defaultOf(i) != "", true
		}
		return false, false
	}
	// why[n] says why column n's value is not deterministic, ext[n] why
	// it depends on a dictionary or a Join table; found by the calls
	// first, then through references until nothing changes.
	why, ext := map[string]string{}, map[string]string{}
	for _, c := range cols {
		if ok, _ := computed(c); ok {
			if calls := NondeterministicCalls(c.DefaultExpr); len(calls) > 0 {
				why[c.Name] = "calls " + describeCalls(calls)
			}
			if calls := ReadsExternalState(c.DefaultExpr); len(calls) > 0 {
				ext[c.Name] = "calls " + strings.Join(calls, "(), ") + "()"
			}
		}
	}
	propagate := func(why map[string]string) {
		for changed := true; changed; {
			changed = false
			for _, c := range cols {
				if ok, _ := computed(c); !ok || why[c.Name] != "" {
					continue
				}
				var parts []string
				for _, r := range columnRefs(c.DefaultExpr, names) {
					if why[r] != "" {
						parts = append(parts, "column "+r+", which "+why[r])
					}
				}
				if len(parts) > 0 {
					why[c.Name] = "refers to " + strings.Join(parts, "; and to ")
					changed = true
				}
			}
		}
	}
	propagate(why)
	propagate(ext)
	var out []NondeterministicColumn
	for _, c := range cols {
		ok, byEtl := computed(c)
		kind := strings.ToUpper(c.DefaultKind)
		if !ok || kind == "ALIAS" || kind == "EPHEMERAL" {
			continue // ALIAS and EPHEMERAL columns are not stored
		}
		switch {
		case why[c.Name] != "":
			out = append(out, NondeterministicColumn{Name: c.Name, Kind: kind, Expr: c.DefaultExpr, Why: why[c.Name], Filled: byEtl})
		case ext[c.Name] != "":
			out = append(out, NondeterministicColumn{Name: c.Name, Kind: kind, Expr: c.DefaultExpr, Why: ext[c.Name], Filled: byEtl, External: true})
		}
	}
	return out
}

// describeCalls names the functions calls (as written) with what their
// value depends on.
func describeCalls(calls []string) string {
	parts := make([]string, len(calls))
	for i, f := range calls {
		parts[i] = f + "() (" + nondeterministicWhat(strings.ToLower(f)) + ")"
	}
	return strings.Join(parts, ", ")
}

// NondeterministicFuncs are the functions (lower case) whose value for
// the same arguments is not the same when the same block is inserted
// again, by what it depends on; nondeterministicPrefixes are name
// prefixes of such functions. Functions whose value is fixed by etl's
// configuration (currentDatabase(), currentUser(), getSetting()) are not
// among them, nor those reading a dictionary or a Join table
// (dictGet*(), joinGet()), whose content etl cannot see:
// ReadsExternalState names those.
var (
	NondeterministicFuncs = map[string]string{
		// The clock.
		"now": "the time of the insert", "now64": "the time of the insert",
		"nowinblock": "the time of the insert", "nowinblock64": "the time of the insert",
		"today": "the date of the insert", "yesterday": "the date of the insert",
		"current_timestamp": "the time of the insert", "current_date": "the date of the insert",
		"current_time": "the time of the insert", "localtimestamp": "the time of the insert",
		"localtime": "the time of the insert", "curdate": "the date of the insert",
		"curtime": "the time of the insert", "sysdate": "the time of the insert",
		"utc_timestamp": "the time of the insert", "utctimestamp": "the time of the insert",
		"uptime": "the time of the insert", "zookeepersessionuptime": "the time of the insert",
		"querystarttime": "the time of the insert", "initialquerystarttime": "the time of the insert",
		// Random values and generated identifiers (rand*, generate*).
		"fuzzbits": "a random value",
		// The block and the row's place in it, as the server cuts the
		// insert (running*: state carried from block to block).
		"blocknumber": "the server's block", "blocksize": "the server's block",
		"blockserializedsize": "the server's block", "rownumberinblock": "the server's block",
		"rownumberinallblocks": "the server's block", "neighbor": "the server's block",
		// The server, replica, connection or query the insert runs on.
		"hostname": "the server that runs the insert", "fqdn": "the server that runs the insert",
		"fullhostname": "the server that runs the insert", "serveruuid": "the server that runs the insert",
		"displayname": "the server that runs the insert", "getmacro": "the server that runs the insert",
		"version": "the server's version", "revision": "the server's version", "buildid": "the server's version",
		"timezone": "the server's configuration", "servertimezone": "the server's configuration",
		"connectionid": "the connection", "connection_id": "the connection",
		"queryid": "the query", "query_id": "the query", "initialqueryid": "the query", "initial_query_id": "the query",
		"transactionid": "the transaction", "transactionlatestsnapshot": "the transaction",
		"transactionoldestsnapshot": "the transaction",
	}
	nondeterministicPrefixes = []struct{ prefix, what string }{
		{"rand", "a random value"},                // rand, rand32, rand64, randConstant, randUniform, randomString, randomPrintableASCII, ...
		{"generate", "a new value at every call"}, // generateUUIDv4, generateUUIDv7, generateULID, generateSnowflakeID, generateSerialID
		{"running", "the server's block"},         // runningDifference, runningAccumulate, runningConcurrency, ...
		{"filesystem", "the disk's free space"},   // filesystemAvailable, filesystemFree, ...
	}
	externalPrefixes = []string{"dictget", "dicthas", "dictisin", "joinget"}
)

// nondeterministicWhat is what function f (lower case) depends on, ""
// when it is deterministic.
func nondeterministicWhat(f string) string {
	if w, ok := NondeterministicFuncs[f]; ok {
		return w
	}
	for _, p := range nondeterministicPrefixes {
		if strings.HasPrefix(f, p.prefix) {
			return p.what
		}
	}
	return ""
}

// NondeterministicCalls returns the functions expr calls (as written,
// once each) whose value is not the same when the same block is inserted
// again (NondeterministicFuncs). A function is a name followed by "(",
// matched case-insensitively; names inside string literals and longer
// names (nowhere(), my_now()) are not matched.
func NondeterministicCalls(expr string) []string {
	var out []string
	for _, id := range exprIdents(expr) {
		if id.call && nondeterministicWhat(strings.ToLower(id.name)) != "" && !slices.Contains(out, id.name) {
			out = append(out, id.name)
		}
	}
	return out
}

// ReadsExternalState returns the functions expr calls that read a
// dictionary or a Join table: deterministic only while their content
// does not change.
func ReadsExternalState(expr string) []string {
	var out []string
	for _, id := range exprIdents(expr) {
		l := strings.ToLower(id.name)
		if !id.call || slices.Contains(out, id.name) {
			continue
		}
		for _, p := range externalPrefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, id.name)
				break
			}
		}
	}
	return out
}

// columnRefs returns the columns of the table (names) expr refers to.
func columnRefs(expr string, names map[string]bool) []string {
	var refs []string
	for _, id := range exprIdents(expr) {
		if id.call {
			continue
		}
		// n.a is a column n.a, or element a of a tuple column n.
		for n := id.name; n != ""; {
			if names[n] {
				if !slices.Contains(refs, n) {
					refs = append(refs, n)
				}
				break
			}
			dot := strings.LastIndexByte(n, '.')
			if dot < 0 {
				break
			}
			n = n[:dot]
		}
	}
	return refs
}
