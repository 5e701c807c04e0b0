package config

import (
	"strings"
	"testing"
)

// TestMaxDecompressedBatchBytes: 0 (derived at runtime) by default; a
// value is 64KiB–1GiB and within the budget when the budget is set.
func TestMaxDecompressedBatchBytes(t *testing.T) {
	c, err := Parse([]byte(base), "f.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Source.Kafka.MaxDecompressedBatchBytes; got != 0 {
		t.Errorf("default = %d, want 0 (derived)", got)
	}
	set := func(v, budget string) string {
		y := strings.Replace(base, "    group_id: g\n", "    group_id: g\n    max_decompressed_batch_bytes: "+v+"\n", 1)
		if budget != "" {
			y += "backpressure: {max_inflight_bytes: " + budget + "}\n"
		}
		return y
	}
	for _, tt := range []struct {
		value, budget string
		want          ByteSize
		err           string
	}{
		{"0", "", 0, ""},
		{"64KiB", "", 64 * KiB, ""},
		{"1GiB", "", GiB, ""},
		{"16MiB", "64MiB", 16 * MiB, ""},
		{"64MiB", "64MiB", 64 * MiB, ""},
		{"1KiB", "", 0, "source.kafka.max_decompressed_batch_bytes: must be at least 64KiB"},
		{"2GiB", "", 0, "must be at most 1GiB"},
		{"-1", "", 0, "must not be negative"},
		{"128MiB", "64MiB", 0, "source.kafka.max_decompressed_batch_bytes: must be at most backpressure.max_inflight_bytes (64MiB), got 128MiB"},
	} {
		c, err := Parse([]byte(set(tt.value, tt.budget)), "f.yaml", env(nil))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s (budget %q): error %v, want %s", tt.value, tt.budget, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.value, err)
			continue
		}
		if got := c.Source.Kafka.MaxDecompressedBatchBytes; got != tt.want {
			t.Errorf("%s: %d, want %d", tt.value, got, tt.want)
		}
	}
}
