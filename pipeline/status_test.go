package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-project/etl/config"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStatusLine: the status line is logged every log.status_interval with
// the rates and counters an operator reads.
func TestStatusLine(t *testing.T) {
	p, _ := newBarePipeline(t, &nopSource{}, 1024)
	var out syncBuffer
	p.log = slog.New(slog.NewTextHandler(&out, nil))
	p.cfg = &config.Config{Log: config.Log{StatusInterval: config.Duration(50 * time.Millisecond)}}
	p.prog.rowsWritten.Add(500)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Millisecond)
	defer cancel()
	p.statusLoop(ctx)
	text := out.String()
	if n := strings.Count(text, "msg=status"); n < 2 {
		t.Fatalf("%d status lines in 180ms at a 50ms interval:\n%s", n, text)
	}
	for _, key := range []string{"rows_in_per_s=", "rows_out_per_s=", "rows_written=500", "lag=", "inflight_bytes=", "budget_bytes=", "paused_partitions=0", "decode_errors=0"} {
		if !strings.Contains(text, key) {
			t.Errorf("status line lacks %s:\n%s", key, text)
		}
	}
}
