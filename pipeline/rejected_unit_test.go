package pipeline

import (
	"math"
	"testing"

	"github.com/etl-project/etl/chunk"
)

// TestRowsJSON: the dead-letter value of a refused record is its rows as
// JSON, readable for every kind of column.
func TestRowsJSON(t *testing.T) {
	names := []string{"n", "dt", "ip", "f", "a", "m", "ip6", "u"}
	var types []*chunk.Type
	for _, s := range []string{"Nullable(Int32)", "DateTime", "IPv4", "Float64", "Array(String)", "Map(String, UInt8)", "IPv6", "UUID"} {
		ty, err := chunk.ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ty)
	}
	c, err := chunk.New(&chunk.Schema{Names: names, Types: types})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		n := c.Cols[0].(*chunk.Nullable)
		if i == 0 {
			n.AppendNull()
		} else {
			n.Inner.(*chunk.Fixed[int32]).Append(-5)
			n.MarkValue()
		}
		c.Cols[1].(*chunk.Fixed[int64]).Append(1700000000)
		c.Cols[2].(*chunk.Fixed[uint32]).Append(0x01020304)
		c.Cols[3].(*chunk.Fixed[float64]).Append([]float64{math.NaN(), 1.5}[i])
		a := c.Cols[4].(*chunk.Array)
		a.Inner.(*chunk.Strings).AppendString("x\x00\"")
		a.EndRow()
		m := c.Cols[5].(*chunk.Map)
		m.Keys.(*chunk.Strings).AppendString("k")
		m.Values.(*chunk.Fixed[uint8]).Append(7)
		m.EndRow()
		c.Cols[6].(*chunk.Fixed[[16]byte]).Append([16]byte{10: 0xff, 11: 0xff, 12: 1, 13: 2, 14: 3, 15: 4})
		c.Cols[7].(*chunk.Strings).AppendString("01234567-89ab-cdef-0123-456789abcdef")
		c.Rows++
	}
	if got, want := string(rowsJSON(c, 1, 2)),
		`{"a":["x\u0000\""],"dt":"2023-11-14 22:13:20","f":1.5,"ip":"1.2.3.4","ip6":"1.2.3.4","m":[["k",7]],"n":-5,"u":"01234567-89ab-cdef-0123-456789abcdef"}`; got != want {
		t.Errorf("one row:\n got %s\nwant %s", got, want)
	}
	if got, want := string(rowsJSON(c, 0, 2)),
		`[{"a":["x\u0000\""],"dt":"2023-11-14 22:13:20","f":"NaN","ip":"1.2.3.4","ip6":"1.2.3.4","m":[["k",7]],"n":null,"u":"01234567-89ab-cdef-0123-456789abcdef"},`+
			`{"a":["x\u0000\""],"dt":"2023-11-14 22:13:20","f":1.5,"ip":"1.2.3.4","ip6":"1.2.3.4","m":[["k",7]],"n":-5,"u":"01234567-89ab-cdef-0123-456789abcdef"}]`; got != want {
		t.Errorf("two rows:\n got %s\nwant %s", got, want)
	}
}
