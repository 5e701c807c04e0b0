package clickhouse

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// withPortHint adds a hint to err, a native-protocol connection that
// failed without a server exception, when one of addrs answers HTTP as
// ClickHouse's HTTP interface does (GET /ping gives "Ok."): the native
// port was confused with the HTTP one (9000 and 8123 by default). The
// probe takes at most a second per address.
func withPortHint(addrs []string, err error) error {
	for _, a := range addrs {
		if answersHTTP(a) {
			return fmt.Errorf("%w (%s answers HTTP like ClickHouse's HTTP interface: sink.clickhouse.addr takes the native protocol port, 9000 by default, not the HTTP port)", err, a)
		}
	}
	return err
}

func answersHTTP(addr string) bool {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return false
	}
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/ping")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	return strings.HasPrefix(string(b), "Ok.")
}
