package transform

import (
	"reflect"
	"testing"

	"github.com/etl-project/etl/config"
)

// A route rule with a topic takes the rows of that topic's records only;
// with a when as well, both must hold.
func TestRouteByTopic(t *testing.T) {
	outs := []Output{
		output(t, "a", "id UInt64"),
		output(t, "b", "id UInt64"),
		output(t, "rest", "id UInt64"),
	}
	in := mkSchema(t, "id UInt64")
	st := mkChunk(t, in)
	for i := range 4 {
		addRow(t, st, map[string]any{"id": i + 1})
	}
	c, err := Compile([]config.Step{{Pos: at(1, 5), Route: &config.Route{
		Rules: []config.RouteRule{
			{Topic: "ev.a", Sink: "a", Pos: at(2, 7)},
			{Topic: "ev.b", When: ex("id > 2", 3), Sink: "b", Pos: at(3, 7)},
		},
		Unmatched: "rest",
	}}}, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	e := newEmitter(t, outs)
	for row, topic := range []string{"ev.a", "ev.b", "ev.b", "ev.c"} {
		c.SetTopic(topic)
		if r, err := c.Run(st, row, e); err != nil || r != (Result{Out: 1}) {
			t.Fatalf("row %d of %s: %+v, %v", row, topic, r, err)
		}
	}
	for sink, want := range map[int][]string{0: {"1"}, 1: {"3"}, 2: {"2", "4"}} {
		if got := e.rows(sink, -1); !reflect.DeepEqual(got, want) {
			t.Errorf("sink %s: rows %v, want %v", outs[sink].Name, got, want)
		}
	}
	// A clone starts with no topic: no topic rule matches until it is set.
	cl := c.Clone()
	e = newEmitter(t, outs)
	if _, err := cl.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	if got := e.rows(2, -1); !reflect.DeepEqual(got, []string{"1"}) {
		t.Errorf("clone without topic: rest %v, want [1]", got)
	}
}
