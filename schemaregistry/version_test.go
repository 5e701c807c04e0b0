package schemaregistry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

const leafProto = "syntax = \"proto3\";\nmessage Leaf { string name = 1; }\n"

func TestLookupVersionPendingThenSchema(t *testing.T) {
	srv := registrytest.New(t)
	srv.Register("other", userSchema) // so that the versions' ids differ from 1
	ref := registrytest.Reference{Name: "leaf.proto", Subject: "leaf.proto", Version: 1}
	id1, v1 := srv.RegisterSchema("leaf.proto", registrytest.Schema{Text: leafProto, Type: "PROTOBUF"})
	id2, v2 := srv.RegisterSchema("leaf.proto", registrytest.Schema{Text: leafProto + "// v2\n", Type: "PROTOBUF", References: []registrytest.Reference{ref}})
	if v1 != 1 || v2 != 2 || id1 == id2 {
		t.Fatalf("registered ids %d, %d as versions %d, %d", id1, id2, v1, v2)
	}
	reg := prometheus.NewRegistry()
	c := newClient(t, schemaregistry.Options{URL: srv.URL(), Registerer: reg})

	if _, err := c.LookupVersion("leaf.proto", 2); !errors.Is(err, schemaregistry.ErrPending) || !strings.Contains(err.Error(), `subject "leaf.proto" version 2`) {
		t.Fatalf("first LookupVersion error = %v, want ErrPending naming the version", err)
	}
	waitClosed(t, c.WaitVersion("leaf.proto", 2), 5*time.Second, "WaitVersion")
	s, err := c.LookupVersion("leaf.proto", 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != id2 || s.Type != "PROTOBUF" || s.Text != leafProto+"// v2\n" || len(s.References) != 1 || s.References[0] != (schemaregistry.Reference{Name: "leaf.proto", Subject: "leaf.proto", Version: 1}) {
		t.Fatalf("LookupVersion = %+v", s)
	}
	// Cached under the version and under its id: no more request.
	if again, err := c.LookupVersion("leaf.proto", 2); err != nil || again != s {
		t.Fatalf("second LookupVersion = %p, %v; want %p", again, err, s)
	}
	if byID, err := c.Lookup(id2); err != nil || byID.Text != s.Text {
		t.Fatalf("Lookup(%d) after LookupVersion = %v, %v", id2, byID, err)
	}
	select {
	case <-c.WaitVersion("leaf.proto", 2):
	default:
		t.Fatal("WaitVersion of a cached version is not closed")
	}
	if n := srv.Requests(); n != 1 {
		t.Fatalf("registry got %d requests, want 1", n)
	}
	if got := fetches(t, reg, "ok"); got != 1 {
		t.Fatalf(`fetches{outcome="ok"} = %v, want 1`, got)
	}
	if got := gaugeValue(t, reg, "etl_schema_cache_entries"); got != 1 {
		t.Fatalf("etl_schema_cache_entries = %v, want 1", got)
	}

	// FetchVersion: one request, then cached.
	s1, err := c.FetchVersion(context.Background(), "leaf.proto", 1)
	if err != nil || s1.ID != id1 || s1.Text != leafProto {
		t.Fatalf("FetchVersion(1) = %+v, %v", s1, err)
	}
	if _, err := c.FetchVersion(context.Background(), "leaf.proto", 1); err != nil || srv.Requests() != 2 {
		t.Fatalf("FetchVersion of a cached version: %v, %d requests, want 2", err, srv.Requests())
	}
}

func TestVersionDeniedCachedForTTL(t *testing.T) {
	srv := registrytest.New(t)
	srv.RegisterSchema("leaf.proto", registrytest.Schema{Text: leafProto, Type: "PROTOBUF"})
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		c, err := schemaregistry.New(schemaregistry.Options{
			URL: srv.URL(), Transport: srv.Transport(), NegativeCacheTTL: time.Minute, Registerer: reg,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		for _, k := range []struct {
			subject string
			version int
			want    error
		}{{"nope.proto", 1, schemaregistry.ErrSubjectNotFound}, {"leaf.proto", 3, schemaregistry.ErrVersionNotFound}} {
			if _, err := c.LookupVersion(k.subject, k.version); !errors.Is(err, schemaregistry.ErrPending) {
				t.Fatalf("%s v%d: first LookupVersion = %v, want ErrPending", k.subject, k.version, err)
			}
			<-c.WaitVersion(k.subject, k.version)
			_, err := c.LookupVersion(k.subject, k.version)
			if !errors.Is(err, k.want) || errors.Is(err, schemaregistry.ErrPending) {
				t.Fatalf("%s v%d: LookupVersion after 404 = %v, want %v", k.subject, k.version, err, k.want)
			}
			if _, err := c.FetchVersion(context.Background(), k.subject, k.version); !errors.Is(err, k.want) {
				t.Fatalf("%s v%d: FetchVersion within the TTL = %v, want %v", k.subject, k.version, err, k.want)
			}
		}
		if n := srv.Requests(); n != 2 {
			t.Fatalf("registry got %d requests, want 2", n)
		}
		if got := fetches(t, reg, "not_found"); got != 2 {
			t.Fatalf(`fetches{outcome="not_found"} = %v, want 2`, got)
		}

		// The registry learns the subject; the client asks again only
		// once the TTL has passed.
		srv.RegisterSchema("nope.proto", registrytest.Schema{Text: leafProto, Type: "PROTOBUF"})
		time.Sleep(time.Minute - time.Millisecond)
		if _, err := c.LookupVersion("nope.proto", 1); !errors.Is(err, schemaregistry.ErrSubjectNotFound) {
			t.Fatalf("LookupVersion within the TTL = %v, want ErrSubjectNotFound", err)
		}
		time.Sleep(time.Millisecond)
		if _, err := c.LookupVersion("nope.proto", 1); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("LookupVersion after the TTL = %v, want ErrPending", err)
		}
		<-c.WaitVersion("nope.proto", 1)
		if s, err := c.LookupVersion("nope.proto", 1); err != nil || s.Text != leafProto {
			t.Fatalf("LookupVersion after refetch = %v, %v", s, err)
		}
		if n := srv.Requests(); n != 3 {
			t.Fatalf("registry got %d requests, want 3", n)
		}
	})
}

func TestLookupVersionBelowOne(t *testing.T) {
	srv := registrytest.New(t)
	c := newClient(t, schemaregistry.Options{URL: srv.URL()})
	for _, v := range []int{0, -1} {
		if _, err := c.LookupVersion("s", v); !errors.Is(err, schemaregistry.ErrVersionNotFound) {
			t.Fatalf("LookupVersion(s, %d) = %v, want ErrVersionNotFound", v, err)
		}
		if _, err := c.FetchVersion(context.Background(), "s", v); !errors.Is(err, schemaregistry.ErrVersionNotFound) {
			t.Fatalf("FetchVersion(s, %d) = %v, want ErrVersionNotFound", v, err)
		}
	}
	if n := srv.Requests(); n != 0 {
		t.Fatalf("registry got %d requests, want none", n)
	}
}

// TestVersionRetriedWhileDown: a version fetch that fails is retried in
// the background, LookupVersion answering ErrPending (with the failure)
// meanwhile and WaitVersion staying open.
func TestVersionRetriedWhileDown(t *testing.T) {
	srv := registrytest.New(t)
	srv.RegisterSchema("leaf.proto", registrytest.Schema{Text: leafProto, Type: "PROTOBUF"})
	srv.SetDown(true)
	synctest.Test(t, func(t *testing.T) {
		c, err := schemaregistry.New(schemaregistry.Options{URL: srv.URL(), Transport: srv.Transport()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.LookupVersion("leaf.proto", 1); !errors.Is(err, schemaregistry.ErrPending) {
			t.Fatalf("LookupVersion = %v, want ErrPending", err)
		}
		wait := c.WaitVersion("leaf.proto", 1)
		synctest.Wait()
		_, err = c.LookupVersion("leaf.proto", 1)
		if !errors.Is(err, schemaregistry.ErrPending) || !strings.Contains(err.Error(), "retrying") || !strings.Contains(err.Error(), "503") {
			t.Fatalf("LookupVersion after a failed attempt = %v, want ErrPending with the failure", err)
		}
		select {
		case <-wait:
			t.Fatal("WaitVersion closed while the registry is down")
		default:
		}
		time.Sleep(time.Second) // past a few backoffs
		if n := srv.Requests(); n < 3 {
			t.Fatalf("registry got %d requests in a second of backoff, want a few retries", n)
		}
		srv.SetDown(false)
		<-wait
		if s, err := c.LookupVersion("leaf.proto", 1); err != nil || s.Text != leafProto {
			t.Fatalf("LookupVersion after the registry is back = %v, %v", s, err)
		}
	})
}
