package transform

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
)

// eventSteps flattens events, keeps big enough events of the wanted
// kinds and derives fields from the element and the parent.
func eventSteps() []config.Step {
	return []config.Step{
		filter(`user != "bot"`, 1),
		set(2, "uid", `upper(user)`),
		flatten("events", 4),
		filter(`events.value >= 10`, 5),
		set(6, "total", `events.value * qty`, "label", `concat(uid, ":", events.kind)`),
		{Rename: map[string]string{"events.kind": "kind"}, Pos: at(9, 5)},
		{Drop: []string{"qty"}, Pos: at(10, 5)},
	}
}

func eventOutput(t testing.TB) Output {
	return output(t, "main",
		"id UInt64", "kind LowCardinality(String)", "value Int32 <- events.value",
		"total Int64", "label String", "ts DateTime")
}

func TestInputsAndFlatten(t *testing.T) {
	steps := eventSteps()
	outs := []Output{eventOutput(t)}
	in, err := Inputs(steps, outs, map[string]string{"user": "String", "qty": "Int64", "events.value": "Int64"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, n := range in.Names {
		got = append(got, n+" "+in.Types[i].Name)
	}
	want := []string{"user String", "events.value Array(Int64)", "qty Int64", "events.kind Array(String)", "id UInt64", "ts DateTime"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("staging schema\n got %v\nwant %v", got, want)
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	ts := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	addRow(t, st, map[string]any{"user": "ann", "qty": 2, "id": 1, "ts": ts,
		"events.value": []any{5, 10, 20}, "events.kind": []any{"a", "b", "c"}})
	addRow(t, st, map[string]any{"user": "bot", "qty": 1, "id": 2, "ts": ts,
		"events.value": []any{50}, "events.kind": []any{"x"}})
	addRow(t, st, map[string]any{"user": "bob", "qty": 3, "id": 3, "ts": ts,
		"events.value": []any{}, "events.kind": []any{}})
	addRow(t, st, map[string]any{"user": "cy", "qty": 1, "id": 4, "ts": ts,
		"events.value": []any{11}, "events.kind": []any{"z"}})
	e := newEmitter(t, outs)
	wantRes := []Result{{Out: 2, Dropped: 1}, {Dropped: 1}, {}, {Out: 1}}
	for row := range 4 {
		res, err := c.Run(st, row, e)
		if err != nil {
			t.Fatalf("row %d: %v", row, err)
		}
		if res != wantRes[row] {
			t.Errorf("row %d: %+v, want %+v", row, res, wantRes[row])
		}
	}
	wantRows := []string{
		"1|b|10|20|ANN:b|1704164645",
		"1|c|20|40|ANN:c|1704164645",
		"4|z|11|11|CY:z|1704164645",
	}
	if got := e.rows(0, -1); !reflect.DeepEqual(got, wantRows) {
		t.Errorf("rows\n got %v\nwant %v", got, wantRows)
	}
}

func TestInputsTypes(t *testing.T) {
	outs := []Output{
		output(t, "a", "id UInt64", "name LowCardinality(String) <- who", "n Nullable(Int32)"),
		output(t, "b", "id UInt64", "tags Array(String)"),
	}
	steps := []config.Step{
		{Rename: map[string]string{"user.name": "who"}, Pos: at(1, 5)},
		filter(`score > 0.5`, 2),
	}
	in, err := Inputs(steps, outs, map[string]string{"score": "Float64"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, n := range in.Names {
		got[n] = in.Types[i].Name
	}
	want := map[string]string{"id": "UInt64", "user.name": "String", "n": "Nullable(Int32)", "score": "Float64", "tags": "Array(String)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	// Errors: an untyped field, a conflict, a dropped field.
	_, err = Inputs([]config.Step{filter(`score > 0.5 && amount > 1`, 3)}, outs, map[string]string{"amount": "Int64"})
	// The hint's type is the one the expression's use suggests.
	wantErr := `p.yaml:3:13: transform[0].filter: field "score" has no known type: no sink column receives it unchanged and decode.fields does not declare it; ` +
		`declare it (e.g. decode.fields: {score: Float64}), at column 1 of: score > 0.5 && amount > 1`
	if err == nil || err.Error() != wantErr {
		t.Errorf("got %v\nwant %s", err, wantErr)
	}
	// A misspelled field: did you mean the declared field, or the field
	// that goes into a column, with its type.
	_, err = Inputs([]config.Step{filter(`events.valeu > 0`, 3)}, outs, map[string]string{"events.value": "Int64"})
	wantErr = `p.yaml:3:13: transform[0].filter: field "events.valeu" has no known type: no sink column receives it unchanged and decode.fields does not declare it; ` +
		`did you mean "events.value" (Int64)? If "events.valeu" is a field of its own, declare its ClickHouse type in decode.fields (e.g. decode.fields: {events.valeu: Int64}), at column 1 of: events.valeu > 0`
	if err == nil || err.Error() != wantErr {
		t.Errorf("got %v\nwant %s", err, wantErr)
	}
	_, err = Inputs([]config.Step{filter(`upper(whoo) == "X"`, 3)}, outs, nil)
	if err == nil || !strings.Contains(err.Error(), `did you mean "who" (String)?`) {
		t.Errorf("got %v, want a did-you-mean of who", err)
	}
	_, err = Inputs([]config.Step{filter(`upper(city) == "X"`, 3)}, outs, nil)
	if err == nil || !strings.Contains(err.Error(), `(e.g. decode.fields: {city: String})`) {
		t.Errorf("got %v, want a String hint for a field passed to upper", err)
	}
	conflict := []Output{output(t, "a", "x UInt64"), output(t, "b", "x String")}
	_, err = Inputs(nil, conflict, nil)
	wantErr = `sink "a" column x (UInt64): field "x" goes unchanged into columns of different types, UInt64 (sink "a" column x (UInt64)) and String (sink "b" column x (String)): declare its type in decode.fields`
	if err == nil || err.Error() != wantErr {
		t.Errorf("got %v\nwant %s", err, wantErr)
	}
	_, err = Inputs([]config.Step{{Drop: []string{"id"}, Pos: at(4, 5)}}, outs, nil)
	wantErr = `sink "a" column id (UInt64): field "id" was dropped at transform[0]` + "\n" +
		`sink "b" column id (UInt64): field "id" was dropped at transform[0]`
	if err == nil || err.Error() != wantErr {
		t.Errorf("got %v\nwant %s", err, wantErr)
	}
	// A flattened element field declared by its element type.
	in, err = Inputs([]config.Step{flatten("ev", 1), filter(`ev.v > 1`, 2)}, nil, map[string]string{"ev.v": "UInt8"})
	if err != nil || len(in.Names) != 1 || in.Types[0].Name != "Array(UInt8)" {
		t.Errorf("declared element: %v %v", in, err)
	}
	_, err = Inputs([]config.Step{flatten("ev", 1)}, nil, nil)
	wantErr = `p.yaml:1:5: transform[0].flatten: no field of the elements of "ev" is read: read one (ev.<name>) in a later step or an output, or declare one in decode.fields`
	if err == nil || err.Error() != wantErr {
		t.Errorf("got %v\nwant %s", err, wantErr)
	}
	_, err = Inputs([]config.Step{filter(`ev.v > 1`, 1), flatten("ev", 2)}, nil, map[string]string{"ev.v": "UInt8"})
	wantErr = `p.yaml:1:13: transform[0].filter: field "ev.v" is a field of the elements of "ev": it can be read only after the flatten step (transform[1]), at column 1 of: ev.v > 1`
	if err == nil || err.Error() != wantErr {
		t.Errorf("got %v\nwant %s", err, wantErr)
	}
}

func TestFanOutAndRoute(t *testing.T) {
	outs := []Output{
		output(t, "clicks", "id UInt64", "kind String"),
		output(t, "views", "id UInt64"),
		output(t, "other", "kind String", "id UInt64"),
	}
	in := mkSchema(t, "id UInt64", "kind String")
	st := mkChunk(t, in)
	for i, k := range []string{"click", "view", "buy", "view"} {
		addRow(t, st, map[string]any{"id": i + 1, "kind": k})
	}
	run := func(steps []config.Step) (*emitter, []Result, []error) {
		t.Helper()
		c, err := Compile(steps, in, outs)
		if err != nil {
			t.Fatal(err)
		}
		e := newEmitter(t, outs)
		var res []Result
		var errs []error
		for row := 0; row < st.Rows; row++ {
			r, err := c.Run(st, row, e)
			res = append(res, r)
			errs = append(errs, err)
		}
		return e, res, errs
	}
	// Without a route every row goes to every sink.
	e, res, _ := run(nil)
	if got := e.rows(1, -1); len(got) != 4 || len(e.rows(0, -1)) != 4 || len(e.rows(2, -1)) != 4 {
		t.Errorf("fan-out: %v %v %v", e.rows(0, -1), got, e.rows(2, -1))
	}
	if res[0].Out != 3 {
		t.Errorf("fan-out result %+v", res[0])
	}
	route := func(unmatched string) []config.Step {
		return []config.Step{{Pos: at(1, 5), Route: &config.Route{
			Rules: []config.RouteRule{
				{When: ex(`kind == "click"`, 2), Sink: "clicks", Pos: at(2, 7)},
				{When: ex(`kind == "view"`, 3), Sink: "views", Pos: at(3, 7)},
			},
			Unmatched: unmatched,
		}}}
	}
	e, res, _ = run(route("other"))
	if got := e.rows(0, -1); !reflect.DeepEqual(got, []string{"1|click"}) {
		t.Errorf("clicks %v", got)
	}
	if got := e.rows(1, -1); !reflect.DeepEqual(got, []string{"2", "4"}) {
		t.Errorf("views %v", got)
	}
	if got := e.rows(2, -1); !reflect.DeepEqual(got, []string{"buy|3"}) {
		t.Errorf("other %v", got)
	}
	for i, r := range res {
		if r != (Result{Out: 1}) {
			t.Errorf("route to other: row %d result %+v, want one row out", i, r)
		}
	}
	e, res, _ = run(route("skip"))
	if res[2] != (Result{Dropped: 1}) || len(e.rows(2, -1)) != 0 {
		t.Errorf("skip: %+v %v", res[2], e.rows(2, -1))
	}
	_, _, errs := run(route("fail"))
	var te *Error
	if !errors.As(errs[2], &te) || te.Reason != ReasonUnroutable || errs[2].Error() != "transform[0].route: no route rule matched the row" {
		t.Errorf("fail: %v", errs[2])
	}
	if errs[0] != nil || errs[1] != nil {
		t.Errorf("fail: %v", errs)
	}
	// A rule without when matches every row.
	e, _, _ = run([]config.Step{{Pos: at(1, 5), Route: &config.Route{
		Rules: []config.RouteRule{{Sink: "views"}}, Unmatched: "fail"}}})
	if len(e.rows(1, -1)) != 4 {
		t.Errorf("catch-all %v", e.rows(1, -1))
	}
}

func TestRouteErrors(t *testing.T) {
	outs := []Output{output(t, "clicks", "id UInt64"), output(t, "views", "id UInt64")}
	in := mkSchema(t, "id UInt64", "kind String")
	steps := []config.Step{
		{Pos: at(1, 5), Route: &config.Route{
			Rules: []config.RouteRule{
				{When: ex(`kind == "click"`, 2), Sink: "clickz", Pos: at(2, 7)},
				{When: ex(`kind`, 3), Sink: "views", Pos: at(3, 7)},
			},
			Unmatched: "nowhere",
		}},
		{Pos: at(4, 5), Route: &config.Route{Unmatched: "skip"}},
	}
	_, err := Compile(steps, in, outs)
	want := strings.Join([]string{
		`p.yaml:2:7: transform[0].route.rules[0].sink: no sink named "clickz" (did you mean "clicks"?); sinks: clicks, views`,
		`p.yaml:3:13: transform[0].route.rules[1].when: a route condition must be Bool, got String, in: kind`,
		`p.yaml:1:5: transform[0].route.unmatched: must be skip, fail or a sink name (clicks, views); got "nowhere"`,
		`p.yaml:4:5: transform[1].route: only one route step is supported`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

func TestCompileErrors(t *testing.T) {
	in := mkSchema(t, "amount Int64", "name String", "n Nullable(Int64)", "ev.v Array(Int64)")
	outs := []Output{output(t, "main", "amount UInt32", "total UInt64", "name String")}
	steps := []config.Step{
		filter(`amout > 5`, 1),
		filter(`amount + 1`, 2),
		set(3, "total", `name`),
		{Drop: []string{"name"}, Pos: at(5, 5)},
		filter(`name == "x"`, 6),
		{Filter: ex("n", 7), Set: []config.Assignment{{Field: "a"}}, Pos: at(7, 5)},
		filter(`(n > 1) ?? false`, 8),
		filter(`ev.v > 1`, 9),
	}
	_, err := Compile(steps, in, outs)
	want := strings.Join([]string{
		`p.yaml:1:13: transform[0].filter: unknown field "amout" (did you mean "amount"?), at column 1 of: amout > 5`,
		`p.yaml:2:13: transform[1].filter: a filter must be Bool, got Int64, in: amount + 1`,
		`p.yaml:6:13: transform[4].filter: field "name" was dropped at transform[3], at column 1 of: name == "x"`,
		`p.yaml:7:5: transform[5]: a step sets exactly one of flatten, filter, set, rename, drop, route; this one sets filter, set`,
		`p.yaml:8:13: transform[6].filter: field "n" is Nullable(Int64): give it a default with ?? (e.g. x ?? 0) or test it with == nil, at column 2 of: (n > 1) ?? false`,
		`p.yaml:9:13: transform[7].filter: field "ev.v" is an array (Array(Int64)): expressions read one element at a time after flatten: ev.v, at column 1 of: ev.v > 1`,
		`p.yaml:4:14: transform[2].set.total: the String result cannot go into column total (UInt64) of sink "main": a String value cannot go into a UInt64 column: convert it with int(s) or float(s)`,
		`sink "main" column name (String): field "name" was dropped at transform[3]`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	var ce CompileErrors
	if !errors.As(err, &ce) || len(ce) != 8 || ce[0].Pos.Line != 1 || ce[0].Path != "transform[0].filter" {
		t.Errorf("CompileErrors: %#v", err)
	}
}

// TestSetRenameDrop checks that set fields are readable by later steps,
// overwrite source fields, and that rename and drop change the field set.
func TestSetRenameDrop(t *testing.T) {
	in := mkSchema(t, "a Int64", "b String", "c Int64")
	outs := []Output{output(t, "o", "a Int64", "x String", "y Int64", "z Int64")}
	steps := []config.Step{
		set(1, "a", "a * 10", "y", "a + 1"), // y sees the new a
		{Rename: map[string]string{"b": "x", "c": "z"}, Pos: at(3, 5)},
		set(4, "z", "z + y"),
		{Rename: map[string]string{"a": "tmp", "z": "a"}, Pos: at(5, 5)},
		{Rename: map[string]string{"tmp": "z", "a": "a2"}, Pos: at(6, 5)},
		{Rename: map[string]string{"a2": "a"}, Pos: at(7, 5)},
		{Drop: []string{"tmp", "never"}, Pos: at(8, 5)},
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"a": 2, "b": "bee", "c": 100})
	e := newEmitter(t, outs)
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	// a=20, y=21, z=121; then a<->z swap through tmp.
	if got := e.rows(0, -1); !reflect.DeepEqual(got, []string{"121|bee|21|20"}) {
		t.Errorf("got %v", got)
	}
	// Swapping in one step.
	steps = []config.Step{{Rename: map[string]string{"a": "c", "c": "a"}, Pos: at(1, 5)}}
	outs = []Output{output(t, "o", "a Int64", "c Int64")}
	c, err = Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	e = newEmitter(t, outs)
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	if got := e.rows(0, -1); !reflect.DeepEqual(got, []string{"100|2"}) {
		t.Errorf("swap: got %v", got)
	}
	_, err = Compile([]config.Step{{Rename: map[string]string{"a": "x", "b": "x"}, Pos: at(1, 5)}}, in, nil)
	if err == nil || err.Error() != `p.yaml:1:5: transform[0].rename: both "a" and "b" are renamed to "x"` {
		t.Errorf("got %v", err)
	}
	_, err = Compile([]config.Step{{Drop: []string{"a"}, Pos: at(1, 5)}, {Rename: map[string]string{"a": "x"}, Pos: at(2, 5)}}, in, nil)
	if err == nil || err.Error() != `p.yaml:2:5: transform[1].rename: field "a" was dropped at transform[0]` {
		t.Errorf("got %v", err)
	}
}

func TestNullable(t *testing.T) {
	in := mkSchema(t, "n Nullable(Int64)", "s Nullable(String)", "ev.v Array(Nullable(Int32))")
	outs := []Output{output(t, "o",
		"n Nullable(Int64)",                  // copied
		"n32 Nullable(Int32) <- n",           // converted, range-checked
		"d Int64",                            // n ?? -1
		"s LowCardinality(Nullable(String))", // copied through LowCardinality
		"e Nullable(Int16) <- ev.v",
		"c Nullable(String)", // conditional nil
		"z Nullable(UInt8)",  // set: nil
	)}
	steps := []config.Step{
		set(1, "d", "n ?? -1", "c", `n == nil ? nil : "has"`, "z", "nil"),
		flatten("ev", 5),
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"n": nil, "s": "x", "ev.v": []any{nil, 7}})
	addRow(t, st, map[string]any{"n": 5, "s": nil, "ev.v": []any{1}})
	e := newEmitter(t, outs)
	for row := range 2 {
		if _, err := c.Run(st, row, e); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"<nil>|<nil>|-1|x|<nil>|<nil>|<nil>",
		"<nil>|<nil>|-1|x|7|<nil>|<nil>",
		"5|5|5|<nil>|1|has|<nil>",
	}
	if got := e.rows(0, -1); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	// A Nullable value into a column that is not Nullable.
	_, err = Compile(nil, in, []Output{output(t, "o", "n Int64")})
	if err == nil || err.Error() != `sink "o" column n (Int64): field "n" (Nullable(Int64)): the value is Nullable(Int64) and the column is not Nullable: give it a default with ??` {
		t.Errorf("got %v", err)
	}
}

// TestRangeErrorsTruncate checks that a value out of range fails the
// record and removes every row the record had appended, in every sink.
func TestRangeErrorsTruncate(t *testing.T) {
	in := mkSchema(t, "id Int64", "ev.v Array(Int64)", "ev.s Array(String)")
	outs := []Output{
		output(t, "a", "id Int64", "s String <- ev.s", "v Nullable(Int64) <- ev.v"),
		output(t, "b", "s String <- ev.s", "v UInt8 <- ev.v", "id Int64"),
	}
	steps := []config.Step{flatten("ev", 1)}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"id": 1, "ev.v": []any{1, 2}, "ev.s": []any{"a", "b"}})
	addRow(t, st, map[string]any{"id": 2, "ev.v": []any{3, 300, 4}, "ev.s": []any{"c", "d", "e"}})
	addRow(t, st, map[string]any{"id": 3, "ev.v": []any{5}, "ev.s": []any{"f"}})
	e := newEmitter(t, outs)
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(st, 1, e)
	var te *Error
	if !errors.As(err, &te) || te.Reason != ReasonOutOfRange ||
		err.Error() != `sink "b" column v (UInt8): value 300 is out of the range of UInt8` {
		t.Fatalf("got %v", err)
	}
	if _, err := c.Run(st, 2, e); err != nil {
		t.Fatal(err)
	}
	if got, want := e.rows(0, -1), []string{"1|a|1", "1|b|2", "3|f|5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a: got %v, want %v", got, want)
	}
	if got, want := e.rows(1, -1), []string{"a|1|1", "b|2|1", "f|5|3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("b: got %v, want %v", got, want)
	}
	for k, ch := range e.chunks {
		for i, col := range ch.Cols {
			if col.Len() != ch.Rows {
				t.Errorf("chunk %v column %d has %d rows, chunk %d", k, i, col.Len(), ch.Rows)
			}
		}
		if s := ch.Cols[0]; k[0] == 1 {
			if got := s.(*chunk.Strings).Buf; string(got) != "abf" {
				t.Errorf("string arena %q", got)
			}
		}
	}
	// Misaligned arrays of one flattened structure.
	bad := mkChunk(t, in)
	addRow(t, bad, map[string]any{"id": 1, "ev.v": []any{1, 2}, "ev.s": []any{"a"}})
	_, err = c.Run(bad, 0, e)
	if !errors.As(err, &te) || te.Reason != ReasonOutOfRange || te.Step != "transform[0].flatten" {
		t.Errorf("misaligned: %v", err)
	}
}

func TestOutputConversions(t *testing.T) {
	in := mkSchema(t, "i Int64", "u UInt64", "f Float64", "s String", "ts DateTime", "b Bool")
	outs := []Output{output(t, "o",
		"i8 Int8 <- i", "u16 UInt16 <- i", "f32 Float32 <- f", "fi Float64 <- i", "fs FixedString(3) <- s",
		"e Enum8('a' = 1, 'b' = 2) <- s", "ei Enum16('x' = 7) <- i", "dt DateTime <- ts", "dti DateTime <- i",
		"d Date <- ts", "d64 DateTime64(3) <- ts", "dec Decimal(6, 2) <- f", "u8 UInt8 <- b", "uu UInt64 <- u",
		"uid UUID <- s2", "bb Bool <- b",
	)}
	steps := []config.Step{set(1, "s2", `s == "b" ? "61f0c404-5cb3-11e7-907b-a6006ad3dba0" : s`)}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	good := map[string]any{"i": 7, "u": uint64(1 << 63), "f": 1234.5, "s": "b", "ts": ts, "b": true}
	st := mkChunk(t, in)
	addRow(t, st, good)
	e := newEmitter(t, outs)
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	want := "7|7|1234.5|7|b|b|x|1714979289|7|2024-05-06 00:00:00 +0000 UTC|1714979289000|1234.5|1|9223372036854775808|61f0c404-5cb3-11e7-907b-a6006ad3dba0|true"
	if got := e.rows(0, -1); len(got) != 1 || got[0] != want {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	bad := []struct {
		row    map[string]any
		reason string
		msg    string
	}{
		{map[string]any{"i": 200}, ReasonOutOfRange, `sink "o" column i8 (Int8): value 200 is out of the range of Int8`},
		{map[string]any{"i": -1}, ReasonOutOfRange, `sink "o" column u16 (UInt16): value -1 is out of the range of UInt16`},
		{map[string]any{"i": 7, "s": "toolong"}, ReasonOutOfRange, `sink "o" column fs (FixedString(3)): "toolong" is longer than 3 bytes`},
		{map[string]any{"i": 7, "s": "c"}, ReasonOutOfRange, `sink "o" column e (Enum8('a' = 1, 'b' = 2)): "c" is not a value of Enum8('a' = 1, 'b' = 2)`},
		{map[string]any{"i": 6, "s": "a"}, ReasonOutOfRange, `sink "o" column ei (Enum16('x' = 7)): 6 is not a value of Enum16('x' = 7)`},
		{map[string]any{"i": 7, "s": "a", "f": 12345.0}, ReasonOutOfRange, `sink "o" column dec (Decimal(6, 2)): 12345 is out of the range of Decimal(6, 2)`},
		{map[string]any{"i": 7, "s": "a", "f": 1234.567}, ReasonOutOfRange, `sink "o" column dec (Decimal(6, 2)): 1234.567 has more fraction digits than Decimal(6, 2) keeps (scale 2): round it in the expression, e.g. round(x, 2)`},
		{map[string]any{"i": 7, "s": "a", "f": 0.30000000000000004}, ReasonOutOfRange, `sink "o" column dec (Decimal(6, 2)): 0.30000000000000004 has more fraction digits than Decimal(6, 2) keeps (scale 2): round it in the expression, e.g. round(x, 2)`},
		{map[string]any{"i": 7, "s": "a", "ts": time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}, ReasonOutOfRange, `sink "o" column d (Date): day 1960-01-01 is out of the range of Date`},
	}
	for _, tc := range bad {
		st := mkChunk(t, in)
		row := map[string]any{}
		for k, v := range good {
			row[k] = v
		}
		for k, v := range tc.row {
			row[k] = v
		}
		addRow(t, st, row)
		e := newEmitter(t, outs)
		_, err := c.Run(st, 0, e)
		var te *Error
		if !errors.As(err, &te) || te.Reason != tc.reason || err.Error() != tc.msg {
			t.Errorf("%v: got %v, want %s", tc.row, err, tc.msg)
		}
		if ch := e.chunks[[2]int{0, -1}]; ch != nil && (ch.Rows != 0 || ch.Cols[0].Len() != 0) {
			t.Errorf("%v: chunk not truncated", tc.row)
		}
	}
	// A UUID that is not one.
	st = mkChunk(t, in)
	addRow(t, st, map[string]any{"i": 7, "s": "a", "f": 1.0, "ts": ts})
	_, err = c.Run(st, 0, newEmitter(t, outs))
	if err == nil || err.Error() != `sink "o" column uid (UUID): "a" is not a UUID` {
		t.Errorf("uuid: %v", err)
	}

	// Unsupported combinations are startup errors.
	for _, tc := range []struct{ col, msg string }{
		{"x Int64 <- f", `field "f" (Float64): a Float64 value cannot go into a Int64 column: convert it with int(x) (truncates) or int(round(x))`},
		{"x String <- i", `field "i" (Int64): a Int64 value cannot go into a String column: convert it with string(x)`},
		{"x DateTime <- s", `field "s" (String): a String value cannot go into a DateTime column: parse it with parse_time(s, layout)`},
		{"x Array(String) <- s", `field "s" (String): a computed value cannot go into a Array(String) column (only a field copied unchanged from a column of the same type can)`},
		{"x Map(String, Int64) <- s", `field "s" (String): a computed value cannot go into a Map(String, Int64) column (only a field copied unchanged from a column of the same type can)`},
	} {
		_, err := Compile(nil, in, []Output{output(t, "o", tc.col)})
		want := `sink "o" column ` + tc.col[:strings.Index(tc.col, " <-")] + ": " + tc.msg
		want = strings.Replace(want, "column x ", "column x (", 1)
		want = strings.Replace(want, ": field", "): field", 1)
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", tc.col, err, want)
		}
	}
}

// TestCopyComposite checks that columns of any type are copied unchanged.
func TestCopyComposite(t *testing.T) {
	in := mkSchema(t, "m Map(String, Int64)", "tu Tuple(a Int64, b String)", "arr Array(Nullable(String))", "big Int128", "ip IPv6", "d64 DateTime64(6)")
	outs := []Output{output(t, "o", "m Map(String, Int64)", "tu Tuple(a Int64, b String)", "arr Array(Nullable(String))", "big Int128", "ip IPv6", "d64 DateTime64(6)")}
	c, err := Compile(nil, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	m := st.Cols[0].(*chunk.Map)
	m.Keys.(*chunk.Strings).AppendString("k")
	m.Values.(*chunk.Fixed[int64]).Append(9)
	m.EndRow()
	tu := st.Cols[1].(*chunk.Tuple)
	tu.Elems[0].(*chunk.Fixed[int64]).Append(4)
	tu.Elems[1].(*chunk.Strings).AppendString("four")
	tu.EndRow()
	if err := appendVal(st.Cols[2], st.Schema.Types[2], []any{"x", nil}); err != nil {
		t.Fatal(err)
	}
	st.Cols[3].(*chunk.BigInt).Append([]uint64{1, 2})
	st.Cols[4].(*chunk.Fixed[[16]byte]).Append([16]byte{1, 2, 3})
	st.Cols[5].(*chunk.DateTime64).Append(123456)
	st.Rows = 1
	e := newEmitter(t, outs)
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	out := e.chunks[[2]int{0, -1}]
	for i := range in.Names {
		if !reflect.DeepEqual(out.Cols[i].Row(0), st.Cols[i].Row(0)) && i != 0 {
			t.Errorf("column %s: %v != %v", in.Names[i], out.Cols[i].Row(0), st.Cols[i].Row(0))
		}
	}
	om := out.Cols[0].(*chunk.Map)
	if om.Keys.(*chunk.Strings).Value(0) != "k" || om.Values.(*chunk.Fixed[int64]).Data[0] != 9 || om.Ends[0] != 1 {
		t.Errorf("map not copied")
	}
}

func TestSharding(t *testing.T) {
	in := mkSchema(t, "k String", "v Int64")
	o := output(t, "s", "k String", "v Int64")
	o.ShardKey, o.Weights = 0, []int{1, 2, 3}
	outs := []Output{o}
	c, err := Compile([]config.Step{set(1, "k", `concat(k, "!")`)}, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i, k := range keys {
		addRow(t, st, map[string]any{"k": k, "v": i})
	}
	e := newEmitter(t, outs)
	for row := range keys {
		if _, err := c.Run(st, row, e); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	kt := o.Schema.Types[0]
	for k, ch := range e.chunks {
		for i := 0; i < ch.Rows; i++ {
			h, _ := KeyHash(kt, ch.Cols[0], i)
			if ShardOf(h, o.Weights) != k[1] {
				t.Errorf("row %v in shard %d", rows(ch)[i], k[1])
			}
			total++
		}
	}
	if total != len(keys) || len(e.chunks) < 2 {
		t.Errorf("%d rows in %d shards", total, len(e.chunks))
	}
	// ShardOf follows the Distributed engine's ranges.
	for h, want := range []int{0, 1, 1, 2, 2, 2, 0, 1} {
		if got := ShardOf(uint64(h), []int{1, 2, 3}); got != want {
			t.Errorf("ShardOf(%d) = %d, want %d", h, got, want)
		}
	}
	if ShardOf(5, []int{0, 1}) != 1 || ShardOf(5, []int{1}) != 0 || ShardOf(5, nil) != 0 {
		t.Errorf("ShardOf edge cases")
	}
}

// TestParentStepsOnce checks that steps before the flatten run once per
// record, and their strings survive every element.
func TestParentStepsOnce(t *testing.T) {
	in := mkSchema(t, "name String", "ev.v Array(Int64)", "js String")
	outs := []Output{output(t, "o", "u String", "v Int64 <- ev.v", "w String", "j Int64")}
	steps := []config.Step{
		set(1, "u", `upper(name)`),
		flatten("ev", 3),
		set(4, "w", `concat(u, string(ev.v))`, "j", `json_int(js, "a") + ev.v`),
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.p.pre) != 1 || len(c.p.post) != 2 {
		t.Fatalf("pre %d post %d", len(c.p.pre), len(c.p.post))
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"name": "ab", "ev.v": []any{1, 22, 333}, "js": `{"a": 1000}`})
	e := newEmitter(t, outs)
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	want := []string{"AB|1|AB1|1001", "AB|22|AB22|1022", "AB|333|AB333|1333"}
	if got := e.rows(0, -1); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestScalarArrayFlatten(t *testing.T) {
	outs := []Output{output(t, "o", "tag String <- tags", "id UInt64")}
	steps := []config.Step{flatten("tags", 1), filter(`tags != ""`, 2)}
	in, err := Inputs(steps, outs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Names[0] != "tags" || in.Types[0].Name != "Array(String)" {
		t.Fatalf("staging %v %v", in.Names, in.Types)
	}
	c, err := Compile(steps, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"tags": []any{"x", "", "y"}, "id": 9})
	e := newEmitter(t, outs)
	res, err := c.Run(st, 0, e)
	if err != nil || res != (Result{Out: 2, Dropped: 1}) {
		t.Fatalf("%+v %v", res, err)
	}
	if got := e.rows(0, -1); !reflect.DeepEqual(got, []string{"x|9", "y|9"}) {
		t.Errorf("got %v", got)
	}
}

func TestSchemaMismatch(t *testing.T) {
	in := mkSchema(t, "a Int64")
	c, err := Compile(nil, in, []Output{output(t, "o", "a Int64")})
	if err != nil {
		t.Fatal(err)
	}
	same := mkSchema(t, "a Int64")
	st := mkChunk(t, same)
	addRow(t, st, map[string]any{"a": 1})
	if _, err := c.Run(st, 0, newEmitter(t, []Output{output(t, "o", "a Int64")})); err != nil {
		t.Errorf("an equal schema: %v", err)
	}
	other := mkChunk(t, mkSchema(t, "a String"))
	addRow(t, other, map[string]any{"a": "x"})
	if _, err := c.Run(other, 0, newEmitter(t, nil)); err == nil {
		t.Errorf("another schema: no error")
	}
}

// TestEmptyDefaultColumn checks that an output column without a field gets
// its zero value.
func TestEmptyDefaultColumn(t *testing.T) {
	in := mkSchema(t, "a Int64")
	o := output(t, "o", "a Int64", "b String", "c Nullable(Int8)")
	o.Fields[1], o.Fields[2] = "", ""
	c, err := Compile(nil, in, []Output{o})
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"a": 1})
	e := newEmitter(t, []Output{o})
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	if got := e.rows(0, -1); !reflect.DeepEqual(got, []string{"1||<nil>"}) {
		t.Errorf("got %v", got)
	}
}

func TestCloneIndependent(t *testing.T) {
	in := mkSchema(t, "s String")
	outs := []Output{output(t, "o", "u String")}
	c, err := Compile([]config.Step{set(1, "u", "upper(s)")}, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	c2 := c.Clone()
	a, b := mkChunk(t, in), mkChunk(t, in)
	addRow(t, a, map[string]any{"s": "a"})
	addRow(t, b, map[string]any{"s": "b"})
	ea, eb := newEmitter(t, outs), newEmitter(t, outs)
	done := make(chan struct{})
	go func() {
		for range 1000 {
			c2.Run(b, 0, eb)
		}
		close(done)
	}()
	for range 1000 {
		c.Run(a, 0, ea)
	}
	<-done
	for _, r := range ea.rows(0, -1) {
		if r != "A" {
			t.Fatalf("got %q", r)
		}
	}
	for _, r := range eb.rows(0, -1) {
		if r != "B" {
			t.Fatalf("got %q", r)
		}
	}
}

// TestOutputAddressesFromStrings: a string goes into an IPv4 or IPv6
// column through the type's own checks.
func TestOutputAddressesFromStrings(t *testing.T) {
	in := mkSchema(t, "a String", "b String")
	outs := []Output{output(t, "o", "ip4 IPv4 <- a", "ip6 IPv6 <- b")}
	c, err := Compile(nil, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	st := mkChunk(t, in)
	addRow(t, st, map[string]any{"a": "10.0.0.1", "b": "::ffff:1.2.3.4"})
	e := newEmitter(t, outs)
	if _, err := c.Run(st, 0, e); err != nil {
		t.Fatal(err)
	}
	ch := e.chunks[[2]int{0, -1}]
	if ch == nil || ch.Rows != 1 {
		t.Fatalf("output chunk %v", ch)
	}
	if got, want := ch.Cols[0].Row(0), uint32(0x0a000001); got != want {
		t.Errorf("IPv4 %v, want %v", got, want)
	}
	if got, want := ch.Cols[1].Row(0), netip.MustParseAddr("::ffff:1.2.3.4").As16(); got != want {
		t.Errorf("IPv6 %v, want %v", got, want)
	}
	for _, tc := range []struct{ a, b, msg string }{
		{"1.2.3", "::1", `sink "o" column ip4 (IPv4): "1.2.3" is not an IPv4 address`},
		{"1.2.3.4", "fe80::1%eth0", `sink "o" column ip6 (IPv6): "fe80::1%eth0" is not an IP address`},
	} {
		st := mkChunk(t, in)
		addRow(t, st, map[string]any{"a": tc.a, "b": tc.b})
		_, err := c.Run(st, 0, newEmitter(t, outs))
		var te *Error
		if !errors.As(err, &te) || te.Reason != ReasonWrongType || err.Error() != tc.msg {
			t.Errorf("%s %s: got %v, want %s", tc.a, tc.b, err, tc.msg)
		}
	}
}

// TestDecimalOutputRounded: a float that round(x, S) rounded goes into a
// Decimal of scale S as that value; the same float unrounded is refused
// (TestOutputConversions).
func TestDecimalOutputRounded(t *testing.T) {
	in := mkSchema(t, "f Float64")
	outs := []Output{output(t, "o", "dec Decimal(12, 2) <- r")}
	c, err := Compile([]config.Step{set(1, "r", `round(f, 2)`)}, in, outs)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		f    float64
		want string
	}{{1234.567, "1234.57"}, {19.999, "20"}, {0.005, "0"}, {0.015, "0.02"}, {-2.675, "-2.68"}, {0.30000000000000004, "0.3"}} {
		st := mkChunk(t, in)
		addRow(t, st, map[string]any{"f": x.f})
		e := newEmitter(t, outs)
		if _, err := c.Run(st, 0, e); err != nil {
			t.Errorf("round(%v, 2): %v", x.f, err)
			continue
		}
		if got := e.rows(0, -1); len(got) != 1 || got[0] != x.want {
			t.Errorf("round(%v, 2) into Decimal(12, 2): %v, want %s", x.f, got, x.want)
		}
	}
}
