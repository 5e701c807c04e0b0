package chunk

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// TestIntsRanges: each integer type takes every value at its bounds and
// refuses the ones just past them, from int64 and from uint64, appending
// nothing for a refused value.
func TestIntsRanges(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		lo, hi int64  // the type's range within int64
		uhi    uint64 // its maximum as a uint64
	}{
		{"Int8", math.MinInt8, math.MaxInt8, math.MaxInt8},
		{"Int16", math.MinInt16, math.MaxInt16, math.MaxInt16},
		{"Int32", math.MinInt32, math.MaxInt32, math.MaxInt32},
		{"Int64", math.MinInt64, math.MaxInt64, math.MaxInt64},
		{"UInt8", 0, math.MaxUint8, math.MaxUint8},
		{"UInt16", 0, math.MaxUint16, math.MaxUint16},
		{"UInt32", 0, math.MaxUint32, math.MaxUint32},
		{"UInt64", 0, math.MaxInt64, math.MaxUint64},
		{"Bool", 0, 1, 1},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			typ, err := ParseType(tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			a, ok := IntsOf(typ)
			if !ok {
				t.Fatalf("IntsOf(%s) = false", tc.typ)
			}
			col, err := NewColumn(typ)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			accept := func(err error, v any) {
				t.Helper()
				if err != nil {
					t.Errorf("%v refused: %v", v, err)
					return
				}
				want = append(want, fmt.Sprint(v))
			}
			refuse := func(err error, v any) {
				t.Helper()
				if !errors.Is(err, ErrRange) {
					t.Errorf("%v: err = %v, want ErrRange", v, err)
				}
			}
			accept(a.AppendInt(col, tc.lo), tc.lo)
			accept(a.AppendInt(col, tc.hi), tc.hi)
			accept(a.AppendUint(col, tc.uhi), tc.uhi)
			if tc.lo > math.MinInt64 {
				refuse(a.AppendInt(col, tc.lo-1), tc.lo-1)
			}
			if tc.hi < math.MaxInt64 && tc.uhi < math.MaxUint64 {
				refuse(a.AppendInt(col, tc.hi+1), tc.hi+1)
			}
			if tc.uhi < math.MaxUint64 {
				refuse(a.AppendUint(col, tc.uhi+1), tc.uhi+1)
			}
			if col.Len() != len(want) {
				t.Fatalf("%d rows, want %d", col.Len(), len(want))
			}
			for i, w := range want {
				got := fmt.Sprint(col.Row(i))
				if tc.typ == "Bool" {
					got = fmt.Sprint(boolInt(col.Row(i).(bool)))
				}
				if got != w {
					t.Errorf("row %d = %s, want %s", i, got, w)
				}
			}
		})
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestWideInts: a 128- or 256-bit column takes any int64, sign-extended
// when signed; an unsigned one refuses a negative value.
func TestWideInts(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		v    int64
		want string
		err  bool
	}{
		{"Int128", -1, "-1", false},
		{"Int256", math.MinInt64, "-9223372036854775808", false},
		{"UInt128", math.MaxInt64, "9223372036854775807", false},
		{"UInt256", -1, "", true},
	} {
		typ, _ := ParseType(tc.typ)
		a, _ := IntsOf(typ)
		col, _ := NewColumn(typ)
		err := a.AppendInt(col, tc.v)
		if tc.err {
			if !errors.Is(err, ErrRange) || col.Len() != 0 {
				t.Errorf("%s %d: err %v, %d rows", tc.typ, tc.v, err, col.Len())
			}
			continue
		}
		if err != nil || fmt.Sprint(col.Row(0)) != tc.want {
			t.Errorf("%s %d: err %v, row %v, want %s", tc.typ, tc.v, err, col.Row(0), tc.want)
		}
	}
	typ, _ := ParseType("UInt128")
	a, _ := IntsOf(typ)
	col, _ := NewColumn(typ)
	if err := a.AppendUint(col, math.MaxUint64); err != nil || fmt.Sprint(col.Row(0)) != "18446744073709551615" {
		t.Errorf("UInt128 MaxUint64: err %v, row %v", err, col.Row(0))
	}
}

// TestFloats: Float32 refuses a finite value past its range and keeps
// infinities; Float64 takes everything.
func TestFloats(t *testing.T) {
	f32, _ := ParseType("Float32")
	a, _ := FloatsOf(f32)
	col, _ := NewColumn(f32)
	for _, v := range []float64{math.MaxFloat32, -math.MaxFloat32, math.Inf(1), math.SmallestNonzeroFloat32} {
		if err := a.AppendFloat(col, v); err != nil {
			t.Errorf("Float32 %g: %v", v, err)
		}
	}
	for _, v := range []float64{math.MaxFloat32 * 2, -math.MaxFloat64} {
		if err := a.AppendFloat(col, v); !errors.Is(err, ErrRange) {
			t.Errorf("Float32 %g: err %v, want ErrRange", v, err)
		}
	}
	if err := a.AppendInt(col, 16777217); err != nil || col.Row(col.Len()-1).(float32) != 16777216 {
		t.Errorf("Float32 from 16777217: %v, %v", err, col.Row(col.Len()-1))
	}
	if col.Len() != 5 {
		t.Errorf("%d rows, want 5", col.Len())
	}
	f64, _ := ParseType("Float64")
	b, _ := FloatsOf(f64)
	col64, _ := NewColumn(f64)
	if err := b.AppendFloat(col64, math.MaxFloat64); err != nil || col64.Row(0).(float64) != math.MaxFloat64 {
		t.Errorf("Float64 max: %v", err)
	}
	if _, ok := FloatsOf(&Type{Kind: KindInt8}); ok {
		t.Error("FloatsOf(Int8) = true")
	}
	if _, ok := IntsOf(&Type{Kind: KindFloat32}); ok {
		t.Error("IntsOf(Float32) = true")
	}
}
