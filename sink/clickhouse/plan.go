package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/etl-project/etl/chunk"
	namesim "github.com/etl-project/etl/internal/names"
	"github.com/etl-project/etl/meta"
)

// ColumnInfo is one column of DESCRIBE TABLE.
type ColumnInfo struct {
	Name string
	Type string
	// DefaultKind is "", DEFAULT, MATERIALIZED, ALIAS (or EPHEMERAL on
	// current servers).
	DefaultKind string
	DefaultExpr string
}

// Target is a planned insert: the chunk schema the encoder builds, the
// source field feeding each schema column, and the INSERT statement naming
// exactly those columns in that order.
type Target struct {
	Database, Table string
	Schema          *chunk.Schema
	// Fields[i] is the source field for Schema column i.
	Fields []string
	// Query is INSERT INTO `db`.`table` (`a`, `b`, ...).
	Query string
	// From, when set, is the schema of the chunks this target inserts and
	// Source[i] the chunk column holding Schema column i: a projection that
	// writes chunks built for an earlier version of the table (see
	// Project). When From is nil the chunks are built for Schema.
	From   *chunk.Schema
	Source []int
	// Warnings name the inserted columns whose DEFAULT expression etl cannot
	// compute (it refers to other columns, is not deterministic, or the
	// server cannot evaluate it alone): a record without their field gets
	// the type's zero value instead. The caller logs them.
	Warnings []string

	// defaults[i] is the DEFAULT expression whose value Schema column i
	// appends for a missing field ("" for the type's zero value); Same
	// compares them.
	defaults []string
	// pending are the DEFAULT expressions Plan found computable, which
	// Client.Plan evaluates on the server.
	pending []pendingDefault
}

// pendingDefault is the DEFAULT expression of Schema column col.
type pendingDefault struct {
	col  int
	expr string
}

// defaultOf is the DEFAULT expression Schema column i appends, or "".
func (t *Target) defaultOf(i int) string {
	if i < len(t.defaults) {
		return t.defaults[i]
	}
	return ""
}

// col is the chunk column holding target column i.
func (t *Target) col(i int) int {
	if t.Source == nil {
		return i
	}
	return t.Source[i]
}

// Same reports whether t and u insert the same columns with the same types
// and the same computed DEFAULTs from the same fields (Diff's Same).
func (t *Target) Same(u *Target) bool { return Diff(t, u).Same }

// Project returns the target that inserts chunks built for old into the
// table as live describes it: the columns of old that live still has (by
// name), in old's order. dropped lists old's columns that live lacks; their
// values are not written. A column whose type changed is kept: the server
// converts it or refuses the insert. The result is nil when no column is
// left.
func Project(old, live *Target) (t *Target, dropped []string) {
	dropped = Diff(old, live).GoneNames()
	if len(dropped) == len(old.Schema.Names) {
		return nil, dropped
	}
	t = &Target{Database: old.Database, Table: old.Table, Schema: &chunk.Schema{}, From: old.Schema}
	if old.From != nil {
		t.From = old.From
	}
	var q strings.Builder
	q.WriteString("INSERT INTO ")
	q.WriteString(quoteIdent(old.Database))
	q.WriteByte('.')
	q.WriteString(quoteIdent(old.Table))
	q.WriteString(" (")
	for i, n := range old.Schema.Names {
		if slices.Contains(dropped, n) {
			continue
		}
		if len(t.Fields) > 0 {
			q.WriteString(", ")
		}
		q.WriteString(quoteIdent(n))
		t.Schema.Names = append(t.Schema.Names, n)
		t.Schema.Types = append(t.Schema.Types, old.Schema.Types[i])
		t.Fields = append(t.Fields, old.Fields[i])
		t.Source = append(t.Source, old.col(i))
		t.defaults = append(t.defaults, old.defaultOf(i))
	}
	q.WriteByte(')')
	t.Query = q.String()
	return t, dropped
}

// Name is db.table, as errors and logs name it.
func (t *Target) Name() string { return t.Database + "." + t.Table }

// Describe reads the table's columns with DESCRIBE TABLE. The result is
// parsed by column name: 18.16 returns 5 columns, current servers 7.
func (c *Client) Describe(ctx context.Context) ([]ColumnInfo, error) {
	name := c.TableName()
	q := "DESCRIBE TABLE " + quoteIdent(c.db) + "." + quoteIdent(c.opts.Table)
	rows, err := c.conn.Query(ctx, q)
	if err != nil {
		if code, ok := exceptionCode(err); ok && (code == codeUnknownTable || code == codeUnknownDatabase) {
			return nil, fmt.Errorf("table %s does not exist (etl schema prints a CREATE TABLE for it; sink.clickhouse.schema.create: true makes it at startup): %w", name, err)
		}
		if _, ok := exceptionCode(err); !ok {
			err = withTLSHint(c.opts.Addr, c.opts.TLS != nil, err)
		}
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	defer rows.Close()

	names := rows.Columns()
	types := rows.ColumnTypes()
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	for _, want := range []string{"name", "type", "default_type", "default_expression"} {
		if _, ok := idx[want]; !ok {
			return nil, fmt.Errorf("describe table %s: result has no column %q (got %v)", name, want, names)
		}
	}
	dest := make([]any, len(names))
	for i, t := range types {
		dest[i] = reflect.New(t.ScanType()).Interface()
	}
	str := func(field string) (string, error) {
		v := reflect.ValueOf(dest[idx[field]]).Elem().Interface()
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("describe table %s: column %q is %T, want string", name, field, v)
		}
		return s, nil
	}
	var out []ColumnInfo
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("describe table %s: scan: %w", name, err)
		}
		var ci ColumnInfo
		for _, f := range []struct {
			field string
			to    *string
		}{{"name", &ci.Name}, {"type", &ci.Type}, {"default_type", &ci.DefaultKind}, {"default_expression", &ci.DefaultExpr}} {
			s, err := str(f.field)
			if err != nil {
				return nil, err
			}
			*f.to = s
		}
		out = append(out, ci)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("table %s does not exist or has no columns", name)
	}
	return out, nil
}

// Plan describes the table, plans the insert for the configured column
// mapping (Options.Columns) and computes the DEFAULT values of the inserted
// columns on the server (see Plan and computeDefaults).
func (c *Client) Plan(ctx context.Context) (*Target, error) {
	cols, err := c.Describe(ctx)
	if err != nil {
		return nil, err
	}
	t, err := Plan(c.db, c.opts.Table, cols, Mapping{Columns: c.opts.Columns, Exclude: c.opts.Exclude})
	if err != nil {
		return nil, err
	}
	if err := c.computeDefaults(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// MappingError is Plan's error for sink.clickhouse.columns or
// exclude_columns naming a column the table lacks or cannot take: a
// mistake in the configuration (ConfigProblem), which starting again does
// not mend.
type MappingError struct{ Err error }

func (e *MappingError) Error() string { return e.Err.Error() }
func (e *MappingError) Unwrap() error { return e.Err }

// Mapping is how a table's columns take their source fields: by name,
// except where Columns says otherwise, and none for the columns Exclude
// names (sink.clickhouse.columns and exclude_columns).
type Mapping struct {
	// Columns maps a column (or a Nested structure) to the source field
	// that fills it, for the columns whose field has another name. The
	// columns it does not list take the field of their own name.
	Columns map[string]string
	// Exclude names columns (or Nested structures) left out of the
	// INSERT, so that the server fills them with their DEFAULT.
	Exclude []string
}

// Plan builds the insert target for table db.table from its columns.
//
// MATERIALIZED and ALIAS columns cannot be inserted and are skipped, as
// are the columns m excludes. Every other column is inserted and fed by
// the source field of its own name, or by the field m.Columns maps it to.
// Naming in m a column the table lacks, one that cannot be inserted, or
// one both mapped and excluded is an error. A column whose type the
// encoder does not support is an error naming column and type.
//
// A Nested structure n of the table is described as one Array column per
// element, n.a, n.b, ...; by default column n.a is fed by field path "n.a",
// which the decoders read as field a of every element of an array of
// objects (records) n. A mapping may name the structure itself, as if it
// were a column: n: items feeds n.a from "items.a", n.b from "items.b",
// and so on (a mapping of one of its columns wins); excluding n excludes
// all of its columns.
//
// A record without the field of an inserted column gets the column's
// DEFAULT. Plan sorts the DEFAULT expressions: one that refers to another
// column or calls a function that is not deterministic (now(), rand(), ...)
// cannot be computed once for every record, so the column keeps the type's
// zero value and Plan adds a warning to Target.Warnings; the others are
// computed by Client.Plan on the server (Plan alone leaves them at the
// type's zero value).
func Plan(db, table string, cols []ColumnInfo, m Mapping) (*Target, error) {
	name := db + "." + table
	if err := checkIdent(db); err != nil {
		return nil, fmt.Errorf("plan insert into %s: database: %w", name, err)
	}
	if err := checkIdent(table); err != nil {
		return nil, fmt.Errorf("plan insert into %s: table: %w", name, err)
	}
	explicit := m.Columns
	byName := make(map[string]ColumnInfo, len(cols))
	nested := make(map[string]bool)
	names := make(map[string]bool, len(cols))
	for _, c := range cols {
		byName[c.Name] = c
		names[c.Name] = true
		if n, ok := nestedName(c); ok {
			nested[n] = true
		}
	}
	var missing []string
	for col := range explicit {
		ci, ok := byName[col]
		if !ok && nested[col] {
			continue // a Nested structure: its columns are mapped below
		}
		if !ok {
			missing = append(missing, col)
			continue
		}
		if !insertable(ci) {
			return nil, &MappingError{fmt.Errorf("plan insert into %s: column %s is %s and cannot be inserted", name, col, ci.DefaultKind)}
		}
	}
	// The names a mapping or an exclusion may give: the table's columns
	// and its Nested structures, for the did-you-mean of one it lacks.
	known := make([]string, 0, len(cols)+len(nested))
	for _, c := range cols {
		known = append(known, c.Name)
	}
	for n := range nested {
		known = append(known, n)
	}
	sort.Strings(known)
	lacks := func(missing []string) string {
		sort.Strings(missing)
		for i, col := range missing {
			if s := namesim.Closest(col, known); s != "" {
				missing[i] += fmt.Sprintf(" (did you mean %s?)", s)
			}
		}
		return strings.Join(missing, ", ")
	}
	if len(missing) > 0 {
		return nil, &MappingError{fmt.Errorf("plan insert into %s: columns mapping names column(s) the table lacks: %s", name, lacks(missing))}
	}
	excluded := make(map[string]bool, len(m.Exclude))
	for _, col := range m.Exclude {
		if _, ok := byName[col]; !ok && !nested[col] {
			missing = append(missing, col)
		}
		if _, mapped := explicit[col]; mapped {
			return nil, &MappingError{fmt.Errorf("plan insert into %s: column %s is both mapped (columns) and excluded (exclude_columns)", name, col)}
		}
		excluded[col] = true
	}
	if len(missing) > 0 {
		return nil, &MappingError{fmt.Errorf("plan insert into %s: exclude_columns names column(s) the table lacks: %s", name, lacks(missing))}
	}

	t := &Target{Database: db, Table: table, Schema: &chunk.Schema{}}
	var q strings.Builder
	q.WriteString("INSERT INTO ")
	q.WriteString(quoteIdent(db))
	q.WriteByte('.')
	q.WriteString(quoteIdent(table))
	q.WriteString(" (")
	for _, c := range cols {
		if !insertable(c) {
			continue
		}
		n, isNested := nestedName(c)
		if excluded[c.Name] || (isNested && byName[n].Name == "" && excluded[n]) {
			continue // the server fills it
		}
		// A column named for a record's metadata (_offset, ...) takes
		// the metadata only when columns maps it so: by its own name it
		// reads the field, as it always has.
		field := meta.Quote(c.Name)
		if f, ok := explicit[c.Name]; ok {
			field = f
		} else if isNested && byName[n].Name == "" {
			if g, mapped := explicit[n]; mapped {
				field = g + c.Name[len(n):]
			}
		}
		if err := checkIdent(c.Name); err != nil {
			return nil, fmt.Errorf("plan insert into %s: column %s: %w", name, c.Name, err)
		}
		typ, err := chunk.ParseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("plan insert into %s: column %s (%s): %w", name, c.Name, c.Type, err)
		}
		// The encoder builds a column for every schema type: reject the
		// ones it cannot build (e.g. Nullable(Array(...))) here, once.
		if _, err := chunk.NewColumn(typ); err != nil {
			return nil, fmt.Errorf("plan insert into %s: column %s (%s): %w", name, c.Name, c.Type, err)
		}
		if len(t.Fields) > 0 {
			q.WriteString(", ")
		}
		q.WriteString(quoteIdent(c.Name))
		if strings.EqualFold(c.DefaultKind, "DEFAULT") && strings.TrimSpace(c.DefaultExpr) != "" {
			if why := uncomputable(c.DefaultExpr, names); why != "" {
				t.Warnings = append(t.Warnings, defaultWarning(c.Name, c.DefaultExpr, why))
			} else {
				t.pending = append(t.pending, pendingDefault{col: len(t.Fields), expr: c.DefaultExpr})
			}
		}
		t.Schema.Names = append(t.Schema.Names, c.Name)
		t.Schema.Types = append(t.Schema.Types, typ)
		t.Fields = append(t.Fields, field)
		t.defaults = append(t.defaults, "")
	}
	if len(t.Fields) == 0 {
		return nil, fmt.Errorf("plan insert into %s: no insertable column", name)
	}
	q.WriteByte(')')
	t.Query = q.String()
	return t, nil
}

// nestedName returns n when c is a column n.x of a Nested structure: an
// Array column whose name has a dot (the server groups such columns by the
// name before the first dot, and requires equal array lengths in a row).
func nestedName(c ColumnInfo) (string, bool) {
	dot := strings.IndexByte(c.Name, '.')
	if dot <= 0 || !strings.HasPrefix(c.Type, "Array(") {
		return "", false
	}
	return c.Name[:dot], true
}

func insertable(c ColumnInfo) bool {
	switch strings.ToUpper(c.DefaultKind) {
	case "MATERIALIZED", "ALIAS":
		return false
	}
	return true
}

// quoteIdent quotes an identifier with backticks. checkIdent has ruled out
// the characters that would need escaping.
func quoteIdent(s string) string { return "`" + s + "`" }

// checkIdent rejects identifiers the driver cannot pass through an INSERT
// column list: it strips every backtick from the names it parses and does
// not understand escapes.
func checkIdent(s string) error {
	if s == "" {
		return errors.New("empty identifier")
	}
	if strings.ContainsAny(s, "`\\") {
		return fmt.Errorf("identifier %q contains a backtick or backslash, which the driver cannot quote", s)
	}
	return nil
}

// Column DEFAULTs.
//
// The server fills a column's DEFAULT only for columns an INSERT leaves
// out, but etl inserts every planned column for every row, so a record
// without a column's field must carry the DEFAULT itself. A DEFAULT
// expression that needs nothing but constants is computed once per plan,
// on the server, as SELECT CAST((expr) AS type) (all of a table's in one
// query), and set on the column's type (SetDefault, default.go): every chunk
// column built for the plan appends it for a missing field, with no work
// per record. An expression that refers to other columns, or calls a
// function whose value changes from call to call or row to row (now(),
// rand(), generateUUIDv4(), dictGet(), ...), has no single value: the
// column keeps the type's zero value and the plan carries a warning.

// computeDefaults evaluates the computable DEFAULT expressions of t on the
// server and sets their values on the columns' types. An expression the
// server refuses, or whose value cannot be read, leaves its column at the
// type's zero value with a warning; a connection failure or a transient
// server error fails the plan.
func (c *Client) computeDefaults(ctx context.Context, t *Target) error {
	pending := t.pending
	t.pending = nil
	if len(pending) == 0 {
		return nil
	}
	vals := make([]any, len(pending))
	all := make([]int, len(pending))
	for i := range all {
		all[i] = i
	}
	failed := make([]error, len(pending))
	if err := c.evalDefaults(ctx, t, pending, all, vals); err != nil {
		if !uncomputableErr(err) {
			return fmt.Errorf("compute the DEFAULT expressions of %s: %w", t.Name(), err)
		}
		// One at a time, to tell which expression cannot be computed.
		for i := range pending {
			if err := c.evalDefaults(ctx, t, pending, []int{i}, vals); err != nil {
				if !uncomputableErr(err) {
					return fmt.Errorf("compute the DEFAULT expressions of %s: %w", t.Name(), err)
				}
				failed[i] = err
			}
		}
	}
	for i, p := range pending {
		name := t.Schema.Names[p.col]
		if failed[i] != nil {
			t.Warnings = append(t.Warnings, defaultWarning(name, p.expr, "the server cannot compute it alone: "+failed[i].Error()))
			continue
		}
		if err := SetDefault(t.Schema.Types[p.col], vals[i]); err != nil {
			t.Warnings = append(t.Warnings, defaultWarning(name, p.expr, "its value cannot be used: "+err.Error()))
			continue
		}
		t.defaults[p.col] = p.expr
	}
	return nil
}

// evalDefaults evaluates the expressions pending[i] for i in idx in one
// query and sets vals[i] to their values, as the driver scans them.
func (c *Client) evalDefaults(ctx context.Context, t *Target, pending []pendingDefault, idx []int, vals []any) error {
	var q strings.Builder
	q.WriteString("SELECT ")
	for k, i := range idx {
		if k > 0 {
			q.WriteString(", ")
		}
		// LowCardinality is only a storage form; CAST to it needs a
		// setting on old servers.
		fmt.Fprintf(&q, "CAST((%s) AS %s) AS `d%d`", pending[i].expr, t.Schema.Types[pending[i].col].Base().Name, k)
	}
	rows, err := c.conn.Query(ctx, q.String())
	if err != nil {
		return err
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	if len(types) != len(idx) {
		return &scanError{fmt.Errorf("%d columns in the result, want %d", len(types), len(idx))}
	}
	dest := make([]any, len(idx))
	for k, ct := range types {
		dest[k] = reflect.New(ct.ScanType()).Interface()
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return &scanError{errors.New("no row in the result")}
	}
	if err := rows.Scan(dest...); err != nil {
		return &scanError{err}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for k, i := range idx {
		vals[i] = reflect.ValueOf(dest[k]).Elem().Interface()
	}
	return nil
}

// scanError is a value the driver could not read into Go.
type scanError struct{ err error }

func (e *scanError) Error() string { return "read the value: " + e.err.Error() }
func (e *scanError) Unwrap() error { return e.err }

// uncomputableErr reports whether err means that the expressions cannot
// be computed as asked (the server refuses them: an unknown function, a
// value that does not convert, ...; or their value cannot be read), rather
// than a failure of the connection or a passing server condition, which
// fails the plan.
func uncomputableErr(err error) bool {
	var se *scanError
	if errors.As(err, &se) {
		return true
	}
	code, ok := exceptionCode(err)
	return ok && !transientQueryCodes[code]
}

// transientQueryCodes are server exception codes that say nothing about
// the query itself: it may succeed when tried again.
var transientQueryCodes = map[int32]bool{
	159: true, // TIMEOUT_EXCEEDED
	160: true, // TOO_SLOW
	202: true, // TOO_MANY_SIMULTANEOUS_QUERIES
	203: true, // NO_FREE_CONNECTION
	209: true, // SOCKET_TIMEOUT
	210: true, // NETWORK_ERROR
	241: true, // MEMORY_LIMIT_EXCEEDED
	394: true, // QUERY_WAS_CANCELLED
	425: true, // SYSTEM_ERROR
	439: true, // CANNOT_SCHEDULE_TASK
}

// defaultWarning is the warning for column name, whose DEFAULT expr etl
// cannot compute, because why.
func defaultWarning(name, expr, why string) string {
	return fmt.Sprintf("column %s: DEFAULT %s %s, so etl cannot compute it: a record without the field gets the type's zero value. "+
		"To have the server compute it, list %s in sink.clickhouse.exclude_columns "+
		"(not under delivery: exactly_once for an expression that changes at each insert, such as now(): fill the column from the record instead)", name, expr, why, name)
}

// volatileFuncs are functions (lower case) whose value is not the same at
// every call: a DEFAULT calling one has no single value. volatilePrefixes
// are name prefixes of such functions.
var (
	volatileFuncs = map[string]bool{
		"now": true, "now64": true, "nowinblock": true, "nowinblock64": true, "today": true, "yesterday": true,
		"current_timestamp": true, "current_date": true, "current_time": true, "localtimestamp": true, "localtime": true,
		"curdate": true, "sysdate": true, "utc_timestamp": true, "utctimestamp": true,
		"fuzzbits": true, "uptime": true, "hostname": true, "fqdn": true, "fullhostname": true, "serveruuid": true,
		"queryid": true, "query_id": true, "blocknumber": true, "blocksize": true, "neighbor": true,
		"runningaccumulate": true, "transactionid": true, "transactionlatestsnapshot": true, "transactionoldestsnapshot": true,
		"sleep": true, "sleepeachrow": true, "filesystemavailable": true, "filesystemfree": true, "filesystemcapacity": true,
		"currentprofiles": true, "currentroles": true, "enabledprofiles": true, "enabledroles": true, "defaultroles": true,
		"getsetting": true, "getclientsetting": true, "catboostevaluate": true, "modelevaluate": true,
	}
	volatilePrefixes = []string{"rand", "generate", "dict", "joinget", "runningdifference", "rownumberin", "initialquery"}
)

// uncomputable returns why DEFAULT expression expr cannot be computed once
// for every record ("" when it can): it refers to a column of the table
// (names), or calls a function that is not deterministic. String literals
// and quoted identifiers are read as such.
func uncomputable(expr string, names map[string]bool) string {
	refs := columnRefs(expr, names)
	var funcs []string
	for _, id := range exprIdents(expr) {
		if !id.call {
			continue
		}
		l := strings.ToLower(id.name)
		volatile := volatileFuncs[l]
		for _, p := range volatilePrefixes {
			volatile = volatile || strings.HasPrefix(l, p)
		}
		if volatile && !slices.Contains(funcs, id.name+"()") {
			funcs = append(funcs, id.name+"()")
		}
	}
	var why []string
	if len(refs) > 0 {
		why = append(why, "refers to column(s) "+strings.Join(refs, ", "))
	}
	if len(funcs) > 0 {
		why = append(why, "calls "+strings.Join(funcs, ", ")+", whose value is not the same for every record")
	}
	return strings.Join(why, " and ")
}

// exprIdent is an identifier of an expression; call is true for a function
// name (followed by "(").
type exprIdent struct {
	name string
	call bool
}

// exprIdents returns the identifiers of a ClickHouse expression: bare
// ones (with dots: n.a, t.1) and quoted ones (`x`, "x"), skipping string
// literals and numbers.
func exprIdents(s string) []exprIdent {
	var out []exprIdent
	isStart := func(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isPart := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	// quoted reads the quoted text starting at s[i] (the quote), with
	// backslash escapes and doubled quotes, and returns it and the index
	// after it.
	quoted := func(i int) (string, int) {
		q := s[i]
		var b strings.Builder
		for i++; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				b.WriteByte(s[i])
			case c == q && i+1 < len(s) && s[i+1] == q:
				i++
				b.WriteByte(q)
			case c == q:
				return b.String(), i + 1
			default:
				b.WriteByte(c)
			}
		}
		return b.String(), len(s)
	}
	for i := 0; i < len(s); {
		c := s[i]
		var name string
		switch {
		case c == '\'':
			_, i = quoted(i)
			continue
		case c == '`' || c == '"':
			name, i = quoted(i)
		case isStart(c):
			j := i + 1
			for j < len(s) && (isPart(s[j]) || s[j] == '.' && j+1 < len(s) && isPart(s[j+1])) {
				j++
			}
			name, i = s[i:j], j
		case c >= '0' && c <= '9':
			for i < len(s) && (isPart(s[i]) || s[i] == '.') {
				i++
			}
			continue
		default:
			i++
			continue
		}
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
			j++
		}
		out = append(out, exprIdent{name: name, call: j < len(s) && s[j] == '('})
	}
	return out
}
