package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Config builds the TLS client configuration; path is the key path of the
// section, for error messages (e.g. "source.kafka.tls").
func (t *TLS) Config(path string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // the user's explicit choice
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.ca_file: %w", path, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.ca_file: no certificate found in %s", path, t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s.cert_file/key_file: %w", path, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
