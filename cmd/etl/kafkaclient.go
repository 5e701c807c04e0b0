package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/source/kafka"
)

// kafkaClient is a client of the source's cluster for the one-shot
// commands (tail, offsets): its requests end at -timeout, or at once when
// the brokers refuse the SASL login, and its errors name the cause: the
// refused login first, or the last connection error (refused, TLS, wrong
// port) after a timeout.
type kafkaClient struct {
	cl      *kgo.Client
	adm     *kadm.Client
	brokers string
	timeout time.Duration
	login   *kafka.LoginWatch
	lastErr func() string
}

func newKafkaClient(k *config.Kafka, timeout time.Duration, extra ...kgo.Opt) (*kafkaClient, error) {
	opts, err := kafka.ClientOpts(k)
	if err != nil {
		return nil, err
	}
	watch, lastErr := kafka.WatchConnections(k)
	login := kafka.NewLoginWatch(k)
	// A dial or TLS handshake that hangs fails within the budget, so its
	// error is reported rather than a bare timeout.
	opts = append(opts, watch, login.Opt(), kgo.DialTimeout(max(timeout/2, 100*time.Millisecond)))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &kafkaClient{cl: cl, adm: kadm.NewClient(cl), brokers: strings.Join(k.Brokers, ","), timeout: timeout, login: login, lastErr: lastErr}, nil
}

// context returns parent bounded by the timeout and ended by a refused
// login.
func (c *kafkaClient) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	lctx, lcancel := c.login.Bind(ctx)
	return lctx, func() { lcancel(); cancel() }
}

// explain returns err, of a request made under c.context, with its cause.
func (c *kafkaClient) explain(err error) error {
	if err == nil {
		return nil
	}
	if lerr := c.login.Err(err); lerr != err {
		return lerr
	}
	last := c.lastErr()
	if errors.Is(err, context.DeadlineExceeded) {
		msg := fmt.Sprintf("source.kafka.brokers %s: no answer within %v (-timeout)", c.brokers, c.timeout)
		if last != "" {
			msg += "; last connection error: " + last
		}
		return fmt.Errorf("%s: %w", msg, err)
	}
	if last != "" {
		// A broker that cannot be reached: its connection error, with
		// the likely cause, says more than the request's.
		return fmt.Errorf("source.kafka.brokers %s: cannot connect: %s", c.brokers, last)
	}
	return err
}

// code is the exit code for err, an explained error: 2 for credentials
// or permissions the brokers refuse (the configuration must change), 1
// otherwise.
func (c *kafkaClient) code(err error) int {
	if errors.Is(err, kafka.ErrAccess) {
		return exitUsage
	}
	return exitFailed
}

func (c *kafkaClient) close() { c.cl.Close() }

// sourceTopics are the topics the pipeline of cfg consumes now: those of
// source.kafka.topics, or those source.kafka.topics_regex matches today
// (none is an error: the commands would otherwise act on every topic).
func (c *kafkaClient) sourceTopics(ctx context.Context, cfg *config.Config) ([]string, error) {
	sub, err := kafka.SubscriptionOf(cfg)
	if err != nil {
		return nil, err
	}
	topics, err := sub.Topics(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	if len(topics) == 0 {
		return nil, fmt.Errorf("source.kafka.topics_regex: no topic matches %s today", sub)
	}
	return topics, nil
}
