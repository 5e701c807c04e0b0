package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestDevbrokerTLSSASL runs the binary against devbroker serving TLS (a
// certificate from a test CA) and requiring SCRAM-SHA-512: etl consumes,
// writes every good record, dead-letters the bad one, commits to the end
// and stops cleanly, with source.kafka.tls.ca_file and a password_file.
func TestDevbrokerTLSSASL(t *testing.T) {
	ca := testenv.NewCA(t, "devbroker CA")
	certFile, keyFile := ca.IssueFiles(t, "broker", "127.0.0.1")
	caFile := ca.CertFile(t)
	const password = "devbroker-SCRAM-pass-2c"
	port := testenv.FreePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	broker := exec.Command(testenv.Build(t, "./cmd/devbroker"), "-listen", addr, "-topics", "events,events.dlq", "-partitions", "3",
		"-tls-cert", certFile, "-tls-key", keyFile, "-sasl", "SCRAM-SHA-512:etl:"+password)
	blog, err := os.Create(filepath.Join(t.TempDir(), "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	broker.Stdout, broker.Stderr = blog, blog
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Process.Signal(syscall.SIGTERM); _ = broker.Wait() })

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: "etl", Pass: password}.AsSha512Mechanism()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(10000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 3000
	var recs []*kgo.Record
	for i := uint64(0); i < n; i++ {
		v := gen.Make(seed, i).AppendJSON(nil)
		if i == 42 {
			v = []byte(`{"id": 42, "ts": `)
		}
		recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 3), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The broker is starting: produce until it takes the records.
	testenv.Eventually(t, "produce over TLS and SCRAM", time.Minute, func() error {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b, _ := os.ReadFile(blog.Name())
			return fmt.Errorf("%w\n%s", err, b)
		}
		return nil
	})

	ch := testenv.ClickHouse(t)
	ch.Exec(t, gen.TableDDL("default", "events"))
	pwFile := filepath.Join(t.TempDir(), "kafka-password")
	if err := os.WriteFile(pwFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf(`pipeline: {name: devbroker-sec}
source:
  kafka:
    brokers: [%q]
    topics: [events]
    group_id: devbroker-sec
    tls: {enabled: true, ca_file: %s}
    sasl: {mechanism: SCRAM-SHA-512, username: etl, password_file: %s}
decode: {on_error: dlq, dlq: {topic: events.dlq}}
sink:
  clickhouse:
    addr: [%q]
    table: events
    batch: {max_rows: 1000, linger: 200ms}
checkpoint: {commit_interval: 200ms}
metrics: {listen: "off"}
`, addr, caFile, pwFile, ch.TCPAddr()))
	p := startETL(t, cfg)
	testenv.Eventually(t, "every good row", time.Minute, func() error {
		got := ch.Count(t, "default.events")
		if got >= n-1 {
			return nil
		}
		if !p.running() {
			t.Fatalf("etl exited with %d rows; log:\n%s", got, tail([]byte(p.logText())))
		}
		return fmt.Errorf("%d rows; log:\n%s", got, tail([]byte(p.logText())))
	})
	adm := kadm.NewClient(cl)
	testenv.Eventually(t, "commits to the end", time.Minute, func() error {
		o, err := adm.FetchOffsets(ctx, "devbroker-sec")
		sum := int64(0)
		if err == nil {
			o.Each(func(r kadm.OffsetResponse) { sum += r.At })
		}
		if sum != n {
			return fmt.Errorf("committed %d of %d: %v", sum, n, err)
		}
		return nil
	})
	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("etl exited with %d", code)
	}
	ends, err := adm.ListEndOffsets(ctx, "events.dlq")
	if err != nil {
		t.Fatal(err)
	}
	dead := int64(0)
	ends.Each(func(o kadm.ListedOffset) { dead += o.Offset })
	if dead != 1 {
		t.Fatalf("%d records in events.dlq, want 1", dead)
	}
	if got := ch.Query(t, "SELECT count(), countIf(id = 42) FROM default.events"); got != fmt.Sprintf("%d\t0", n-1) {
		t.Fatalf("count, bad row = %s", got)
	}
}
