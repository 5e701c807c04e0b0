package clickhouse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/internal/testenv"
)

// TestTLS runs against a ClickHouse 18.16 serving the native protocol over
// TLS (tcp_port_secure) with a certificate for "localhost" from a test CA,
// and a user with a password: inserts write over TLS, and each
// misconfiguration fails at Connect with an error that says what is wrong.
func TestTLS(t *testing.T) {
	t.Parallel()
	ca := testenv.NewCA(t, "etl test CA")
	cert, key := ca.Issue(t, "clickhouse", "localhost")
	const password = "tls-pass-7Hq"
	srv := testenv.ClickHouseWith(t, testenv.CHOptions{TLSCert: cert, TLSKey: key, Users: map[string]string{"etl": password}})
	srv.Exec(t, "CREATE TABLE default.tls (id UInt64, msg String) ENGINE = MergeTree ORDER BY id")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	_, securePort, _ := net.SplitHostPort(srv.SecureAddr())
	_, plainPort, _ := net.SplitHostPort(srv.TCPAddr())
	byName := net.JoinHostPort("localhost", securePort)

	opts := func(addr string, tc *tls.Config) Options {
		return Options{Addr: []string{addr}, Database: "default", Table: "tls", User: "etl", Password: password,
			DialTimeout: 3 * time.Second, TLS: tc}
	}
	for i := range 2 {
		t.Run(fmt.Sprint("insert/", i), func(t *testing.T) {
			o := opts(byName, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Connect(ctx, o, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tg, err := c.Plan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Insert(ctx, tg, []*chunk.Chunk{idChunk(t, tg, i*1000, 1000)}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if got := srv.Query(t, "SELECT count(), uniqExact(id) FROM default.tls"); got != "2000\t2000" {
		t.Fatalf("rows inserted over TLS: %s, want 2000 distinct", got)
	}

	bad := []struct {
		name string
		o    Options
		want string
	}{
		{"unknown authority", opts(byName, &tls.Config{MinVersion: tls.VersionTLS12}),
			"not signed by a CA etl trusts: set sink.clickhouse.tls.ca_file"},
		{"wrong host name", opts(net.JoinHostPort("127.0.0.1", securePort), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
			"does not name the host etl connects to"},
		{"TLS to the plain port", opts(net.JoinHostPort("localhost", plainPort), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
			"does not speak TLS: is it the plain native port"},
		{"no TLS to the secure port", opts(byName, nil),
			"answers TLS: it is a secure port, tcp_port_secure; set sink.clickhouse.tls.enabled: true"},
		{"wrong password", func() Options {
			o := opts(byName, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
			o.Password = "not-" + password
			return o
		}(), "Wrong password for user etl"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			c, err := Connect(ctx, b.o, testLog(t))
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
			if !strings.Contains(err.Error(), b.want) {
				t.Fatalf("error %q does not say %q", err, b.want)
			}
			if strings.Contains(fmt.Sprint(err), password) && b.name != "wrong password" {
				t.Fatalf("error %q shows the password", err)
			}
		})
	}
}
