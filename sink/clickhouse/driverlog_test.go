package clickhouse

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestDriverLogDemotesVersionWarning(t *testing.T) {
	var b bytes.Buffer
	log := driverLog(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo})))
	log.Warn("unsupported clickhouse version", "version", "18.16.1")
	log.Warn("something else")
	out := b.String()
	if strings.Contains(out, "unsupported clickhouse version") {
		t.Errorf("the version warning was logged at INFO level:\n%s", out)
	}
	if !strings.Contains(out, "level=WARN msg=\"something else\" component=clickhouse-go") {
		t.Errorf("other warnings must pass:\n%s", out)
	}
}
