package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestURLMasked: a password in a URL's userinfo never shows, however the
// URL is printed; the rest of the URL does.
func TestURLMasked(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://registry:8081", "https://registry:8081"},
		{"https://user@registry:8081/x", "https://user@registry:8081/x"},
		{"https://user:s3cret@registry:8081/x", "https://user:******@registry:8081/x"},
		{"http://u:p%40ss@h", "http://u:******@h"},
		{"https://u:s3cret@[::1", "https://******@[::1"},
		{"", ""},
	} {
		if got := MaskURL(tc.in); got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	u := URL("https://user:s3cret@registry:8081")
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "url", u)
	for _, s := range []string{fmt.Sprint(u), fmt.Sprintf("%s %v %q %#v", u, u, u, u), logs.String()} {
		if strings.Contains(s, "s3cret") || !strings.Contains(s, "user:******@registry:8081") {
			t.Errorf("printed %q", s)
		}
	}
	if u.Value() != "https://user:s3cret@registry:8081" {
		t.Errorf("Value() = %q", u.Value())
	}
}
