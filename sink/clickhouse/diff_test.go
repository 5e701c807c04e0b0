package clickhouse

import (
	"reflect"
	"slices"
	"testing"
)

// TestDiff: each way a table can change is reported as exactly that, and
// Same holds only when nothing the insert depends on changed.
func TestDiff(t *testing.T) {
	t.Parallel()
	plan := func(t *testing.T, m Mapping, cols ...ColumnInfo) *Target {
		t.Helper()
		tg, err := Plan("db", "t", cols, m)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	id := ColumnInfo{Name: "id", Type: "UInt64"}
	msg := ColumnInfo{Name: "msg", Type: "String"}
	n := ColumnInfo{Name: "n", Type: "Int32"}
	base := func(t *testing.T) *Target { return plan(t, Mapping{}, id, msg, n) }

	for _, tc := range []struct {
		name string
		live func(t *testing.T) *Target
		want TableDiff
	}{
		{
			name: "nothing changed",
			live: base,
			want: TableDiff{Same: true},
		},
		{
			name: "a column added",
			live: func(t *testing.T) *Target {
				return plan(t, Mapping{}, id, ColumnInfo{Name: "tag", Type: "LowCardinality(String)"}, msg, n)
			},
			want: TableDiff{
				Added: []DiffColumn{{"tag", "LowCardinality(String)"}},
				added: []string{"tag LowCardinality(String)"},
			},
		},
		{
			name: "a column gone",
			live: func(t *testing.T) *Target { return plan(t, Mapping{}, id, n) },
			want: TableDiff{
				Gone:    []DiffColumn{{"msg", "String"}},
				removed: []string{"msg String"},
			},
		},
		{
			name: "a column made MATERIALIZED is gone",
			live: func(t *testing.T) *Target {
				return plan(t, Mapping{}, id, ColumnInfo{Name: "msg", Type: "String", DefaultKind: "MATERIALIZED", DefaultExpr: "'m'"}, n)
			},
			want: TableDiff{
				Gone:    []DiffColumn{{"msg", "String"}},
				removed: []string{"msg String"},
			},
		},
		{
			name: "a column retyped",
			live: func(t *testing.T) *Target { return plan(t, Mapping{}, id, msg, ColumnInfo{Name: "n", Type: "Int64"}) },
			want: TableDiff{
				Retyped: []Retyped{{Name: "n", Old: "Int32", New: "Int64"}},
				added:   []string{"n Int64"},
				removed: []string{"n Int32"},
			},
		},
		{
			name: "columns reordered",
			live: func(t *testing.T) *Target { return plan(t, Mapping{}, msg, id, n) },
			want: TableDiff{},
		},
		{
			name: "a column fed from another field",
			live: func(t *testing.T) *Target {
				return plan(t, Mapping{Columns: map[string]string{"msg": "text"}}, id, msg, n)
			},
			want: TableDiff{},
		},
		{
			name: "a default changed",
			live: func(t *testing.T) *Target {
				tg := base(t)
				tg.defaults[2] = "7" // as computeDefaults records a computed DEFAULT 7
				return tg
			},
			want: TableDiff{},
		},
		{
			name: "added, gone and retyped at once",
			live: func(t *testing.T) *Target {
				return plan(t, Mapping{}, ColumnInfo{Name: "n", Type: "String"}, ColumnInfo{Name: "z", Type: "Date"}, id, ColumnInfo{Name: "a", Type: "UInt8"})
			},
			want: TableDiff{
				Added:   []DiffColumn{{"z", "Date"}, {"a", "UInt8"}},
				Gone:    []DiffColumn{{"msg", "String"}},
				Retyped: []Retyped{{Name: "n", Old: "Int32", New: "String"}},
				added:   []string{"n String", "z Date", "a UInt8"},
				removed: []string{"msg String", "n Int32"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, live := base(t), tc.live(t)
			got := Diff(cur, live)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff =\n%+v\nwant\n%+v", got, tc.want)
			}
			if cur.Same(live) != tc.want.Same || live.Same(cur) != tc.want.Same {
				t.Errorf("Same = %v (and back %v), want %v", cur.Same(live), live.Same(cur), tc.want.Same)
			}
		})
	}

	t.Run("lists", func(t *testing.T) {
		d := Diff(base(t), plan(t, Mapping{}, ColumnInfo{Name: "n", Type: "String"}, ColumnInfo{Name: "id", Type: "UInt32"}))
		if got, want := d.GoneNames(), []string{"msg"}; !slices.Equal(got, want) {
			t.Errorf("GoneNames = %q, want %q", got, want)
		}
		if got, want := d.RetypedList(), []string{"id UInt64 -> UInt32", "n Int32 -> String"}; !slices.Equal(got, want) {
			t.Errorf("RetypedList = %q, want %q", got, want)
		}
		if got, want := d.AddedTypes(), []string{"n String", "id UInt32"}; !slices.Equal(got, want) {
			t.Errorf("AddedTypes = %q, want %q", got, want)
		}
		if got, want := d.RemovedTypes(), []string{"id UInt64", "msg String", "n Int32"}; !slices.Equal(got, want) {
			t.Errorf("RemovedTypes = %q, want %q", got, want)
		}
	})
}

// TestProjectDropsGone: Project keeps the old target's columns the live
// table still inserts, in the old order and reading the old chunk
// columns, and names the rest; with nothing left it returns nil.
func TestProjectDropsGone(t *testing.T) {
	t.Parallel()
	old, err := Plan("db", "t", []ColumnInfo{{Name: "id", Type: "UInt64"}, {Name: "msg", Type: "String"}, {Name: "n", Type: "Int32"}}, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	live, err := Plan("db", "t", []ColumnInfo{{Name: "n", Type: "Int64"}, {Name: "x", Type: "String"}, {Name: "id", Type: "UInt64"}}, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	p, dropped := Project(old, live)
	if !slices.Equal(dropped, []string{"msg"}) {
		t.Errorf("dropped = %q, want [msg]", dropped)
	}
	if p == nil {
		t.Fatal("Project returned nil")
	}
	if want := "INSERT INTO `db`.`t` (`id`, `n`)"; p.Query != want {
		t.Errorf("query = %q, want %q", p.Query, want)
	}
	if !slices.Equal(p.Fields, []string{"id", "n"}) || !slices.Equal(p.Source, []int{0, 2}) || p.From != old.Schema {
		t.Errorf("fields %q source %v from old schema %v; want [id n] [0 2] true", p.Fields, p.Source, p.From == old.Schema)
	}
	// The projection keeps the old type (the server converts it or refuses).
	if p.Schema.Types[1].Name != "Int32" {
		t.Errorf("n's type = %s, want Int32", p.Schema.Types[1].Name)
	}

	none, err := Plan("db", "t", []ColumnInfo{{Name: "other", Type: "UInt8"}}, Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	if p, dropped := Project(old, none); p != nil || !slices.Equal(dropped, []string{"id", "msg", "n"}) {
		t.Errorf("Project onto no common column = %v, %q; want nil, [id msg n]", p, dropped)
	}
}
