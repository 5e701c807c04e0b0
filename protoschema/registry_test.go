package protoschema_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/protoschema"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// Three files, each importing the next, the last a well-known type: two
// levels of references.
const (
	rootText = `syntax = "proto3";
package app;
import "app/middle.proto";
message Envelope {
  Middle middle = 1;
  message Inner { Middle middle = 1; }
  Inner inner = 2;
}
`
	middleText = `syntax = "proto3";
package app;
import "app/leaf.proto";
message Middle { repeated Leaf leaves = 1; }
`
	leafText = `syntax = "proto3";
package app;
import "google/protobuf/timestamp.proto";
message Leaf { google.protobuf.Timestamp at = 1; string name = 2; }
`
)

func protobuf(text string, refs ...registrytest.Reference) registrytest.Schema {
	return registrytest.Schema{Text: text, Type: "PROTOBUF", References: refs}
}

// registerChain registers leaf, middle and root, each referencing the
// next by the subject named by its import path, and returns root's id.
func registerChain(srv *registrytest.Server) int32 {
	_, lv := srv.RegisterSchema("app/leaf.proto", protobuf(leafText))
	_, mv := srv.RegisterSchema("app/middle.proto", protobuf(middleText,
		registrytest.Reference{Name: "app/leaf.proto", Subject: "app/leaf.proto", Version: lv}))
	id, _ := srv.RegisterSchema("app-value", protobuf(rootText,
		registrytest.Reference{Name: "app/middle.proto", Subject: "app/middle.proto", Version: mv}))
	return id
}

func newRegistry(t *testing.T, srv *registrytest.Server) *protoschema.Registry {
	t.Helper()
	c, err := schemaregistry.New(schemaregistry.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return protoschema.NewRegistry(c)
}

// lookup calls Lookup until it answers something other than ErrPending,
// waiting on Wait between calls, and returns that answer and how many
// times it was pending.
func lookup(t *testing.T, r *protoschema.Registry, id int32) (*protoschema.Files, int, error) {
	t.Helper()
	for pending := 0; pending < 20; pending++ {
		files, err := r.Lookup(id)
		if !errors.Is(err, protoschema.ErrPending) {
			return files, pending, err
		}
		select {
		case <-r.Wait(id):
		case <-time.After(10 * time.Second):
			t.Fatalf("schema id %d: Wait not closed after 10s (last answer: %v)", id, err)
		}
	}
	t.Fatalf("schema id %d still pending after 20 waits", id)
	return nil, 0, nil
}

func TestRegistryReferencesTwoLevels(t *testing.T) {
	srv := registrytest.New(t)
	id := registerChain(srv)
	r := newRegistry(t, srv)

	files, pending, err := lookup(t, r, id)
	if err != nil {
		t.Fatal(err)
	}
	// The schema, then each reference, is fetched in the background: at
	// most one wait each (fewer when a fetch ends before Wait walks the
	// schema again, Wait then starting the next one).
	if pending < 1 || pending > 3 {
		t.Errorf("Lookup was pending %d times, want 1 to 3 (the schema and its two references)", pending)
	}
	requests := srv.Requests()
	if requests != 3 {
		t.Errorf("registry got %d requests, want 3", requests)
	}
	md, err := files.MessageAt([]int{0})
	if err != nil || md.FullName() != "app.Envelope" {
		t.Fatalf("MessageAt([0]) = %v, %v", md, err)
	}
	inner, err := files.MessageAt([]int{0, 0})
	if err != nil || inner.FullName() != "app.Envelope.Inner" {
		t.Fatalf("MessageAt([0 0]) = %v, %v", inner, err)
	}
	at := inner.Fields().ByName("middle").Message().Fields().ByName("leaves").Message().Fields().ByName("at")
	if at == nil || at.Message().FullName() != "google.protobuf.Timestamp" {
		t.Fatalf("Leaf.at = %v", at)
	}
	if _, err := files.Message("app.Middle"); err != nil {
		t.Fatal(err)
	}
	if s := files.String(); s != "schema id 3" {
		t.Errorf("files are %q, want schema id 3", s)
	}

	// Cached: the same files, no request, and Wait is closed.
	again, err := r.Lookup(id)
	if err != nil || again != files {
		t.Fatalf("second Lookup = %p, %v; want the cached %p", again, err, files)
	}
	select {
	case <-r.Wait(id):
	default:
		t.Fatal("Wait of a cached id is not closed")
	}
	if n := srv.Requests(); n != requests {
		t.Fatalf("a cached Lookup made %d requests", n-requests)
	}

	// Fetch, on a new client, gets the same with one request each.
	files, err = newRegistry(t, srv).Fetch(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if md, err := files.MessageAt([]int{0}); err != nil || md.FullName() != "app.Envelope" {
		t.Fatalf("Fetch: MessageAt([0]) = %v, %v", md, err)
	}
	if n := srv.Requests() - requests; n != 3 {
		t.Fatalf("Fetch made %d requests, want 3", n)
	}

	// Latest and Prewarm go by subject.
	r2 := newRegistry(t, srv)
	if err := r2.Prewarm(context.Background(), []string{"app-value"}); err != nil {
		t.Fatal(err)
	}
	before := srv.Requests()
	if _, err := r2.Lookup(id); err != nil {
		t.Fatalf("Lookup after Prewarm: %v", err)
	}
	if srv.Requests() != before {
		t.Fatal("Lookup after Prewarm asked the registry")
	}
	if err := r2.Prewarm(context.Background(), []string{"nope-value"}); err == nil || !strings.Contains(err.Error(), `"nope-value"`) {
		t.Fatalf("Prewarm of an unknown subject: %v", err)
	}
}

func TestRegistryDeniedAndInvalid(t *testing.T) {
	srv := registrytest.New(t)
	missingRef, _ := srv.RegisterSchema("a-value", protobuf(rootText,
		registrytest.Reference{Name: "app/middle.proto", Subject: "app/middle.proto", Version: 1}))
	_, mv := srv.RegisterSchema("app/middle.proto", protobuf(middleText,
		registrytest.Reference{Name: "app/leaf.proto", Subject: "app/leaf.proto", Version: 4}))
	if mv != 1 {
		t.Fatalf("middle is version %d", mv)
	}
	// A cycle: x imports y, which imports x.
	srv.RegisterSchema("x.proto", protobuf("syntax = \"proto3\";\nimport \"y.proto\";\nmessage X {}\n",
		registrytest.Reference{Name: "y.proto", Subject: "y.proto", Version: 1}))
	srv.RegisterSchema("y.proto", protobuf("syntax = \"proto3\";\nimport \"x.proto\";\nmessage Y {}\n",
		registrytest.Reference{Name: "x.proto", Subject: "x.proto", Version: 1}))
	cycle, _ := srv.RegisterSchema("c-value", protobuf("syntax = \"proto3\";\nimport \"x.proto\";\nmessage C {}\n",
		registrytest.Reference{Name: "x.proto", Subject: "x.proto", Version: 1}))
	avro := srv.Register("avro-value", `"string"`)
	syntax, _ := srv.RegisterSchema("s-value", protobuf("syntax = \"proto3\";\nmessage S {\n  int32 = 1;\n}\n"))
	// Two references named l.proto, to two schemas.
	srv.RegisterSchema("L1", protobuf("syntax = \"proto3\";\nmessage L1 {}\n"))
	srv.RegisterSchema("L2", protobuf("syntax = \"proto3\";\nmessage L2 {}\n"))
	srv.RegisterSchema("M", protobuf("syntax = \"proto3\";\nimport \"l.proto\";\nmessage M { L2 l = 1; }\n",
		registrytest.Reference{Name: "l.proto", Subject: "L2", Version: 1}))
	conflict, _ := srv.RegisterSchema("d-value", protobuf("syntax = \"proto3\";\nimport \"l.proto\";\nimport \"m.proto\";\nmessage D {}\n",
		registrytest.Reference{Name: "l.proto", Subject: "L1", Version: 1},
		registrytest.Reference{Name: "m.proto", Subject: "M", Version: 1}))
	unreferenced, _ := srv.RegisterSchema("u-value", protobuf("syntax = \"proto3\";\nimport \"not/referenced.proto\";\nmessage U {}\n"))

	cases := []struct {
		name string
		id   int32
		want error
		msg  []string
	}{
		{"reference to a version the subject lacks", missingRef, protoschema.ErrUnknown,
			[]string{`reference "app/leaf.proto" (subject "app/leaf.proto" version 4)`, "subject not found"}},
		{"unknown id", 99, protoschema.ErrUnknown, []string{"schema id 99"}},
		{"cycle", cycle, protoschema.ErrInvalid,
			[]string{fmt.Sprintf(`references form a cycle: schema id %d -> "x.proto" (subject "x.proto" version 1) -> "y.proto" (subject "y.proto" version 1) -> "x.proto"`, cycle)}},
		{"not protobuf", avro, protoschema.ErrInvalid, []string{"is of type AVRO, not PROTOBUF"}},
		{"syntax error", syntax, protoschema.ErrInvalid, []string{fmt.Sprintf("schema-%d.proto:3:9: syntax error", syntax)}},
		{"one import, two schemas", conflict, protoschema.ErrInvalid,
			[]string{`import "l.proto" names both subject "L1" version 1 and subject "L2" version 1`}},
		{"import without a reference", unreferenced, protoschema.ErrInvalid,
			[]string{fmt.Sprintf("schema-%d.proto:2:8", unreferenced), "not/referenced.proto"}},
	}
	r := newRegistry(t, srv)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, _, err := lookup(t, r, c.id)
			if !errors.Is(err, c.want) {
				t.Fatalf("Lookup(%d) = %v, %v; want %v", c.id, files, err, c.want)
			}
			for _, m := range c.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not contain %q", err, m)
				}
			}
			// The blocking path says the same.
			if _, ferr := newRegistry(t, srv).Fetch(context.Background(), c.id); !errors.Is(ferr, c.want) {
				t.Errorf("Fetch(%d) = %v, want %v", c.id, ferr, c.want)
			}
			// An invalid schema is cached: no request the second time.
			if c.want == protoschema.ErrInvalid {
				n := srv.Requests()
				if _, err := r.Lookup(c.id); !errors.Is(err, protoschema.ErrInvalid) || srv.Requests() != n {
					t.Errorf("second Lookup = %v with %d requests; want the cached error", err, srv.Requests()-n)
				}
			}
		})
	}
}

// TestRegistryWaitsWhileDown: while the registry is down a reference's
// fetch is retried and Lookup stays pending; once it is up, the schema
// resolves.
func TestRegistryWaitsWhileDown(t *testing.T) {
	srv := registrytest.New(t)
	id := registerChain(srv)
	c, err := schemaregistry.New(schemaregistry.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.Fetch(context.Background(), id); err != nil { // the root only
		t.Fatal(err)
	}
	r := protoschema.NewRegistry(c)
	srv.SetDown(true)
	if _, err := r.Lookup(id); !errors.Is(err, protoschema.ErrPending) {
		t.Fatalf("Lookup while down = %v, want ErrPending", err)
	}
	wait := r.Wait(id)
	before := srv.Requests()
	// The fetch of the first reference fails and is retried, and Lookup
	// keeps answering pending, now with the failure.
	testenv.WaitFor(t, "a retry while the registry is down", 10*time.Second, func() bool { return srv.Requests() >= before+2 })
	_, err = r.Lookup(id)
	if !errors.Is(err, protoschema.ErrPending) || !strings.Contains(err.Error(), "retrying") {
		t.Fatalf("Lookup while down, after a failed attempt = %v; want ErrPending with the failure", err)
	}
	select {
	case <-wait:
		t.Fatal("Wait closed while the registry is down")
	default:
	}
	srv.SetDown(false)
	if _, _, err := lookup(t, r, id); err != nil {
		t.Fatal(err)
	}
}
