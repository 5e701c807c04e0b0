package clickhouse

// TableDiff is how the insert a target was planned for differs from the
// insert planned for the table as read again: the one answer to "did the
// table change", which the pipeline's refresh (install the live target or
// keep the current one), the shard's follow of a refused insert (re-target
// the batch at the columns left, or convert it to the new types) and
// Target.Same all read.
//
// Columns are matched by name among the inserted ones (Schema.Names): a
// column the mapping excludes, or one that became MATERIALIZED or ALIAS,
// is gone as much as a dropped one.
type TableDiff struct {
	// Added are the columns the live target inserts that the current one
	// does not, in the live target's order.
	Added []DiffColumn
	// Gone are the columns the current target inserts that the live one
	// does not, in the current target's order.
	Gone []DiffColumn
	// Retyped are the columns both insert whose type changed, in the
	// current target's order.
	Retyped []Retyped
	// Same is true when both targets insert the same thing: the same
	// statement (the same columns in the same order), each column of the
	// same type, filled from the same field and with the same computed
	// DEFAULT. A reordered table, a changed DEFAULT or a changed field
	// makes it false with nothing Added, Gone or Retyped.
	Same bool

	// added and removed are the columns ("name type") whose name and type
	// one target has and the other lacks: Added and the new side of
	// Retyped in the live order, Gone and the old side of Retyped in the
	// current order.
	added, removed []string
}

// DiffColumn is an inserted column, by name and ClickHouse type.
type DiffColumn struct{ Name, Type string }

func (c DiffColumn) String() string { return c.Name + " " + c.Type }

// Retyped is a column whose type changed from Old to New.
type Retyped struct{ Name, Old, New string }

func (r Retyped) String() string { return r.Name + " " + r.Old + " -> " + r.New }

// Diff compares cur, the target in use, with live, the target planned for
// the table as read now.
func Diff(cur, live *Target) TableDiff {
	var d TableDiff
	curType := make(map[string]string, len(cur.Schema.Names))
	for i, n := range cur.Schema.Names {
		curType[n] = cur.Schema.Types[i].Name
	}
	liveType := make(map[string]string, len(live.Schema.Names))
	for i, n := range live.Schema.Names {
		liveType[n] = live.Schema.Types[i].Name
	}
	for i, n := range cur.Schema.Names {
		typ := cur.Schema.Types[i].Name
		switch lt, ok := liveType[n]; {
		case !ok:
			d.Gone = append(d.Gone, DiffColumn{n, typ})
			d.removed = append(d.removed, n+" "+typ)
		case lt != typ:
			d.Retyped = append(d.Retyped, Retyped{Name: n, Old: typ, New: lt})
			d.removed = append(d.removed, n+" "+typ)
		}
	}
	for i, n := range live.Schema.Names {
		typ := live.Schema.Types[i].Name
		switch ct, ok := curType[n]; {
		case !ok:
			d.Added = append(d.Added, DiffColumn{n, typ})
			d.added = append(d.added, n+" "+typ)
		case ct != typ:
			d.added = append(d.added, n+" "+typ)
		}
	}
	d.Same = sameInsert(cur, live)
	return d
}

// sameInsert reports whether t and u insert the same columns with the same
// types and the same computed DEFAULTs from the same fields.
func sameInsert(t, u *Target) bool {
	if t.Query != u.Query || len(t.Fields) != len(u.Fields) {
		return false
	}
	for i := range t.Fields {
		if t.Fields[i] != u.Fields[i] || t.Schema.Types[i].Name != u.Schema.Types[i].Name || t.defaultOf(i) != u.defaultOf(i) {
			return false
		}
	}
	return true
}

// AddedTypes lists, as "name type", the columns the live target inserts
// whose name and type the current one lacks: the added columns and the
// new side of the retyped ones, in the live target's order.
func (d TableDiff) AddedTypes() []string { return d.added }

// RemovedTypes lists, as "name type", the columns the current target
// inserts whose name and type the live one lacks: the gone columns and
// the old side of the retyped ones, in the current target's order.
func (d TableDiff) RemovedTypes() []string { return d.removed }

// GoneNames lists the names of the Gone columns.
func (d TableDiff) GoneNames() []string {
	var out []string
	for _, c := range d.Gone {
		out = append(out, c.Name)
	}
	return out
}

// RetypedList lists the Retyped columns as "name old -> new".
func (d TableDiff) RetypedList() []string {
	var out []string
	for _, r := range d.Retyped {
		out = append(out, r.String())
	}
	return out
}
