package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/etl-project/etl/chunk"
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
}

// col is the chunk column holding target column i.
func (t *Target) col(i int) int {
	if t.Source == nil {
		return i
	}
	return t.Source[i]
}

// Same reports whether t and u insert the same columns with the same types
// from the same fields.
func (t *Target) Same(u *Target) bool {
	if t.Query != u.Query || len(t.Fields) != len(u.Fields) {
		return false
	}
	for i := range t.Fields {
		if t.Fields[i] != u.Fields[i] || t.Schema.Types[i].Name != u.Schema.Types[i].Name {
			return false
		}
	}
	return true
}

// Project returns the target that inserts chunks built for old into the
// table as live describes it: the columns of old that live still has (by
// name), in old's order. dropped lists old's columns that live lacks; their
// values are not written. A column whose type changed is kept: the server
// converts it or refuses the insert. The result is nil when no column is
// left.
func Project(old, live *Target) (t *Target, dropped []string) {
	has := make(map[string]bool, len(live.Schema.Names))
	for _, n := range live.Schema.Names {
		has[n] = true
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
		if !has[n] {
			dropped = append(dropped, n)
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
	}
	if len(t.Fields) == 0 {
		return nil, dropped
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
			return nil, fmt.Errorf("table %s does not exist: %w", name, err)
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

// Plan describes the table and plans the insert for the configured column
// mapping (Options.Columns).
func (c *Client) Plan(ctx context.Context) (*Target, error) {
	cols, err := c.Describe(ctx)
	if err != nil {
		return nil, err
	}
	return Plan(c.db, c.opts.Table, cols, c.opts.Columns)
}

// Plan builds the insert target for table db.table from its columns.
//
// MATERIALIZED and ALIAS columns cannot be inserted and are skipped. With an
// empty explicit mapping every other column is inserted and fed by the
// source field of the same name. With a mapping (column -> source field)
// only the mapped columns are inserted, in table order; naming a column the
// table lacks, or one that cannot be inserted, is an error. A column whose
// type the encoder does not support is an error naming column and type.
//
// A Nested structure n of the table is described as one Array column per
// element, n.a, n.b, ...; by default column n.a is fed by field path "n.a",
// which the decoders read as field a of every element of an array of
// objects (records) n. A mapping may name the structure itself, as if it
// were a column: n: items feeds n.a from "items.a", n.b from "items.b",
// and so on (a mapping of one of its columns wins).
func Plan(db, table string, cols []ColumnInfo, explicit map[string]string) (*Target, error) {
	name := db + "." + table
	if err := checkIdent(db); err != nil {
		return nil, fmt.Errorf("plan insert into %s: database: %w", name, err)
	}
	if err := checkIdent(table); err != nil {
		return nil, fmt.Errorf("plan insert into %s: table: %w", name, err)
	}
	byName := make(map[string]ColumnInfo, len(cols))
	nested := make(map[string]bool)
	for _, c := range cols {
		byName[c.Name] = c
		if n, ok := nestedName(c); ok {
			nested[n] = true
		}
	}
	if len(explicit) > 0 {
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
				return nil, fmt.Errorf("plan insert into %s: column %s is %s and cannot be inserted", name, col, ci.DefaultKind)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, fmt.Errorf("plan insert into %s: columns mapping names column(s) the table lacks: %s", name, strings.Join(missing, ", "))
		}
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
		field := c.Name
		if len(explicit) > 0 {
			f, ok := explicit[c.Name]
			if n, isNested := nestedName(c); !ok && isNested && byName[n].Name == "" {
				if g, mapped := explicit[n]; mapped {
					f, ok = g+c.Name[len(n):], true
				}
			}
			if !ok {
				continue
			}
			field = f
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
		t.Schema.Names = append(t.Schema.Names, c.Name)
		t.Schema.Types = append(t.Schema.Types, typ)
		t.Fields = append(t.Fields, field)
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
