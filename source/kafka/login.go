package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
)

// LoginWatch notes a SASL login the brokers refused, for one-shot clients
// (etl validate -connect, tail, offsets): a broker that closes the
// connection on reading the credentials (as Kafka before 1.0 and kfake
// do) looks to the client like a network error, retried until the
// request's deadline. With the watch, the request's context ends at the
// first refused login, and Err names the refusal first.
type LoginWatch struct {
	c       *config.Kafka
	once    sync.Once
	refused chan struct{}
	mu      sync.Mutex
	err     error // what ended the SASLAuthenticate request
}

// NewLoginWatch returns a watch for clients of c's cluster; add Opt to
// their options.
func NewLoginWatch(c *config.Kafka) *LoginWatch {
	return &LoginWatch{c: c, refused: make(chan struct{})}
}

// Opt is the client option that installs the watch.
func (w *LoginWatch) Opt() kgo.Opt { return kgo.WithHooks(w) }

var _ kgo.HookBrokerE2E = (*LoginWatch)(nil)

// OnBrokerE2E implements kgo.HookBrokerE2E: a SASLAuthenticate request
// whose answer could not be read is a login the broker refused by closing
// the connection.
func (w *LoginWatch) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != int16(kmsg.SASLAuthenticate) || e2e.ReadErr == nil || errors.Is(e2e.ReadErr, context.Canceled) {
		return
	}
	w.mu.Lock()
	if w.err == nil {
		w.err = e2e.ReadErr
	}
	w.mu.Unlock()
	w.once.Do(func() { close(w.refused) })
}

// Refused is closed when a broker refused the login.
func (w *LoginWatch) Refused() <-chan struct{} { return w.refused }

// Bind returns ctx ended also by a refused login.
func (w *LoginWatch) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-w.refused:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Err returns err, the error of a request of a watched client, as the
// refused-login error (ErrAccess, naming the SASL keys) when the brokers
// refused the login: they answered so, or closed the connection on
// reading the credentials. Otherwise err as it is.
func (w *LoginWatch) Err(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) || errors.Is(err, kerr.UnsupportedSaslMechanism) {
		return credentialsError(w.c, err, false)
	}
	select {
	case <-w.refused:
		w.mu.Lock()
		read := w.err
		w.mu.Unlock()
		user := ""
		if w.c.SASL != nil {
			user = w.c.SASL.Username
		}
		return &accessError{fmt.Errorf("source.kafka.sasl: the brokers refused the SASL authentication of user %q (the broker closed the connection on reading the credentials: %v): check username, password (or password_file) and mechanism, and that the listener takes SASL", user, read)}
	default:
	}
	return err
}
