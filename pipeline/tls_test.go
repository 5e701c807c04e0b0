package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/gen"
	"github.com/etl-project/etl/internal/testenv"
)

// TestClickHouseTLSAndPassword: a pipeline writes into a ClickHouse that
// takes native connections only on its TLS port, as a user with a
// password, with sink.clickhouse.tls.ca_file and password_file: every row
// lands (the configuration names insert_path: chgo, which still loads). A
// wrong password, and a CA that did not
// sign the server's certificate, stop New at once with a ConfigError
// (exit 2) naming the problem, without retrying.
func TestClickHouseTLSAndPassword(t *testing.T) {
	ca := testenv.NewCA(t, "etl test CA")
	cert, key := ca.Issue(t, "clickhouse", "localhost", "127.0.0.1")
	const password = "ch-tls-pass-51x"
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{TLSCert: cert, TLSKey: key, SecureOnly: true, Users: map[string]string{"etl": password}})
	kb := testenv.Kafka(t)
	kb.CreateTopic(t, "events", 3)
	const n = 20000
	produce(t, kb, 0, n, nil)
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "ch-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caFile := ca.CertFile(t)
	otherCA := testenv.NewCA(t, "another CA").CertFile(t)

	cfgFor := func(t *testing.T, table, path, pwFile, caFile string) *config.Config {
		y := fmt.Sprintf(`pipeline: {name: tls, workers: 2}
source:
  kafka: {brokers: [%q], topics: [events], group_id: tls-%s, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: %s
    user: etl
    password_file: %s
    tls: {enabled: true, ca_file: %s}
    insert_path: %s
    batch: {max_rows: 5000, max_bytes: 4MiB, linger: 100ms}
    retry: {initial_backoff: 50ms, max_backoff: 500ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), table, ch.SecureAddr(), table, pwFile, caFile, path)
		cfg, err := config.Parse([]byte(y), "tls.yaml", func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	for _, path := range []string{"chgo"} {
		t.Run("rows/"+path, func(t *testing.T) {
			table := "tls_" + path
			ch.Exec(t, gen.TableDDL("default", table))
			cfg := cfgFor(t, table, path, pwFile, caFile)
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
			testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default."+table) >= n })
			testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
				c := kb.CommittedOffsets(t, "tls-"+table, "events")
				return c[0]+c[1]+c[2] == n
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default."+table); got != fmt.Sprintf("%d\t%d\t0\t%d", n, n, n-1) {
				t.Fatalf("count, distinct, min, max = %s", got)
			}
		})
	}

	wrongPw := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrongPw, []byte("not-the-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, pwFile, caFile, want string
	}{
		{"wrong password", wrongPw, caFile, `the server refuses user "etl"`},
		{"untrusted CA", pwFile, otherCA, "not signed by a CA etl trusts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch.Exec(t, gen.TableDDL("default", "tls_bad"))
			cfg := cfgFor(t, "tls_bad", "chgo", c.pwFile, c.caFile)
			start := time.Now()
			_, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: prometheus.NewRegistry()})
			var cerr *ConfigError
			if !errors.As(err, &cerr) {
				t.Fatalf("New: %v (%T), want a ConfigError", err, err)
			}
			if Unavailable(err) {
				t.Fatalf("New: %v is marked unavailable: startup would retry it", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want it to say %q", err, c.want)
			}
			if strings.Contains(err.Error(), password) {
				t.Fatalf("New: %v shows the password", err)
			}
			t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// TestClickHousePasswordRotation: the sink's password_file is read again
// for every new connection. The server's password changes first and every
// connection drops (the server is killed and started again): inserts are refused and retried, not
// given up, until the mounted file holds the new
// password; then every row lands, and the pipeline stops cleanly. The
// password rotates twice, each time in a pipeline of its own.
func TestClickHousePasswordRotation(t *testing.T) {
	passwords := []string{"rot-pass-a1", "rot-pass-b2", "rot-pass-c3"}
	ch := testenv.ClickHouseWith(t, testenv.CHOptions{Users: map[string]string{"etl": passwords[0]}})
	kb := testenv.Kafka(t)
	pwFile := filepath.Join(t.TempDir(), "ch-password")
	setFile := func(pw string) {
		t.Helper()
		// As a Kubernetes Secret volume updates: a new file renamed over
		// the old one.
		tmp := pwFile + ".new"
		if err := os.WriteFile(tmp, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, pwFile); err != nil {
			t.Fatal(err)
		}
	}
	setFile(passwords[0])
	const n = 6000
	for i, path := range []string{"first", "second"} {
		t.Run(path, func(t *testing.T) {
			newPw := passwords[i+1] // the file holds passwords[i]
			topic, table := "rot-"+path, "rot_"+path
			kb.CreateTopic(t, topic, 3)
			ch.Exec(t, gen.TableDDL("default", table))
			produceTo(t, kb, topic, 0, n/2, nil)
			y := fmt.Sprintf(`pipeline: {name: rot, workers: 2}
source:
  kafka: {brokers: [%q], topics: [%s], group_id: rot-%s, session_timeout: 6s}
sink:
  clickhouse:
    addr: [%q]
    table: %s
    user: etl
    password_file: %s
    batch: {max_rows: 1000, max_bytes: 4MiB, linger: 50ms}
    retry: {initial_backoff: 50ms, max_backoff: 300ms}
checkpoint: {commit_interval: 200ms, drain_timeout: 20s}
metrics: {listen: "off"}
`, kb.Addr(), topic, path, ch.TCPAddr(), table, pwFile)
			cfg, err := config.Parse([]byte(y), "rot.yaml", func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			p, err := New(context.Background(), Options{Config: cfg, Log: testenv.Logger(t), Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			testenv.WaitFor(t, "the first half", time.Minute, func() bool { return ch.Count(t, "default."+table) >= n/2 })

			// The server's password changes and its connections drop;
			// the mounted file still holds the old password.
			ch.SetUsers(t, map[string]string{"etl": newPw})
			ch.Kill9(t)
			ch.Start(t)
			produceTo(t, kb, topic, n/2, n/2, nil)
			testenv.WaitFor(t, "refused inserts retried", time.Minute, func() bool {
				return counterSum(t, reg, "etl_sink_retries_total") >= 3
			})
			select {
			case err := <-done:
				t.Fatalf("Run returned while the login was refused: %v", err)
			default:
			}
			if got := ch.Count(t, "default."+table); got != n/2 {
				t.Fatalf("%d rows with the old password refused, want %d", got, n/2)
			}

			setFile(newPw)
			testenv.WaitFor(t, "all rows", time.Minute, func() bool { return ch.Count(t, "default."+table) >= n })
			testenv.WaitFor(t, "commits to the end", 30*time.Second, func() bool {
				c := kb.CommittedOffsets(t, "rot-"+path, topic)
				return c[0]+c[1]+c[2] == n
			})
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := ch.Query(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM default."+table); got != fmt.Sprintf("%d\t%d\t0\t%d", n, n, n-1) {
				t.Fatalf("count, distinct, min, max = %s", got)
			}
		})
	}
}
