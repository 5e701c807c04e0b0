package avro

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	jsondec "github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/transform"
)

// oneChunk is a transform.Emitter of one output chunk.
type oneChunk struct{ c *chunk.Chunk }

func (e *oneChunk) Chunk(sink, shard int) *chunk.Chunk { return e.c }

// TestDifferentialTransform holds the transform's output conversions to
// the server: each value is decoded into a field of one type (the JSON
// decoder, which TestDifferentialJSON holds to the server), set to a new
// field by an expression, and written by the transform into a column of
// another type (range checks, Decimal digits, Float32 rounding, UUID,
// FixedString and Enum text, DateTime into Date), then inserted by the
// sink into table a. The server's JSONEachRow parser gets the same value
// as JSON text (twin: the input value written for the output's type, as
// the test's own ledger converts it) into table b, and the stored values
// are compared as in TestDifferentialJSON.
func TestDifferentialTransform(t *testing.T) {
	d := newDiffCH(t)
	same := func(s string) string { return s }
	ints := []string{`0`, `1`, `-1`, `127`, `128`, `-128`, `-129`, `255`, `256`, `32767`, `32768`, `-32769`, `65535`, `65536`,
		`2147483647`, `2147483648`, `-2147483649`, `4294967295`, `4294967296`, `9007199254740993`, `9223372036854775807`,
		`-9223372036854775808`, `99999`, `100000`, `-99999`, `1000`, `-1000`, `2`, `3`, `42`}
	floats := []string{`0`, `1.5`, `-1.5`, `19.999`, `0.005`, `-0.005`, `19.99`, `19.990`, `1234.567`, `-7.77`, `9999999.99`,
		`10000000`, `1e-3`, `0.1`, `0.30000000000000004`, `1e2`, `16777217`, `3.4e38`, `3.5e38`, `1e-46`, `1.4e-45`, `7e-10`,
		`123.456`, `-0.01`, `99.995`, `0.015`, `1e15`, `-2.675`, `42`, `0.5`}
	strs := []string{`"a"`, `"b"`, `"c"`, `""`, `"abcd"`, `"abcde"`, `"é"`, `"éé"`, `"ééé"`, `"ab"`, `"\u0000"`,
		`"123e4567-e89b-12d3-a456-426614174000"`, `"123E4567-E89B-12D3-A456-426614174000"`, `"00000000-0000-0000-0000-000000000000"`,
		`"123e4567e89b12d3a456426614174000"`, `"123e4567-e89b-12d3-a456-42661417400"`, `"g23e4567-e89b-12d3-a456-426614174000"`,
		`"x"`, `"A"`, `" a"`, `"a "`, `"😀"`, `"\ud83d\ude00"`, `"tab\there"`, `"1234"`, `"12345"`, `"\n"`, `"\\"`, `"z"`, `"y"`}
	times := []string{`"1970-01-01 00:00:00"`, `"1970-01-01 00:00:01"`, `"2020-01-01 00:00:00"`, `"2020-01-01 23:59:59"`,
		`"2020-02-29 12:00:00"`, `"2106-02-06 23:59:59"`, `"2106-02-06 00:00:00"`, `"2038-01-19 03:14:08"`, `"1999-12-31 23:59:59"`,
		`"2000-01-01 00:00:00"`, `"2024-05-06 07:08:09"`, `"2001-09-09 01:46:40"`, `"1970-01-02 00:00:00"`, `"2105-12-31 23:59:59"`,
		`"2020-06-30 12:30:45"`, `"2021-03-28 02:30:00"`, `"2021-10-31 02:30:00"`, `"1980-01-01 00:00:00"`, `"2010-10-10 10:10:10"`,
		`"2099-12-31 23:59:59"`, `"2000-02-29 00:00:00"`, `"1972-06-30 23:59:59"`, `"2016-12-31 23:59:59"`, `"2030-01-01 00:00:00"`,
		`"1975-05-05 05:05:05"`, `"2050-05-05 05:05:05"`, `"2012-12-21 11:11:11"`, `"2000-01-01 12:00:00"`, `"1990-07-04 00:00:01"`,
		`"2069-08-21 18:00:00"`}
	// The day of a date-time text, and a date-time text unchanged.
	dayOf := func(s string) string { return s[:11] + `"` }
	// A UTC date-time text as local time in zone.
	inZone := func(zone string) func(string) string {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		return func(s string) string {
			tm, err := time.ParseInLocation(time.DateTime, strings.Trim(s, `"`), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			return `"` + tm.In(loc).Format(time.DateTime) + `"`
		}
	}
	var total diffTally
	undocumented := 0
	for _, x := range []struct {
		name, in, expr, out string
		values              []string
		twin                func(string) string
	}{
		{"tr_i64_i8", "Int64", "v", "Int8", ints, same},
		{"tr_i64_u8", "Int64", "v", "UInt8", ints, same},
		{"tr_i64_u16", "Int64", "v", "UInt16", ints, same},
		{"tr_i64_i32", "Int64", "v", "Int32", ints, same},
		{"tr_i64_u64", "Int64", "v", "UInt64", ints, same},
		{"tr_i64_f32", "Int64", "v", "Float32", ints, same},
		{"tr_i64_d5_0", "Int64", "v", "Decimal(5, 0)", ints, same},
		{"tr_i64_d9_2", "Int64", "v", "Decimal(9, 2)", ints, same},
		{"tr_i64_add", "Int64", "v + 1", "Int8", ints, func(s string) string {
			// The ledger's sum, in big-number arithmetic: the expression
			// itself may overflow Int64 (9223372036854775807 + 1).
			n, ok := bigAdd(s, 1)
			if !ok {
				return s
			}
			return n
		}},
		{"tr_f64_d9_2", "Float64", "v", "Decimal(9, 2)", floats, same},
		{"tr_f64_d18_4", "Float64", "v", "Decimal(18, 4)", floats, same},
		{"tr_f64_d12_2n", "Float64", "v", "Nullable(Decimal(12, 2))", floats, same},
		{"tr_f64_f32", "Float64", "v", "Float32", floats, same},
		{"tr_s_uuid", "String", "v", "UUID", strs, same},
		{"tr_s_fs4", "String", "v", "FixedString(4)", strs, same},
		{"tr_s_enum", "String", "v", "Enum8('a' = 1, 'b' = 2, 'z' = -128, 'y' = 127)", strs, same},
		{"tr_s_lc", "String", "v", "LowCardinality(String)", strs, same},
		{"tr_s_concat", "String", `concat(v, "!")`, "String", strs, func(s string) string { return s[:len(s)-1] + `!"` }},
		{"tr_dt_date", "DateTime('UTC')", "v", "Date", times, dayOf},
		{"tr_dt_dt", "DateTime('UTC')", "v", "DateTime('UTC')", times, same},
		{"tr_dt_tokyo", "DateTime('UTC')", "v", "DateTime('Asia/Tokyo')", times, inZone("Asia/Tokyo")},
		{"tr_dt_ny", "DateTime('UTC')", "v", "DateTime('America/New_York')", times, inZone("America/New_York")},
	} {
		t.Run(x.name, func(t *testing.T) {
			c, tg := d.twin(t, x.name, x.out)
			in := &chunk.Schema{Names: []string{"id", "v"}}
			for _, ty := range []string{"UInt32", x.in} {
				typ, err := chunk.ParseType(ty)
				if err != nil {
					t.Fatal(err)
				}
				in.Types = append(in.Types, typ)
			}
			dec, err := jsondec.New(in, jsondec.Options{Fields: []string{"id", "v"}, Ranges: chunk.RangesFor(c.ServerVersion())})
			if err != nil {
				t.Fatal(err)
			}
			pos := config.Pos{File: "p.yaml", Line: 1, Column: 1}
			step := config.Step{Pos: pos, Set: []config.Assignment{{Field: "o", Expr: config.Expr{Text: x.expr, Pos: pos}}}}
			chain, err := transform.Compile([]config.Step{step}, in, []transform.Output{{Name: "o", Schema: tg.Schema,
				Fields: []string{"id", "o"}, ShardKey: -1, Weights: []int{1}}})
			if err != nil {
				t.Fatalf("compile %s -> %s: %v", x.in, x.out, err)
			}
			etl := make([]diffResult, len(x.values))
			srv := make([]diffResult, len(x.values))
			texts := make([]string, len(x.values))
			out, _ := chunk.New(tg.Schema)
			for id, v := range x.values {
				texts[id] = x.twin(v)
				row, _ := chunk.New(in)
				if _, err := dec.Decode(record(id, v), row); err != nil {
					t.Fatalf("%s: the input %s into %s: %v", x.name, v, x.in, err)
				}
				if _, err := chain.Run(row, 0, &oneChunk{out}); err != nil {
					etl[id].err = err.Error()
					continue
				}
				etl[id].ok = true
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if out.Rows > 0 {
				if err := c.Insert(ctx, tg, []*chunk.Chunk{out}); err != nil {
					t.Fatalf("%s: the transform's output was refused by the insert: %v", x.name, err)
				}
			}
			d.serverSide(t, x.name, texts, etl, srv)
			fam := diffFamily{name: x.name, typ: x.out}
			tally := diffTally{families: 1}
			undocumented += compareFamily(t, fam, texts, etl, srv, &tally, map[string]int{})
			t.Logf("%s (%s %s into %s): %s", x.name, x.in, x.expr, x.out, tally)
			total.add2(tally)
		})
	}
	t.Logf("transform outputs: %s; %d undocumented differences", total, undocumented)
}

// bigAdd is the decimal integer text s plus k, and false when s is not an
// integer.
func bigAdd(s string, k int64) (string, bool) {
	n, ok := new(big.Int).SetString(strings.Trim(s, `"`), 10)
	if !ok {
		return "", false
	}
	return n.Add(n, big.NewInt(k)).String(), true
}
