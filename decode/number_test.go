package decode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestExactFloat64 compares the float64 fast path with strconv.ParseFloat
// on random decimals of every shape it takes or refuses.
func TestExactFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	digits := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	fast := 0
	for i := 0; i < 200_000; i++ {
		s := ""
		if rng.IntN(2) == 0 {
			s = "-"
		}
		ip := digits(1 + rng.IntN(12))
		for len(ip) > 1 && ip[0] == '0' {
			ip = ip[1:]
		}
		s += ip
		if rng.IntN(3) > 0 {
			s += "." + digits(1+rng.IntN(10))
		}
		if rng.IntN(4) == 0 {
			s += fmt.Sprintf("e%d", rng.IntN(60)-30)
		}
		n, ok := ParseNumber([]byte(s))
		if !ok {
			t.Fatalf("ParseNumber(%q) failed", s)
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := n.exactFloat64(); ok {
			fast++
			if math.Float64bits(f) != math.Float64bits(want) {
				t.Fatalf("%q: fast path %v (%x), strconv %v (%x)", s, f, math.Float64bits(f), want, math.Float64bits(want))
			}
		}
		if got, ok := n.Float(64); !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: float(64) = %v, %v; want %v", s, got, ok, want)
		}
	}
	if fast < 100_000 {
		t.Errorf("the fast path took %d of 200000 numbers", fast)
	}
}
