package clickhouse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// withPortHint adds a hint to err, a native-protocol connection that
// failed without a server exception, when one of addrs answers HTTP as
// ClickHouse's HTTP interface does (GET /ping gives "Ok."): the native
// port was confused with the HTTP one (9000 and 8123 by default). The
// probe takes at most a second per address.
func withPortHint(addrs []string, err error) error {
	for _, a := range addrs {
		if answersHTTP(a) {
			return fmt.Errorf("%w (%s answers HTTP like ClickHouse's HTTP interface: sink.clickhouse.addr takes the native protocol port, 9000 by default, not the HTTP port)", err, a)
		}
	}
	return err
}

// withTLSHint names what a TLS failure means for err, a native-protocol
// connection that failed without a server exception: a certificate no
// trusted CA signed, a certificate for another host name, a plain port
// answering a TLS handshake, or a TLS port reached without TLS.
func withTLSHint(addrs []string, useTLS bool, err error) error {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var record tls.RecordHeaderError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("%w (TLS: the server's certificate is not signed by a CA etl trusts: set sink.clickhouse.tls.ca_file to the CA that signed it)", err)
	case errors.As(err, &host):
		return fmt.Errorf("%w (TLS: the server's certificate does not name the host etl connects to: connect by a name it lists, or set sink.clickhouse.tls.server_name to one)", err)
	case errors.As(err, &invalid):
		return fmt.Errorf("%w (TLS: the server's certificate is not valid: %s)", err, invalid.Detail)
	case errors.As(err, &record):
		return fmt.Errorf("%w (TLS: %v does not speak TLS: is it the plain native port, tcp_port (9000), instead of tcp_port_secure (9440)?)", err, addrs)
	case !useTLS && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "unexpected EOF")) && speaksTLS(addrs):
		return fmt.Errorf("%w (%v answers TLS: it is a secure port, tcp_port_secure; set sink.clickhouse.tls.enabled: true)", err, addrs)
	}
	return err
}

// speaksTLS reports whether one of addrs completes a TLS handshake (any
// certificate), within a second each.
func speaksTLS(addrs []string) bool {
	for _, a := range addrs {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a probe for a hint, no data
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := d.DialContext(ctx, "tcp", a)
		cancel()
		if err == nil {
			_ = c.Close()
			return true
		}
	}
	return false
}

// AnswersHTTP reports whether addr answers HTTP as ClickHouse's HTTP
// interface does (GET /ping gives "Ok."), within a second: the native
// protocol port was confused with the HTTP one.
func AnswersHTTP(addr string) bool { return answersHTTP(addr) }

func answersHTTP(addr string) bool {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return false
	}
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/ping")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	return strings.HasPrefix(string(b), "Ok.")
}
