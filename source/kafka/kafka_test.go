package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/internal/testenv"
)

// listTopics connects with the options built from c and lists topics.
func listTopics(t *testing.T, c *config.Kafka) error {
	t.Helper()
	cl := testClient(t, c)
	defer cl.Close()
	return listWith(cl)
}

// testClient is a client with the options built from c, which does not
// retry a failed request.
func testClient(t *testing.T, c *config.Kafka) *kgo.Client {
	t.Helper()
	opts, err := ClientOpts(c)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(2*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// listWith lists topics with cl.
func listWith(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := kadm.NewClient(cl).ListTopics(ctx)
	return err
}

// TestSASL connects to a broker that requires SASL with each mechanism,
// and fails with a wrong password.
func TestSASL(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			kb := testenv.Kafka(t, kfake.EnableSASL(), kfake.Superuser(mech, "etl", "s3cret"))
			good := &config.Kafka{Brokers: kb.Addrs(), SASL: &config.SASL{Mechanism: mech, Username: "etl", Password: "s3cret"}}
			if err := listTopics(t, good); err != nil {
				t.Fatalf("with the right password: %v", err)
			}
			bad := &config.Kafka{Brokers: kb.Addrs(), SASL: &config.SASL{Mechanism: mech, Username: "etl", Password: "wrong"}}
			if err := listTopics(t, bad); err == nil {
				t.Fatal("a wrong password was accepted")
			}
		})
	}
}

// TestSASLPasswordFile: the SASL password comes from password_file, read
// at each connection: one client fails with the wrong password in the
// file and, once the file holds the right one, its next connection
// succeeds without a restart.
func TestSASLPasswordFile(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			kb := testenv.Kafka(t, kfake.EnableSASL(), kfake.Superuser(mech, "etl", "s3cret"))
			file := filepath.Join(t.TempDir(), "password")
			if err := os.WriteFile(file, []byte("old-password\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			c := &config.Kafka{Brokers: kb.Addrs(), SASL: &config.SASL{Mechanism: mech, Username: "etl", PasswordFile: file}}
			cl := testClient(t, c)
			defer cl.Close()
			if err := listWith(cl); err == nil {
				t.Fatal("the old password in the file was accepted")
			}
			if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := listWith(cl); err != nil {
				t.Fatalf("after the file was rotated: %v", err)
			}
		})
	}
}

// TestTLS connects to a TLS broker with the CA from tls.ca_file, and fails
// without it.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	serverCert, caPEM := selfSigned(t)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	kb := testenv.Kafka(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}))
	ok := &config.Kafka{Brokers: kb.Addrs(), TLS: &config.TLS{Enabled: true, CAFile: caFile}}
	if err := listTopics(t, ok); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	untrusted := &config.Kafka{Brokers: kb.Addrs(), TLS: &config.TLS{Enabled: true}}
	if err := listTopics(t, untrusted); err == nil {
		t.Fatal("a server certificate from an unknown CA was accepted")
	}
	if _, err := ClientOpts(&config.Kafka{Brokers: kb.Addrs(), TLS: &config.TLS{Enabled: true, CAFile: filepath.Join(dir, "missing.pem")}}); err == nil {
		t.Fatal("a missing ca_file was accepted")
	}
}

// selfSigned returns a certificate for 127.0.0.1 and its PEM, which serves
// as its own CA.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "etl test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
