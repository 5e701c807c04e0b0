package clickhouse

import (
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// hangingConn is a driver connection whose Close never returns, as
// clickhouse-go's can (issue 1990).
type hangingConn struct {
	driver.Conn
	release chan struct{}
}

func (h *hangingConn) Close() error { <-h.release; return nil }

// TestCloseDoesNotHangOnTheDriver: Client.Close returns after
// driverCloseTimeout when the driver's Close hangs.
func TestCloseDoesNotHangOnTheDriver(t *testing.T) {
	old := driverCloseTimeout
	driverCloseTimeout = 100 * time.Millisecond
	defer func() { driverCloseTimeout = old }()
	h := &hangingConn{release: make(chan struct{})}
	defer close(h.release)
	c := &Client{conn: h, log: testLog(t), opts: Options{Table: "t"}, db: "default"}
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Client.Close hung with the driver's Close")
	}
}
