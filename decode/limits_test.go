package decode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTruncateMessage(t *testing.T) {
	if got := TruncateMessage("short"); got != "short" {
		t.Errorf("got %q", got)
	}
	exact := strings.Repeat("x", MaxErrorBytes)
	if got := TruncateMessage(exact); got != exact {
		t.Errorf("a message of exactly MaxErrorBytes was cut")
	}
	for _, s := range []string{strings.Repeat("x", MaxErrorBytes+1), strings.Repeat("é", 5000), strings.Repeat("y", 1<<20)} {
		got := TruncateMessage(s)
		if len(got) > MaxErrorBytes || !strings.Contains(got, " bytes more)") || !strings.HasPrefix(s, strings.Split(got, "…")[0]) {
			t.Errorf("TruncateMessage of %d bytes: %d bytes, %.60q...%q", len(s), len(got), got, got[len(got)-30:])
		}
		if !strings.HasPrefix(got, s[:100]) {
			t.Errorf("head lost")
		}
		var n int
		cut := len(strings.Split(got, "…")[0])
		if _, err := fmt.Sscanf(got[strings.LastIndex(got, "(")+1:], "%d", &n); err != nil || cut+n != len(s) {
			t.Errorf("marker says %d bytes more, %d were cut (%v)", n, len(s)-cut, err)
		}
	}
	// Every decode error is cut: a long field path and value.
	e := &Error{Reason: ReasonWrongType, Field: strings.Repeat("f", 3000), Column: "c", Type: "Int32", Err: errors.New(strings.Repeat("v", 3000))}
	if n := len(e.Error()); n > MaxErrorBytes {
		t.Errorf("Error() of %d bytes", n)
	}
}
