package registrytest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/etl-project/etl/schemaregistry/registrytest"
)

func do(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: decoding the answer: %v", method, url, err)
	}
	return resp.StatusCode, out
}

func TestServer(t *testing.T) {
	s := registrytest.New(t)
	a := s.Register("a-value", `"string"`)
	if a != 1 {
		t.Fatalf("first id = %d, want 1", a)
	}
	// The same schema under another subject keeps its id; POST registers.
	code, body := do(t, "POST", s.URL()+"/subjects/b-value/versions", `{"schema":"\"string\""}`)
	if code != 200 || body["id"] != float64(a) {
		t.Fatalf("POST same schema = %d %v, want id %d", code, body, a)
	}
	code, body = do(t, "POST", s.URL()+"/subjects/b-value/versions", `{"schema":"\"long\""}`)
	if code != 200 || body["id"] != float64(2) {
		t.Fatalf("POST new schema = %d %v, want id 2", code, body)
	}
	code, body = do(t, "GET", s.URL()+"/subjects/b-value/versions/latest", "")
	if code != 200 || body["id"] != float64(2) || body["version"] != float64(2) || body["schema"] != `"long"` || body["subject"] != "b-value" {
		t.Fatalf("GET latest = %d %v", code, body)
	}
	code, body = do(t, "GET", s.URL()+"/schemas/ids/1", "")
	if code != 200 || body["schema"] != `"string"` {
		t.Fatalf("GET id 1 = %d %v", code, body)
	}
	if code, body = do(t, "GET", s.URL()+"/schemas/ids/3", ""); code != 404 || body["error_code"] != float64(40403) {
		t.Fatalf("GET id 3 = %d %v, want 404 40403", code, body)
	}
	if code, body = do(t, "GET", s.URL()+"/subjects/nope/versions/latest", ""); code != 404 || body["error_code"] != float64(40401) {
		t.Fatalf("GET latest of unknown subject = %d %v, want 404 40401", code, body)
	}
	s.SetDown(true)
	if code, _ = do(t, "GET", s.URL()+"/schemas/ids/1", ""); code != 503 {
		t.Fatalf("GET while down = %d, want 503", code)
	}
	s.SetDown(false)
	if n := s.Requests(); n != 7 {
		t.Fatalf("Requests = %d, want 7", n)
	}
}
