package chunk

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// decimalCase is one append to a Decimal column: the method ("digits"
// with digits and exp, "unscaled" with digits and scale, "int", "text"),
// its arguments, and either the error (ErrRange or ErrSyntax) or the
// text it stores.
type decimalCase struct {
	method string
	neg    bool
	in     any // digits or text (string), or int64
	exp    int // AppendDigits' exp, AppendUnscaled's scale
	err    error
	want   string
}

func (c decimalCase) String() string {
	return fmt.Sprintf("%s(neg %v, %v, %d)", c.method, c.neg, c.in, c.exp)
}

// TestDecimals: each Decimal(P, S) takes its largest and smallest values
// in every form, refuses one digit more before the point (with ErrRange)
// and text that is not plain decimal text (with ErrSyntax), refuses a
// nonzero digit past S (with ErrScale) and takes zeros there, writes
// negative zero without its sign (except AppendText, which keeps the text
// as written), and appends nothing for a refused value.
func TestDecimals(t *testing.T) {
	n := strings.Repeat
	for _, tc := range []struct {
		typ   string
		cases []decimalCase
	}{
		{"Decimal(9, 2)", []decimalCase{
			{method: "digits", in: "999999999", exp: -2, want: "9999999.99"},
			{method: "digits", neg: true, in: "999999999", exp: -2, want: "-9999999.99"},
			{method: "digits", in: "1", exp: 7, err: ErrRange},
			{method: "digits", neg: true, in: "1", exp: 7, err: ErrRange},
			{method: "digits", in: "9999999999", exp: -3, err: ErrScale},
			{method: "digits", in: "9999999990", exp: -3, want: "9999999.99"}, // a zero past the scale
			{method: "digits", in: "0099999999900", exp: -4, want: "9999999.99"},
			{method: "digits", in: "1", exp: -3, err: ErrScale},
			{method: "digits", neg: true, in: "1", exp: -3, err: ErrScale},
			{method: "digits", neg: true, in: "0", exp: 0, want: "0"},
			{method: "digits", neg: true, in: "", exp: 0, want: "0"},
			{method: "digits", in: "15", exp: -3, err: ErrScale},
			{method: "digits", in: "100", exp: -4, want: "0.01"},
			{method: "digits", in: "19999", exp: -3, err: ErrScale},
			{method: "digits", in: "5", exp: -3, err: ErrScale},
			{method: "digits", in: "105", exp: -2, want: "1.05"},
			{method: "digits", in: "150", exp: -2, want: "1.5"},
			{method: "digits", in: "1", exp: 6, want: "1000000"},
			{method: "digits", in: "1", exp: -1 << 20, err: ErrScale},
			{method: "digits", in: "0", exp: -1 << 20, want: "0"},
			{method: "digits", in: "1", exp: 1 << 20, err: ErrRange},
			{method: "unscaled", in: "999999999", exp: 2, want: "9999999.99"},
			{method: "unscaled", neg: true, in: "999999999", exp: 2, want: "-9999999.99"},
			{method: "unscaled", in: "1000000000", exp: 2, err: ErrRange},
			{method: "unscaled", in: "99999999999", exp: 4, err: ErrScale},
			{method: "unscaled", in: "99999999900", exp: 4, want: "9999999.99"},
			{method: "unscaled", neg: true, in: "4", exp: 3, err: ErrScale},
			{method: "unscaled", neg: true, in: "40", exp: 4, err: ErrScale},
			{method: "unscaled", neg: true, in: "0", exp: 3, want: "0.00"},
			{method: "unscaled", neg: true, in: "0", exp: 0, want: "0.00"},
			{method: "unscaled", in: "5", exp: 2, want: "0.05"},
			{method: "unscaled", in: "1", exp: 0, want: "1.00"},
			{method: "int", in: int64(9999999), want: "9999999.00"},
			{method: "int", in: int64(-9999999), want: "-9999999.00"},
			{method: "int", in: int64(10000000), err: ErrRange},
			{method: "int", in: int64(-10000000), err: ErrRange},
			{method: "int", in: int64(0), want: "0.00"},
			{method: "text", in: "9999999.99", want: "9999999.99"},
			{method: "text", in: "-9999999.99", want: "-9999999.99"},
			{method: "text", in: "00009999999.990", want: "00009999999.990"}, // kept as written
			{method: "text", in: "00009999999.999", err: ErrScale},
			{method: "text", in: "19.999", err: ErrScale},
			{method: "text", in: "0.005", err: ErrScale},
			{method: "text", in: "-0.005", err: ErrScale},
			{method: "text", in: "19.9900000", want: "19.9900000"},
			{method: "text", in: "10000000", err: ErrRange},
			{method: "text", in: "-10000000.00", err: ErrRange},
			{method: "text", in: "-0", want: "-0"},
			{method: "text", in: "-0.00", want: "-0.00"},
			{method: "text", in: "0.001", err: ErrScale},
			{method: "text", in: "0.010", want: "0.010"},
			{method: "text", in: "1e3", err: ErrSyntax},
			{method: "text", in: "NaN", err: ErrSyntax},
			{method: "text", in: "+Inf", err: ErrSyntax},
			{method: "text", in: "-Inf", err: ErrSyntax},
			{method: "text", in: "", err: ErrSyntax},
			{method: "text", in: "-", err: ErrSyntax},
			{method: "text", in: "1.", err: ErrSyntax},
			{method: "text", in: ".5", err: ErrSyntax},
			{method: "text", in: "1.2.3", err: ErrSyntax},
		}},
		{"Decimal(18, 4)", []decimalCase{
			{method: "digits", in: n("9", 18), exp: -4, want: n("9", 14) + ".9999"},
			{method: "digits", neg: true, in: n("9", 18), exp: -4, want: "-" + n("9", 14) + ".9999"},
			{method: "digits", in: "1", exp: 14, err: ErrRange},
			{method: "digits", in: n("9", 20), exp: -6, err: ErrScale},
			{method: "digits", in: n("9", 18) + "00", exp: -6, want: n("9", 14) + ".9999"},
			{method: "unscaled", neg: true, in: n("9", 18), exp: 4, want: "-" + n("9", 14) + ".9999"},
			{method: "unscaled", in: "1" + n("0", 18), exp: 4, err: ErrRange},
			{method: "unscaled", in: "12345", exp: 2, want: "123.4500"},
			{method: "int", in: int64(math.MaxInt64), err: ErrRange},
			{method: "int", in: int64(math.MinInt64), err: ErrRange},
			{method: "int", in: int64(-99999999999999), want: "-99999999999999.0000"},
			{method: "text", in: n("9", 14) + ".99999", err: ErrScale},
			{method: "text", in: n("9", 14) + ".99990", want: n("9", 14) + ".99990"},
			{method: "text", in: "1" + n("0", 14), err: ErrRange},
		}},
		{"Decimal(38, 10)", []decimalCase{
			{method: "digits", in: n("9", 38), exp: -10, want: n("9", 28) + "." + n("9", 10)},
			{method: "digits", neg: true, in: n("9", 38), exp: -10, want: "-" + n("9", 28) + "." + n("9", 10)},
			{method: "digits", in: "1", exp: 28, err: ErrRange},
			{method: "digits", in: "1", exp: -11, err: ErrScale},
			{method: "digits", in: "1", exp: -10, want: "0." + n("0", 9) + "1"},
			{method: "unscaled", in: n("9", 38), exp: 10, want: n("9", 28) + "." + n("9", 10)},
			{method: "unscaled", neg: true, in: "1" + n("0", 38), exp: 10, err: ErrRange},
			{method: "unscaled", neg: true, in: "1", exp: 11, err: ErrScale},
			{method: "unscaled", neg: true, in: "10", exp: 11, want: "-0." + n("0", 9) + "1"},
			{method: "int", in: int64(math.MinInt64), want: "-9223372036854775808." + n("0", 10)},
			{method: "text", in: "-" + n("9", 28) + "." + n("9", 12), err: ErrScale},
			{method: "text", in: "-" + n("9", 28) + "." + n("9", 10) + "00", want: "-" + n("9", 28) + "." + n("9", 10) + "00"},
			{method: "text", in: n("9", 29), err: ErrRange},
		}},
		{"Decimal(76, 0)", []decimalCase{
			{method: "digits", in: n("9", 76), exp: 0, want: n("9", 76)},
			{method: "digits", neg: true, in: n("9", 76), exp: 0, want: "-" + n("9", 76)},
			{method: "digits", in: "1", exp: 76, err: ErrRange},
			{method: "digits", in: n("9", 77), exp: -1, err: ErrScale},
			{method: "digits", neg: true, in: "9", exp: -1, err: ErrScale},
			{method: "unscaled", in: n("9", 77), exp: 1, err: ErrScale},
			{method: "unscaled", in: n("9", 76) + "0", exp: 1, want: n("9", 76)},
			{method: "unscaled", in: n("9", 77), exp: 0, err: ErrRange},
			{method: "unscaled", neg: true, in: "9", exp: 1, err: ErrScale},
			{method: "int", in: int64(-42), want: "-42"},
			{method: "text", in: n("9", 76) + ".9", err: ErrScale},
			{method: "text", in: n("9", 76) + ".0", want: n("9", 76) + ".0"},
			{method: "text", in: "-1" + n("0", 76), err: ErrRange},
		}},
		{"LowCardinality(Decimal(9, 2))", []decimalCase{
			{method: "int", in: int64(1), want: "1.00"},
		}},
		{"Decimal(0, 2)", []decimalCase{ // no precision: unchecked
			{method: "unscaled", in: n("9", 100), exp: 2, want: n("9", 98) + "." + "99"},
		}},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		dec, ok := DecimalsOf(typ)
		if !ok {
			t.Fatalf("DecimalsOf(%s): not a decimal", tc.typ)
		}
		col, err := NewColumn(typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tc.cases {
			before := col.Len()
			var err error
			switch c.method {
			case "digits":
				err = dec.AppendDigits(col, c.neg, []byte(c.in.(string)), c.exp)
			case "unscaled":
				err = dec.AppendUnscaled(col, c.neg, []byte(c.in.(string)), c.exp)
			case "int":
				err = dec.AppendInt(col, c.in.(int64))
			case "text":
				err = dec.AppendText(col, []byte(c.in.(string)))
			}
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Errorf("%s %v: error %v, want %v", tc.typ, c, err, c.err)
				}
				if col.Len() != before {
					t.Errorf("%s %v: refused value appended", tc.typ, c)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %v: %v", tc.typ, c, err)
				continue
			}
			if col.Len() != before+1 {
				t.Fatalf("%s %v: %d rows appended", tc.typ, c, col.Len()-before)
			}
			if got := fmt.Sprint(col.Row(before)); got != c.want {
				t.Errorf("%s %v: stored %q, want %q", tc.typ, c, got, c.want)
			}
		}
	}
	for _, s := range []string{"Int64", "String", "DateTime64(3)", "Nullable(Decimal(9, 2))"} {
		typ, err := ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := DecimalsOf(typ); ok {
			t.Errorf("DecimalsOf(%s) is ok", s)
		}
	}
}
