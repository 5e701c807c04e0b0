package transform

import (
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
)

func fieldsSchema(t *testing.T, cols ...string) *chunk.Schema {
	t.Helper()
	s := &chunk.Schema{}
	for _, c := range cols {
		name, typ, _ := strings.Cut(c, " ")
		ct, err := chunk.ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		s.Names = append(s.Names, name)
		s.Types = append(s.Types, ct)
	}
	return s
}

func fieldList(fs []Field) string {
	var out []string
	for _, f := range fs {
		s := f.Name + " "
		if f.Type != nil {
			s += f.Type.Name
		} else {
			s += f.Kind
			if f.Nullable {
				s += "?"
			}
		}
		if f.Group != "" {
			s += " [" + f.Group + "]"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func TestFieldsOut(t *testing.T) {
	in := fieldsSchema(t, "a Int64", "b String", "n Nullable(Int64)", "e.x Array(Int64)", "e.y Array(String)", "r.id UInt32")
	hidden := map[string]bool{"r.id": true}
	groups := map[string]string{"e.x": "e", "e.y": "e"}
	for _, c := range []struct {
		name  string
		steps []config.Step
		want  string
	}{
		{"no steps", nil, "a Int64, b String, n Nullable(Int64), e.x Array(Int64) [e], e.y Array(String) [e]"},
		{"swap, then overwrite a field in place", []config.Step{
			{Rename: map[string]string{"a": "b", "b": "a"}},
			{Set: []config.Assignment{{Field: "a", Expr: config.Expr{Text: "len(a)"}}, {Field: "z", Expr: config.Expr{Text: "n"}}}},
		}, "b Int64, a Int64, n Nullable(Int64), e.x Array(Int64) [e], e.y Array(String) [e], z Int64?"},
		{"flatten, a hidden field renamed, a group dropped", []config.Step{
			{Flatten: "e"},
			{Set: []config.Assignment{{Field: "t", Expr: config.Expr{Text: "from_unix(e.x)"}}, {Field: "ok", Expr: config.Expr{Text: "e.y != ''"}}}},
			{Rename: map[string]string{"r.id": "rid"}},
			{Drop: []string{"e", "n"}},
		}, "a Int64, b String, t Time, ok Bool, rid UInt32"},
		{"flatten keeps element fields, as scalars", []config.Step{
			{Flatten: "e"},
			{Filter: &config.Expr{Text: "e.x > 0"}},
			{Route: &config.Route{Rules: []config.RouteRule{{When: &config.Expr{Text: "e.x > 5"}, Sink: "big"}}, Unmatched: "small"}},
		}, "a Int64, b String, n Nullable(Int64), e.x Int64, e.y String"},
	} {
		fs, err := FieldsOut(c.steps, in, hidden, groups, []string{"big", "small"})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := fieldList(fs); got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.name, got, c.want)
		}
	}
	if _, err := FieldsOut([]config.Step{{Set: []config.Assignment{{Field: "q", Expr: config.Expr{Text: "b * 2"}}}}}, in, hidden, groups, nil); err == nil {
		t.Error("a chain that does not compile gave fields")
	}
}
