package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A process killed while answering /metrics leaves a cut last line; the
// scrape must skip it rather than fail the whole run.
func TestScrapeSkipsCutLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "etl_a 2\netl_b{x=\"1\"} 3\netl_b{x=\"2\"}\netl_c\n")
	}))
	defer srv.Close()
	m, err := scrapeErr(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if m["etl_a"] != 2 || m["etl_b"] != 3 {
		t.Fatalf("scrape = %v, want etl_a 2 and etl_b 3", m)
	}
	if _, ok := m["etl_c"]; ok {
		t.Fatalf("scrape kept a line with no value: %v", m)
	}
}
