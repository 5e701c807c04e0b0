package pipeline

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/schemaregistry/registrytest"
)

// TestRegistryTLSBasicAuth: Confluent-framed Avro with a registry that
// serves HTTPS with a certificate from a test CA and requires basic auth;
// the pipeline trusts it through decode.avro.registry.tls.ca_file and
// reads the password from password_file: every row lands (the registry
// answers 401 to a request without the credentials, and an untrusted
// certificate would fail every fetch). The password is then rotated, on
// the registry and in the file: records of a new schema id, which must be
// fetched with it, land too.
func TestRegistryTLSBasicAuth(t *testing.T) {
	kb, ch := setup(t)
	ca := testenv.NewCA(t, "registry CA")
	certPEM, keyPEM := ca.Issue(t, "registry", "127.0.0.1")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.NewTLS(t, cert)
	const password = "registry-pass-3Kd"
	reg.RequireBasicAuth("etl", password)
	if !strings.HasPrefix(reg.URL(), "https://") {
		t.Fatalf("registry URL %s", reg.URL())
	}
	id := reg.Register("events-value", eventSchema)
	schema := avro.MustParse(eventSchema)
	const n = 2000
	raw := map[uint64][]byte{}
	for i := uint64(0); i < n; i++ {
		payload, err := avro.Marshal(schema, gen.Make(seed, i).Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = schemaregistry.AppendFrame(nil, id, payload)
	}
	produce(t, kb, 0, n, raw)
	pwFile := filepath.Join(t.TempDir(), "registry-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t, kb, ch, "avro-tls")
	cfg.Source.Kafka.Topics = []string{"events"}
	cfg.Decode.Format = "avro"
	cfg.Decode.Avro = config.Avro{Framing: "confluent", NegativeCacheTTL: config.Duration(time.Minute),
		Registry: &config.Registry{URL: config.URL(reg.URL()), Username: "etl", PasswordFile: pwFile,
			TLS: &config.TLS{Enabled: true, CAFile: ca.CertFile(t)}}}
	if err := Preflight(cfg); err != nil {
		t.Fatal(err)
	}
	p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	testenv.WaitFor(t, "rows", time.Minute, func() bool { return ch.Count(t, "default.events") >= n })

	// Rotate the password: the registry takes only the new one, and the
	// file holds it.
	const rotated = "registry-pass-rotated-8Lw"
	reg.RequireBasicAuth("etl", rotated)
	if err := os.WriteFile(pwFile, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	id2 := reg.Register("events-value", eventSchema+" ") // the same schema under a new id
	if id2 == id {
		t.Fatal("the registry gave the new text the same id")
	}
	raw2 := map[uint64][]byte{}
	for i := uint64(n); i < 2*n; i++ {
		payload, err := avro.Marshal(schema, gen.Make(seed, i).Avro())
		if err != nil {
			t.Fatal(err)
		}
		raw2[i] = schemaregistry.AppendFrame(nil, id2, payload)
	}
	produce(t, kb, n, n, raw2)
	testenv.WaitFor(t, "rows after the rotation", time.Minute, func() bool { return ch.Count(t, "default.events") >= 2*n })
	testenv.WaitFor(t, "commits", 30*time.Second, func() bool {
		c := kb.CommittedOffsets(t, "avro-tls", "events")
		return c[0]+c[1]+c[2] == 2*n
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := ch.Query(t, "SELECT count(), uniqExact(id) FROM default.events"); got != fmt.Sprintf("%d\t%d", 2*n, 2*n) {
		t.Fatalf("count, distinct = %s", got)
	}
	if reg.Requests() == 0 {
		t.Fatal("the registry saw no request")
	}
}
