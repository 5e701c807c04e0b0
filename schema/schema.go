// Package schema derives a ClickHouse table from what a pipeline writes:
// the fields of the Avro writer schema or of decode.fields, carried
// through the transform chain (flatten, set, rename, drop) and the sink's
// column overrides, typed for the server's version. `etl schema` prints
// the CREATE TABLE; sink.clickhouse.schema uses it to create a missing
// table and to add the columns a new writer schema brings.
package schema

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/transform"
)

// Column is one column of the derived table: Type "" for a field no
// column can hold (Note says why), Group the Nested structure it belongs
// to, Default a ClickHouse literal (a source field's Avro default).
type Column = avro.Column

// Source is the fields a pipeline reads, before the transform chain.
type Source struct {
	// Columns are the record's fields as columns, in order.
	Columns []Column
	// Fields types every field the chain can read, including the fields
	// of records that are one Tuple column ("user.id").
	Fields map[string]string
	// NoMap holds, by the name of a Map column, the columns that take
	// its field on a server without the Map type (before 21.8): the
	// Nested structure of its keys and values (a Protobuf map).
	NoMap map[string][]Column
}

// columnsFor is src's columns as server s holds them: a Map column that
// has a NoMap alternative replaced by it when s has no Map type.
func (src Source) columnsFor(s Server) []Column {
	if s.Map() || len(src.NoMap) == 0 {
		return src.Columns
	}
	var out []Column
	for _, c := range src.Columns {
		if alt, ok := src.NoMap[c.Name]; ok {
			out = append(out, alt...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// FromAvro reads the fields of an Avro record schema.
func FromAvro(text string) (Source, error) {
	cols, all, err := avro.Columns(text)
	if err != nil {
		return Source{}, err
	}
	src := Source{Fields: all}
	src.Columns = cols
	return src, nil
}

// FromFields reads decode.fields, in the order given (fields missing from
// order come last, sorted). An entry that names a field of the record's
// key (_key.NAME) types that field and is no column of its own.
func FromFields(fields map[string]string, order []string) Source {
	src := Source{Fields: map[string]string{}}
	seen := map[string]bool{}
	names := append([]string(nil), order...)
	var rest []string
	for n := range fields {
		rest = append(rest, n)
	}
	sort.Strings(rest)
	names = append(names, rest...)
	for _, n := range names {
		t, ok := fields[n]
		if !ok || seen[n] {
			continue
		}
		seen[n] = true
		src.Fields[n] = t
		if !meta.IsKeyField(n) {
			src.Columns = append(src.Columns, Column{Name: n, Type: t})
		}
	}
	return src
}

// Merge adds the fields of b that a lacks (several subjects).
func Merge(a, b Source) Source {
	if a.Fields == nil {
		return b
	}
	have := map[string]bool{}
	for _, c := range a.Columns {
		have[c.Name] = true
	}
	for _, c := range b.Columns {
		if !have[c.Name] {
			a.Columns = append(a.Columns, c)
			if alt, ok := b.NoMap[c.Name]; ok {
				if a.NoMap == nil {
					a.NoMap = map[string][]Column{}
				}
				a.NoMap[c.Name] = alt
			}
		}
	}
	for f, t := range b.Fields {
		if _, ok := a.Fields[f]; !ok {
			a.Fields[f] = t
		}
	}
	return a
}

// Server is what the target server's version supports.
type Server struct {
	Version      string // as given; "" means the newest
	major, minor int
}

// ParseServer reads a version such as 18.16 or 23.8.2.7; "" is the newest
// server.
func ParseServer(v string) (Server, error) {
	if v == "" {
		return Server{major: 1 << 20}, nil
	}
	parts := strings.Split(v, ".")
	maj, err1 := strconv.Atoi(parts[0])
	mnr := 0
	var err2 error
	if len(parts) > 1 {
		mnr, err2 = strconv.Atoi(parts[1])
	}
	if err1 != nil || err2 != nil || maj <= 0 {
		return Server{}, fmt.Errorf("server version %q is not MAJOR.MINOR[.PATCH...]", v)
	}
	return Server{Version: v, major: maj, minor: mnr}, nil
}

func (s Server) atLeast(maj, mnr int) bool {
	return s.major > maj || (s.major == maj && s.minor >= mnr)
}

// DateTime64 is 20.1's sub-second DateTime.
func (s Server) DateTime64() bool { return s.atLeast(20, 1) }

// Bool is 21.12's Bool type (older servers store booleans as UInt8).
func (s Server) Bool() bool { return s.atLeast(21, 12) }

// Map is the Map type, generally available since 21.8.
func (s Server) Map() bool { return s.atLeast(21, 8) }

// WideDecimal is Decimal precision above 38 (Decimal256, 20.8).
func (s Server) WideDecimal() bool { return s.atLeast(20, 8) }

// IsDeleted is 23.2's is_deleted column of ReplacingMergeTree
// (ReplacingMergeTree(ver, is_deleted)): FINAL leaves out the deleted
// rows. Older servers keep them, for queries to filter. The 18.16 server
// of the tests never takes the 23.2 branch: TestCDCTable checks the
// statement it writes.
func (s Server) IsDeleted() bool { return s.atLeast(23, 2) }

// LowCardinalityNeedsSetting is true before 19.1, where LowCardinality
// columns need allow_experimental_low_cardinality_type.
func (s Server) LowCardinalityNeedsSetting() bool { return !s.atLeast(19, 1) }

var (
	reDateTime64 = regexp.MustCompile(`DateTime64\(\d+(, *'[^']*')?\)`)
	reBool       = regexp.MustCompile(`\bBool\b`)
	reDecimal    = regexp.MustCompile(`Decimal\((\d+), *(\d+)\)`)
)

// Adapt returns t as the server can hold it, or "" and why it cannot.
func (s Server) Adapt(t string) (string, string) {
	if !s.DateTime64() && strings.Contains(t, "DateTime64(") {
		t = reDateTime64.ReplaceAllString(t, "DateTime")
	}
	if !s.Bool() {
		t = reBool.ReplaceAllString(t, "UInt8")
	}
	if !s.Map() && strings.Contains(t, "Map(") {
		return "", "ClickHouse " + s.Version + " has no Map type (21.8 and later have)"
	}
	if !s.WideDecimal() {
		for _, m := range reDecimal.FindAllStringSubmatch(t, -1) {
			if p, _ := strconv.Atoi(m[1]); p > 38 {
				return "", fmt.Sprintf("ClickHouse %s has no Decimal of precision %d (20.8 and later have, up to 76)", s.Version, p)
			}
		}
	}
	return t, ""
}

// Options are what Derive carries the source through.
type Options struct {
	Steps []config.Step
	// Sinks are the pipeline's sink names (route steps name them).
	Sinks []string
	// Overrides is the sink's column map: column -> field.
	Overrides map[string]string
	Server    Server
	// LowCardinality makes String columns LowCardinality(String).
	LowCardinality bool
	// CDC is decode.debezium.mode when records are Debezium change
	// events (decode.envelope: debezium), else "": the rows are the
	// row's own fields (src's fields whose names do not start with _)
	// with _version and _deleted (replacing) or _sign (collapsing).
	CDC string
}

// Derive returns the columns of the rows the pipeline writes: src's
// fields through the transform chain, named by the sink's overrides, and
// typed for the server. Fields no column can hold are returned with a
// Note and no Type.
func Derive(src Source, o Options) ([]Column, error) {
	in := &chunk.Schema{}
	hidden := map[string]bool{}
	groups := map[string]string{}
	defaults := map[string]string{}
	var notes []Column
	visible := map[string]bool{}
	add := func(name, typ string) error {
		ct, err := chunk.ParseType(typ)
		if err != nil {
			return fmt.Errorf("field %q: type %s: %w", name, typ, err)
		}
		in.Names = append(in.Names, name)
		in.Types = append(in.Types, ct)
		return nil
	}
	for _, c := range src.columnsFor(o.Server) {
		if o.CDC != "" && strings.HasPrefix(c.Name, "_") {
			continue // not a field of the row images
		}
		visible[c.Name] = true
		t, why := c.Type, c.Note
		if why == "" {
			t, why = o.Server.Adapt(t)
		}
		if why != "" {
			notes = append(notes, Column{Name: c.Name, Note: why})
			continue
		}
		if err := add(c.Name, t); err != nil {
			return nil, err
		}
		if c.Group != "" {
			groups[c.Name] = c.Group
		}
		if c.Default != "" {
			defaults[c.Name] = c.Default
		}
	}
	// The chain reads a record's metadata (_topic, _offset, ...) like
	// fields that are no column by themselves.
	fieldTypes := meta.WithTypes(src.Fields)
	if o.CDC != "" {
		// The envelope's fields: the version and the mode's flag are
		// columns, the others fields the chain may read.
		fieldTypes = maps.Clone(fieldTypes)
		for _, c := range cdcColumns(o.CDC) {
			if err := add(c.Name, c.Type); err != nil {
				return nil, err
			}
			visible[c.Name] = true
		}
		for f, t := range transform.EnvelopeFields {
			if !visible[f] {
				fieldTypes[f] = t
			}
		}
	}
	var extra []string
	for f := range fieldTypes {
		if !visible[f] {
			extra = append(extra, f)
		}
	}
	sort.Strings(extra)
	for _, f := range extra {
		t, why := o.Server.Adapt(fieldTypes[f])
		if why != "" {
			continue
		}
		if err := add(f, t); err != nil {
			return nil, err
		}
		hidden[f] = true
	}
	fields, err := transform.FieldsOut(o.Steps, in, hidden, groups, o.Sinks)
	if err != nil {
		return nil, err
	}
	var cols []Column
	for _, f := range fields {
		c := Column{Name: f.Name, Group: f.Group, Default: defaults[f.Name]}
		if f.Type != nil {
			c.Type = f.Type.Name
		} else {
			c.Type = o.Server.kindType(f.Kind)
			if f.Nullable {
				c.Type = "Nullable(" + c.Type + ")"
			}
		}
		cols = append(cols, c)
	}
	overrides, metaCols := o.Server.metaColumns(o.Overrides, src.Fields)
	cols = slices.DeleteFunc(cols, func(c Column) bool {
		return c.Group == "" && slices.ContainsFunc(metaCols, func(m Column) bool { return m.Name == c.Name })
	})
	cols = override(cols, overrides, func(field string) (string, bool) {
		if !hidden[field] {
			return "", false
		}
		for i, n := range in.Names {
			if n == field {
				return in.Types[i].Name, true
			}
		}
		return "", false
	})
	cols = append(cols, metaCols...)
	if o.LowCardinality {
		for i := range cols {
			if cols[i].Group != "" {
				continue
			}
			switch cols[i].Type {
			case "String", "Nullable(String)":
				cols[i].Type = "LowCardinality(" + cols[i].Type + ")"
			}
		}
	}
	dropped := map[string]bool{}
	for _, st := range o.Steps {
		for _, d := range st.Drop {
			dropped[d] = true
		}
	}
	for _, n := range notes {
		if !dropped[n.Name] {
			cols = append(cols, n)
		}
	}
	return cols, nil
}

// metaColumns splits a sink's column map: the columns mapped to a
// record's metadata (meta.IsSource), each with the type that server s
// has for it, and the rest of the map. A source field:NAME reads field
// NAME. A field of the key (_key.NAME) takes its type from types (the
// key's schema, or its decode.fields entry), String when they lack it.
func (s Server) metaColumns(m, types map[string]string) (map[string]string, []Column) {
	var cols []Column
	rest := make(map[string]string, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		src := m[name]
		if !meta.IsSource(src) {
			rest[name] = meta.Field(src)
			continue
		}
		if t, ok := types[src]; ok && meta.IsKeyField(src) {
			if adapted, why := s.Adapt(t); why == "" {
				cols = append(cols, Column{Name: name, Type: adapted})
			} else {
				cols = append(cols, Column{Name: name, Note: why})
			}
			continue
		}
		switch src {
		case meta.Timestamp:
			cols = append(cols, Column{Name: name, Type: s.kindType("Time")})
		case meta.Headers:
			if s.Map() {
				cols = append(cols, Column{Name: name, Type: "Map(String, String)"})
			} else {
				// Parallel arrays: the Nested structure the sink
				// fills from _headers.key and _headers.value.
				cols = append(cols, Column{Name: name + ".key", Type: "Array(String)", Group: name},
					Column{Name: name + ".value", Type: "Array(String)", Group: name})
			}
		case meta.Topic:
			cols = append(cols, Column{Name: name, Type: "String"})
		default:
			cols = append(cols, Column{Name: name, Type: meta.Types(src)[0]})
		}
	}
	return rest, cols
}

// kindType is the column type of a value an expression computes.
func (s Server) kindType(kind string) string {
	switch kind {
	case "Time":
		if s.DateTime64() {
			return "DateTime64(3)"
		}
		return "DateTime"
	case "Bool":
		if s.Bool() {
			return "Bool"
		}
		return "UInt8"
	}
	return kind
}

// override names the columns the sink's column map fills from another
// field, as the run's insert plan fills them (clickhouse.Plan): the
// field's column takes the column's name (a field feeding several columns
// gives each one); a map entry naming an array of records (a Nested
// structure) renames the structure; one naming a field that is not a
// column of the rows by itself (a field of a record, "user.id", which
// hiddenType types) adds a column of that field's type.
func override(cols []Column, m map[string]string, hiddenType func(string) (string, bool)) []Column {
	names := make([]string, 0, len(m))
	for c := range m {
		names = append(names, c)
	}
	sort.Strings(names)
	used := map[int]bool{}
	for _, name := range names {
		field := m[name]
		at := -1
		for i, c := range cols {
			if c.Name == field && c.Type != "" {
				at = i
				break
			}
		}
		if at < 0 {
			group := false
			for i := range cols {
				if cols[i].Group == field && cols[i].Type != "" {
					cols[i].Name = name + strings.TrimPrefix(cols[i].Name, field)
					cols[i].Group = name
					group = true
				}
			}
			if group {
				continue
			}
			if t, ok := hiddenType(field); ok {
				cols = append(cols, Column{Name: name, Type: t})
			}
			continue // else a field the rows lack: refused before (inspect.CheckMapped) or by the sink's plan
		}
		if used[at] {
			c := cols[at]
			c.Name, c.Group = name, ""
			cols = append(cols, c)
			continue
		}
		used[at] = true
		cols[at].Name, cols[at].Group = name, ""
	}
	return cols
}

// Statement options.
type Table struct {
	Database, Name string
	// Engine is the table engine, MergeTree when empty.
	Engine string
	// OrderBy is the sorting key's columns; empty gives tuple().
	OrderBy     []string
	IfNotExists bool
}

// CreateTable returns the statements that create the table: a SET first
// when the server needs a setting for LowCardinality. Columns without a
// Type are listed in comments before it.
func CreateTable(t Table, cols []Column, srv Server) ([]string, string, error) {
	var b strings.Builder
	var stmts []string
	for _, c := range cols {
		if c.Type == "" {
			fmt.Fprintf(&b, "-- field %q has no column: %s\n", c.Name, c.Note)
		}
	}
	if err := checkOrderBy(t.OrderBy, cols); err != nil {
		return nil, "", err
	}
	lc := false
	for _, c := range cols {
		if strings.Contains(c.Type, "LowCardinality(") {
			lc = true
		}
	}
	if lc && srv.LowCardinalityNeedsSetting() {
		set := "SET allow_experimental_low_cardinality_type = 1"
		stmts = append(stmts, set)
		b.WriteString(set + ";\n")
	}
	var q strings.Builder
	q.WriteString("CREATE TABLE ")
	if t.IfNotExists {
		q.WriteString("IF NOT EXISTS ")
	}
	if t.Database != "" {
		q.WriteString(Quote(t.Database) + ".")
	}
	q.WriteString(Quote(t.Name) + "\n(\n")
	var lines []string
	for i := 0; i < len(cols); i++ {
		c := cols[i]
		if c.Type == "" {
			continue
		}
		if c.Group == "" {
			lines = append(lines, "    "+columnDef(c))
			continue
		}
		var members []string
		j := i
		for ; j < len(cols) && cols[j].Group == c.Group && cols[j].Type != ""; j++ {
			inner := strings.TrimSuffix(strings.TrimPrefix(cols[j].Type, "Array("), ")")
			members = append(members, "        "+Quote(strings.TrimPrefix(cols[j].Name, c.Group+"."))+" "+inner)
		}
		i = j - 1
		lines = append(lines, "    "+Quote(c.Group)+" Nested(\n"+strings.Join(members, ",\n")+"\n    )")
	}
	if len(lines) == 0 {
		return nil, "", fmt.Errorf("no field of the rows has a column")
	}
	q.WriteString(strings.Join(lines, ",\n"))
	q.WriteString("\n)\nENGINE = ")
	engine := t.Engine
	if engine == "" {
		engine = "MergeTree"
	}
	q.WriteString(engine)
	q.WriteString("\nORDER BY ")
	switch len(t.OrderBy) {
	case 0:
		q.WriteString("tuple()")
	case 1:
		q.WriteString(Quote(t.OrderBy[0]))
	default:
		keys := make([]string, len(t.OrderBy))
		for i, k := range t.OrderBy {
			keys[i] = Quote(k)
		}
		q.WriteString("(" + strings.Join(keys, ", ") + ")")
	}
	stmts = append(stmts, q.String())
	b.WriteString(q.String() + ";\n")
	return stmts, b.String(), nil
}

// columnDef is "`name` Type [DEFAULT x]".
func columnDef(c Column) string {
	s := Quote(c.Name) + " " + c.Type
	if c.Default != "" {
		s += " DEFAULT " + c.Default
	}
	return s
}

// checkOrderBy refuses sorting-key columns the table would not have or
// that cannot be in a sorting key.
func checkOrderBy(keys []string, cols []Column) error {
	for _, k := range keys {
		var col *Column
		for i := range cols {
			if cols[i].Name == k && cols[i].Type != "" {
				col = &cols[i]
			}
		}
		if col == nil {
			var names []string
			for _, c := range cols {
				if c.Type != "" && c.Group == "" {
					names = append(names, c.Name)
				}
			}
			return fmt.Errorf("order by %q: the rows have no such column; columns: %s", k, strings.Join(names, ", "))
		}
		switch {
		case col.Group != "" || strings.HasPrefix(col.Type, "Array("):
			return fmt.Errorf("order by %q: an array (%s) cannot be in the sorting key", k, col.Type)
		case strings.HasPrefix(col.Type, "Nullable(") || strings.HasPrefix(col.Type, "LowCardinality(Nullable("):
			return fmt.Errorf("order by %q: a Nullable column (%s) cannot be in the sorting key", k, col.Type)
		}
	}
	return nil
}

// AddColumn is the ALTER TABLE statement adding c; a column without an
// Avro default is made Nullable where its type can be.
func AddColumn(database, table string, c Column) string {
	t := c.Type
	if c.Default == "" && !strings.HasPrefix(t, "Nullable(") && !strings.HasPrefix(t, "Array(") &&
		!strings.HasPrefix(t, "Map(") && !strings.HasPrefix(t, "Tuple(") && !strings.HasPrefix(t, "LowCardinality(") {
		t = "Nullable(" + t + ")"
	}
	if c.Default == "" && strings.HasPrefix(t, "LowCardinality(String") {
		t = "LowCardinality(Nullable(String))"
	}
	def := Column{Name: c.Name, Type: t, Default: c.Default}
	name := Quote(table)
	if database != "" {
		name = Quote(database) + "." + name
	}
	return "ALTER TABLE " + name + " ADD COLUMN " + columnDef(def)
}

// Quote is a ClickHouse identifier in backquotes.
func Quote(s string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(s) + "`"
}

// cdcColumns are the envelope's columns of a table of mode (replacing or
// collapsing).
func cdcColumns(mode string) []Column {
	if mode == config.DebeziumCollapsing {
		return []Column{{Name: transform.FieldVersion, Type: "UInt64"}, {Name: transform.FieldSign, Type: "Int8"}}
	}
	return []Column{{Name: transform.FieldVersion, Type: "UInt64"}, {Name: transform.FieldDeleted, Type: "UInt8"}}
}

// CDCTable fills in the engine and the sorting key of the table of a
// pipeline reading Debezium change events (cfg.CDC()) where t leaves them
// empty: ReplacingMergeTree(_version), with _deleted as its is_deleted
// column on servers that have one (23.2), or CollapsingMergeTree(_sign);
// ORDER BY decode.debezium.key. columns is the sink's column map: a
// column it fills from one of those fields stands for the field.
func CDCTable(cfg *config.Config, columns map[string]string, t Table, srv Server) Table {
	if !cfg.CDC() {
		return t
	}
	col := func(field string) string {
		for _, c := range slices.Sorted(maps.Keys(columns)) {
			if meta.Field(columns[c]) == field {
				return c
			}
		}
		return field
	}
	d := cfg.DebeziumSettings()
	if t.Engine == "" {
		switch {
		case d.Mode == config.DebeziumCollapsing:
			t.Engine = "CollapsingMergeTree(" + Quote(col(transform.FieldSign)) + ")"
		case srv.IsDeleted():
			t.Engine = "ReplacingMergeTree(" + Quote(col(transform.FieldVersion)) + ", " + Quote(col(transform.FieldDeleted)) + ")"
		default:
			t.Engine = "ReplacingMergeTree(" + Quote(col(transform.FieldVersion)) + ")"
		}
	}
	if len(t.OrderBy) == 0 {
		for _, k := range d.Key {
			t.OrderBy = append(t.OrderBy, col(k))
		}
	}
	return t
}
