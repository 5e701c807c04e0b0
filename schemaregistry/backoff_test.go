package schemaregistry

import (
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	for n := range 64 {
		base := backoffMax
		if n < 20 {
			base = min(backoffMin<<n, backoffMax)
		}
		for range 100 {
			d := backoff(n)
			if d < base || d > min(base+base/5, backoffMax) {
				t.Fatalf("backoff(%d) = %v, want %v..%v", n, d, base, min(base+base/5, backoffMax))
			}
		}
	}
	if d := backoff(0); d < 100*time.Millisecond || d > 120*time.Millisecond {
		t.Fatalf("backoff(0) = %v, want 100ms..120ms", d)
	}
	if d := backoff(1000); d != 30*time.Second {
		t.Fatalf("backoff(1000) = %v, want 30s", d)
	}
}
