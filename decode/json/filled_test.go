package json

import (
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
)

// TestFilled: the columns the caller fills get nothing from the decoder
// (no default, not counted absent), on the one-pass path and the fastjson
// one; a Nested structure of such columns leaves the one-pass path on; a
// column fed by a field cannot be one.
func TestFilled(t *testing.T) {
	s := &chunk.Schema{}
	for _, c := range [][2]string{{"a", "Int64"}, {"h.key", "Array(String)"}, {"h.value", "Array(String)"}, {"off", "Int64"}} {
		typ, err := chunk.ParseType(c[1])
		if err != nil {
			t.Fatal(err)
		}
		s.Names, s.Types = append(s.Names, c[0]), append(s.Types, typ)
	}
	fields := []string{"a", "", "", ""}
	d, err := New(s, Options{Fields: fields, Filled: []int{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if d.fast == nil {
		t.Fatal("a Nested structure the caller fills turned the one-pass path off")
	}
	c, _ := chunk.New(s)
	for _, v := range []string{`{"a": 1}`, `{"a": 2, "b": {"x": [1, 2]}}`} {
		if _, err := d.Decode([]byte(v), c); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Cols[3].Len(); n != 0 || (len(c.Absent) > 3 && c.Absent[3] != 0) {
		t.Errorf("the one-pass path appended %d rows to column off, counted %v absent; want none", n, c.Absent)
	}
	for _, noFast := range []bool{false, true} {
		d.noFast = noFast
		if _, err := d.Decode([]byte(`{"a": 3}`), c); err != nil {
			t.Fatal(err)
		}
	}
	if c.Rows != 4 || c.Cols[0].Len() != 4 {
		t.Fatalf("%d rows, column a %d; want 4", c.Rows, c.Cols[0].Len())
	}
	if _, err := New(s, Options{Fields: fields, Filled: []int{0}}); err == nil || !strings.Contains(err.Error(), "column 0 is fed by a field") {
		t.Errorf("a filled column with a field: error %v", err)
	}
	if d, err := New(s, Options{Fields: fields}); err != nil || d.fast != nil {
		t.Errorf("without Filled: error %v, one-pass path on %v; want it off for the Nested structure", err, d.fast != nil)
	}
}
