package clickhouse

import (
	"strings"
	"testing"

	"github.com/etl-project/etl/chunk"
)

// TestChgoBlockRefusesUnencodable: a target with a column type the Native
// encoder cannot write (an Enum8 value out of its range, which no server
// table has) is a permanent insert error naming the column, not a hand
// over to another insert path.
func TestChgoBlockRefusesUnencodable(t *testing.T) {
	bad := &chunk.Type{Kind: chunk.KindEnum8, Name: "Enum8('a' = 1000)", Enum: map[string]int16{"a": 1000}}
	tg := &Target{Database: "db", Table: "t", Schema: &chunk.Schema{
		Names: []string{"id", "e"},
		Types: []*chunk.Type{{Kind: chunk.KindUInt64, Name: "UInt64"}, bad},
	}}
	_, err := (&chgoConn{}).block(tg)
	if err == nil {
		t.Fatal("block accepted an Enum8 value of 1000")
	}
	if !Permanent(err) || RowRejected(err) {
		t.Errorf("Permanent %v, RowRejected %v: want a permanent error of the plan, not of rows", Permanent(err), RowRejected(err))
	}
	if msg := err.Error(); !strings.Contains(msg, "db.t") || !strings.Contains(msg, "column e") {
		t.Errorf("error %q does not name the table and the column", msg)
	}
}
