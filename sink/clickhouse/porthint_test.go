package clickhouse

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
)

// TestHTTPPortHint: ClickHouse's HTTP port given as the native port is
// named in the error, instead of a bare timeout.
func TestHTTPPortHint(t *testing.T) {
	t.Parallel()
	srv := testenv.ClickHouse(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Connect(ctx, Options{Addr: []string{srv.HTTPAddr()}, Database: "default", Table: "t", DialTimeout: 2 * time.Second}, testLog(t))
	if err == nil {
		t.Fatal("Connect to the HTTP port succeeded")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "not the HTTP port") {
		t.Fatalf("error %q does not name the HTTP port", err)
	}
}
