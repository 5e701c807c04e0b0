package pipeline

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestKafkaSecurity runs the pipeline against brokers that require TLS
// (verified with a test CA), mutual TLS, SASL PLAIN over TLS, and
// SCRAM-SHA-256 and -512: in each, it consumes, writes every good record,
// dead-letters the bad ones and commits to the end. A wrong SASL password
// stops New with a ConfigError (exit 2) that says so (a principal without
// READ on the group or the topic: inspect's TestKafkaACLs).
func TestKafkaSecurity(t *testing.T) {
	ca := testenv.NewCA(t, "etl kafka CA")
	serverPEM, serverKey := ca.Issue(t, "broker", "127.0.0.1", "localhost")
	serverCert, err := tls.X509KeyPair(serverPEM, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCertFile, clientKeyFile := ca.IssueFiles(t, "etl-client")
	caFile := ca.CertFile(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	clientCert, err := tls.LoadX509KeyPair(clientCertFile, clientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	const password = "kafka-pass-Zq9"
	pwFile := filepath.Join(t.TempDir(), "kafka-password")
	if err := os.WriteFile(pwFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}

	serverTLS := &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
	mutualTLS := &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	clientTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	clientMTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{clientCert}}
	topics := kfake.SeedTopics(3, "events", "events.dlq")

	modes := []struct {
		name   string
		broker []kfake.Opt
		admin  []kgo.Opt // the test's own client (superuser)
		tls    *config.TLS
		sasl   *config.SASL
	}{
		{"tls", []kfake.Opt{kfake.TLS(serverTLS), topics}, []kgo.Opt{kgo.DialTLSConfig(clientTLS)},
			&config.TLS{Enabled: true, CAFile: caFile}, nil},
		{"mutual-tls", []kfake.Opt{kfake.TLS(mutualTLS), topics}, []kgo.Opt{kgo.DialTLSConfig(clientMTLS)},
			&config.TLS{Enabled: true, CAFile: caFile, CertFile: clientCertFile, KeyFile: clientKeyFile}, nil},
		{"sasl-plain-over-tls", []kfake.Opt{kfake.TLS(serverTLS), kfake.EnableSASL(), kfake.Superuser("PLAIN", "etl", password), topics},
			[]kgo.Opt{kgo.DialTLSConfig(clientTLS), kgo.SASL(plain.Auth{User: "etl", Pass: password}.AsMechanism())},
			&config.TLS{Enabled: true, CAFile: caFile}, &config.SASL{Mechanism: "PLAIN", Username: "etl", PasswordFile: pwFile}},
		{"scram-sha-256", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "etl", password), topics},
			[]kgo.Opt{kgo.SASL(scram.Auth{User: "etl", Pass: password}.AsSha256Mechanism())},
			nil, &config.SASL{Mechanism: "SCRAM-SHA-256", Username: "etl", PasswordFile: pwFile}},
		{"scram-sha-512", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "etl", password), topics},
			[]kgo.Opt{kgo.SASL(scram.Auth{User: "etl", Pass: password}.AsSha512Mechanism())},
			nil, &config.SASL{Mechanism: "SCRAM-SHA-512", Username: "etl", PasswordFile: pwFile}},
	}
	for i, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			kb := testenv.Kafka(t, m.broker...)
			admin := kb.Client(t, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(10000)}, m.admin...)...)
			table := fmt.Sprintf("sec_%d", i)
			ch.Exec(t, gen.TableDDL("default", table))
			const n = 3000
			bad := map[uint64][]byte{7: []byte(`{"id": 7, "ts": `), 1500: []byte(`[1, 2]`)}
			var recs []*kgo.Record
			for id := uint64(0); id < n; id++ {
				v := gen.Make(seed, id).AppendJSON(nil)
				if b, ok := bad[id]; ok {
					v = b
				}
				recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(id % 3), Value: v})
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}

			cfg := testConfig(t, kb, ch, "sec-"+m.name)
			cfg.Source.Kafka.Topics = []string{"events"}
			cfg.Source.Kafka.TLS = m.tls
			cfg.Source.Kafka.SASL = m.sasl
			cfg.Sink.ClickHouse.Table = table
			cfg.Decode.OnError = "dlq"
			cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
			if err := Preflight(cfg); err != nil {
				t.Fatal(err)
			}
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			rctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(rctx) }()
			adm := kadm.NewClient(admin)
			testenv.WaitFor(t, "good rows", time.Minute, func() bool { return ch.Count(t, "default."+table) >= n-2 })
			testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
				o, err := adm.FetchOffsets(ctx, "sec-"+m.name)
				if err != nil {
					return false
				}
				sum := int64(0)
				o.Each(func(r kadm.OffsetResponse) { sum += r.At })
				return sum == n
			})
			stop()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := ch.Query(t, "SELECT count(), countIf(id IN (7, 1500)) FROM default."+table); got != fmt.Sprintf("%d\t0", n-2) {
				t.Fatalf("count, bad rows = %s", got)
			}
			ends, err := adm.ListEndOffsets(ctx, "events.dlq")
			if err != nil {
				t.Fatal(err)
			}
			dead := int64(0)
			ends.Each(func(o kadm.ListedOffset) { dead += o.Offset })
			if dead != 2 {
				t.Fatalf("%d records in events.dlq, want 2", dead)
			}
		})
	}

	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run("wrong password/"+mech, func(t *testing.T) {
			kb := testenv.Kafka(t, kfake.EnableSASL(), kfake.Superuser(mech, "etl", password), topics)
			wrong := filepath.Join(t.TempDir(), "wrong")
			if err := os.WriteFile(wrong, []byte("not-"+password), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(t, kb, ch, "sec-wrong")
			cfg.Source.Kafka.Topics = []string{"events"}
			cfg.Source.Kafka.SASL = &config.SASL{Mechanism: mech, Username: "etl", PasswordFile: wrong}
			cfg.Decode.OnError = "dlq"
			cfg.Decode.DLQ = &config.DLQ{Topic: "events.dlq"}
			_, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("New with a wrong SASL password: %v (%T), want a ConfigError", err, err)
			}
			if !strings.Contains(err.Error(), "source.kafka.sasl") || strings.Contains(err.Error(), password) {
				t.Fatalf("New with a wrong SASL password: %v", err)
			}
			t.Log(err)
		})
	}
}
