package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswordFile: every password has a password_file sibling; setting
// both is a configuration error naming the key; the password is read from
// the file at each call, so a rotated file is picked up; SecretFiles lists
// the files (pipeline.Preflight reads them).
func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pw")
	if err := os.WriteFile(good, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sasl := func(extra string) string {
		return strings.Replace(base, "    group_id: g\n", "    group_id: g\n    sasl: {mechanism: PLAIN, username: u, "+extra+"}\n", 1)
	}
	ch := func(extra string) string { return base + "    " + extra + "\n" }
	named := func(extra string) string {
		return strings.Replace(base, "sink:\n  clickhouse:\n    addr: [c1:9000]\n    table: events\n",
			"sinks:\n  main:\n    clickhouse: {addr: [c1:9000], table: events, "+extra+"}\n", 1)
	}
	for _, tc := range []struct{ name, yaml, err string }{
		{"clickhouse both", ch("password: x\n    password_file: " + good), "sink.clickhouse.password_file: set either password or password_file, not both"},
		{"named sink both", named("password: x, password_file: " + good), "sinks.main.clickhouse.password_file: set either password or password_file, not both"},
		{"sasl both", sasl("password: x, password_file: " + good), "source.kafka.sasl.password_file: set either password or password_file, not both"},
		{"clickhouse file", ch("password_file: " + good), ""},
		{"sasl file", sasl("password_file: " + good), ""},
	} {
		c, err := Parse([]byte(tc.yaml), "p.yaml", nil)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got string
		if c.Source.Kafka.SASL != nil {
			got, err = c.Source.Kafka.SASL.Secret()
		} else {
			got, err = c.Sink.ClickHouse.Secret()
		}
		if err != nil || got != "s3cret" {
			t.Errorf("%s: Secret() = %q, %v, want s3cret (the file without its newline)", tc.name, got, err)
		}
		if strings.Contains(c.Redacted(), "s3cret") {
			t.Errorf("%s: Redacted shows the password", tc.name)
		}
	}

	c, err := Parse([]byte(named("password_file: "+empty)), "p.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SecretFiles(); len(got) != 1 || got["sinks.main.clickhouse.password_file"] != empty {
		t.Errorf("SecretFiles() = %v", got)
	}
	if _, err := ReadSecretFile(empty); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty file: %v", err)
	}

	// Rotation: the next call reads the new content.
	r := &Registry{PasswordFile: good}
	if err := os.WriteFile(good, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Secret(); err != nil || got != "rotated" {
		t.Errorf("after rotation: %q, %v", got, err)
	}
	if got, err := (&Registry{Password: "inline"}).Secret(); err != nil || got != "inline" {
		t.Errorf("inline password: %q, %v", got, err)
	}
}
