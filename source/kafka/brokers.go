package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
)

// brokerWatch makes an unreachable cluster loud. Every failed dial, TLS
// handshake or request is counted (etl_source_connection_errors_total),
// logged with a likely cause (at most every brokerLogEvery, and only once
// no broker has answered for that long: a connection a broker closed and
// the client reopens is not worth a warning), and kept as the last error;
// every response read marks the brokers as answering. Health
// reads LastAnswer and LastError.
type brokerWatch struct {
	log    *slog.Logger
	tls    bool
	sasl   bool
	errs   *prometheus.CounterVec
	since  atomic.Int64 // unix nanoseconds: the last response, or the watch's start
	logged atomic.Int64 // unix nanoseconds of the last log line

	mu      sync.Mutex
	lastErr string
}

const brokerLogEvery = 10 * time.Second

func newBrokerWatch(log *slog.Logger, c *config.Kafka, errs *prometheus.CounterVec) *brokerWatch {
	w := &brokerWatch{log: log, tls: c.TLS != nil && c.TLS.Enabled, sasl: c.SASL != nil, errs: errs}
	w.since.Store(time.Now().UnixNano())
	return w
}

var (
	_ kgo.HookBrokerConnect = (*brokerWatch)(nil)
	_ kgo.HookBrokerE2E     = (*brokerWatch)(nil)
)

// OnBrokerConnect implements kgo.HookBrokerConnect: a dial (with its TLS
// handshake) that failed.
func (w *brokerWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		w.failed(meta, "connect", err)
	}
}

// OnBrokerE2E implements kgo.HookBrokerE2E: a request written and its
// response read, or the error that ended it.
func (w *brokerWatch) OnBrokerE2E(meta kgo.BrokerMetadata, _ int16, e2e kgo.BrokerE2E) {
	if err := e2e.Err(); err != nil {
		w.failed(meta, "request", err)
		return
	}
	w.since.Store(time.Now().UnixNano())
}

func (w *brokerWatch) failed(meta kgo.BrokerMetadata, what string, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, net.ErrClosed) {
		return // the client is closing
	}
	addr := net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port))
	w.errs.WithLabelValues(addr).Inc()
	msg := err.Error()
	if hint := brokerHint(err, w.tls, w.sasl); hint != "" {
		msg += " (" + hint + ")"
	}
	w.mu.Lock()
	w.lastErr = addr + ": " + msg
	w.mu.Unlock()
	now := time.Now().UnixNano()
	if now-w.since.Load() < int64(brokerLogEvery) {
		// A broker answered within the last seconds: a connection the
		// broker closed (idle, restarted) that the client reopens.
		w.log.Debug("a Kafka broker connection failed", "broker", addr, "during", what, "err", msg)
		return
	}
	if last := w.logged.Load(); now-last >= int64(brokerLogEvery) && w.logged.CompareAndSwap(last, now) {
		w.log.Warn("cannot reach a Kafka broker", "broker", addr, "during", what, "err", msg)
	}
}

// LastAnswer is when a broker last answered a request (the watch's start
// before the first answer).
func (w *brokerWatch) LastAnswer() time.Time { return time.Unix(0, w.since.Load()) }

// LastError is the last connection error, with its broker and hint.
func (w *brokerWatch) LastError() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// brokerHint names the likely cause of a connection error.
func brokerHint(err error, tls, sasl bool) string {
	msg := err.Error()
	var ne net.Error
	var first *kgo.ErrFirstReadEOF
	switch {
	case errors.As(err, &first):
		return "" // franz-go's message names the likely cause already
	case strings.Contains(msg, "connection refused"):
		return "nothing listens on that address: is the broker up, and is this its port?"
	case strings.Contains(msg, "no such host"):
		return "the host name does not resolve"
	case strings.Contains(msg, "invalid large response size 1213486160"):
		// "HTTP" read as a response size: an HTTP server answered.
		return "an HTTP server answered: is this ClickHouse's or another HTTP port, not a Kafka listener?"
	case strings.Contains(msg, "tls: first record does not look like a TLS handshake"):
		return "source.kafka.tls is enabled, but the listener is plaintext"
	case tls && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) && ne.Timeout()):
		return "TLS handshake to a plaintext listener? The broker closed the connection or did not answer the handshake"
	case sasl && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		return "the broker closed the connection during SASL: is SASL enabled on this listener, with this mechanism (source.kafka.sasl.mechanism)?"
	case strings.Contains(msg, "UNSUPPORTED_SASL_MECHANISM") || strings.Contains(msg, "unsupported sasl mechanism"):
		return "the SASL mechanism is not enabled on the broker"
	case strings.Contains(msg, "SASL_AUTHENTICATION_FAILED"):
		return "wrong SASL user name or password"
	}
	return ""
}

// WatchConnections returns a client option that keeps the last connection
// error of a client of c's cluster, with its likely cause, and a function
// returning it ("" while there is none): for one-shot clients such as
// `etl validate -connect`, whose own errors end in a timeout.
func WatchConnections(c *config.Kafka) (kgo.Opt, func() string) {
	w := newBrokerWatch(slog.New(slog.NewTextHandler(io.Discard, nil)), c,
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "unregistered"}, []string{"broker"}))
	return kgo.WithHooks(w), w.LastError
}
