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

func TestServerVersionsAndProtobuf(t *testing.T) {
	s := registrytest.New(t)
	leaf := registrytest.Schema{Text: "syntax = \"proto3\";\nmessage L {}\n", Type: "PROTOBUF"}
	id, v := s.RegisterSchema("leaf.proto", leaf)
	if id != 1 || v != 1 {
		t.Fatalf("RegisterSchema = id %d version %d, want 1 and 1", id, v)
	}
	// Registering it again keeps its id and version.
	if id, v = s.RegisterSchema("leaf.proto", leaf); id != 1 || v != 1 {
		t.Fatalf("RegisterSchema again = id %d version %d", id, v)
	}
	// The same text with references is another schema.
	ref := registrytest.Reference{Name: "leaf.proto", Subject: "leaf.proto", Version: 1}
	code, body := do(t, "POST", s.URL()+"/subjects/root-value/versions",
		`{"schema":"syntax = \"proto3\";\nmessage L {}\n","schemaType":"PROTOBUF","references":[{"name":"leaf.proto","subject":"leaf.proto","version":1}]}`)
	if code != 200 || body["id"] != float64(2) {
		t.Fatalf("POST with references = %d %v, want id 2", code, body)
	}
	if id, v = s.RegisterSchema("root-value", registrytest.Schema{Text: leaf.Text, Type: "PROTOBUF", References: []registrytest.Reference{ref}}); id != 2 || v != 1 {
		t.Fatalf("RegisterSchema of the POSTed schema = id %d version %d, want 2 and 1", id, v)
	}
	// An Avro schema of the same text is a third.
	if id := s.Register("avro-value", leaf.Text); id != 3 {
		t.Fatalf("Avro schema of the same text: id %d, want 3", id)
	}

	code, body = do(t, "GET", s.URL()+"/subjects/root-value/versions/1", "")
	refs, _ := body["references"].([]any)
	if code != 200 || body["id"] != float64(2) || body["version"] != float64(1) || body["subject"] != "root-value" ||
		body["schemaType"] != "PROTOBUF" || len(refs) != 1 {
		t.Fatalf("GET version 1 = %d %v", code, body)
	}
	if r := refs[0].(map[string]any); r["name"] != "leaf.proto" || r["subject"] != "leaf.proto" || r["version"] != float64(1) {
		t.Fatalf("reference = %v", r)
	}
	code, body = do(t, "GET", s.URL()+"/schemas/ids/2", "")
	if refs, _ := body["references"].([]any); code != 200 || body["schemaType"] != "PROTOBUF" || len(refs) != 1 {
		t.Fatalf("GET id 2 = %d %v", code, body)
	}
	if code, body = do(t, "GET", s.URL()+"/subjects/leaf.proto/versions/-1", ""); code != 200 || body["id"] != float64(1) || body["version"] != float64(1) {
		t.Fatalf("GET version -1 = %d %v, want the latest", code, body)
	}
	for _, c := range []struct {
		path string
		code int
		ec   float64
	}{
		{"/subjects/leaf.proto/versions/2", 404, 40402},
		{"/subjects/nope/versions/1", 404, 40401},
		{"/subjects/leaf.proto/versions/0", 422, 42202},
		{"/subjects/leaf.proto/versions/x", 422, 42202},
	} {
		if code, body := do(t, "GET", s.URL()+c.path, ""); code != c.code || body["error_code"] != c.ec {
			t.Errorf("GET %s = %d %v, want %d %v", c.path, code, body, c.code, c.ec)
		}
	}
}
