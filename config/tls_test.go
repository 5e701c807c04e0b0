package config

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSConfig: a ca_file makes a client trust a server signed by it;
// without it the same server is refused; a missing file is an error naming
// the key.
func TestTLSConfig(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(tc *TLS) error {
		cfg, err := tc.Config("decode.avro.registry.tls")
		if err != nil {
			return err
		}
		c := http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(&TLS{Enabled: true, CAFile: ca}); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	if err := get(&TLS{Enabled: true}); err == nil {
		t.Fatal("a server from an unknown CA was trusted")
	}
	if err := get(&TLS{Enabled: true, CAFile: ca + ".missing"}); err == nil || !strings.Contains(err.Error(), "decode.avro.registry.tls.ca_file") {
		t.Fatalf("missing ca_file: %v", err)
	}
}
