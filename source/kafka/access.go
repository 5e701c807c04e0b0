package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/etl-project/etl/config"
)

// ErrAccess marks an answer of the brokers that starting again cannot
// change: they refuse the client's credentials, or its principal may not
// read a topic or join the group.
var ErrAccess = errors.New("kafka access refused")

type accessError struct{ err error }

func (e *accessError) Error() string        { return e.err.Error() }
func (e *accessError) Unwrap() error        { return e.err }
func (e *accessError) Is(target error) bool { return target == ErrAccess }

// CheckAccess asks the brokers, with a client configured as the source's,
// whether etl may consume: the credentials are accepted, and the
// principal may DESCRIBE and READ every topic and READ the group (the
// authorized operations of KIP-430, Kafka 2.3 and later; brokers that do
// not say are given the benefit of the doubt). It returns an error that
// is ErrAccess, naming the resource and the operation, when they say no;
// the request's own error, not ErrAccess, when they could not be asked (the
// source's own connection handling deals with brokers that are down); and
// nil otherwise. Under source.kafka.topics_regex the topics are those it
// matches today, never the excluded ones (the dead-letter topic).
func CheckAccess(ctx context.Context, c *config.Kafka, exclude ...string) error {
	sub, err := NewSubscription(c, exclude...)
	if err != nil {
		return err
	}
	opts, err := clientOpts(c)
	if err != nil {
		return err
	}
	saslHook := &saslDropHook{}
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(1), kgo.WithHooks(saslHook))...)
	if err != nil {
		return err
	}
	defer cl.Close()

	req := kmsg.NewPtrMetadataRequest() // no topic: every topic, under a pattern
	for _, topic := range sub.Listed() {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	req.IncludeTopicAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return credentialsError(c, err, saslHook.dropped.Load())
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || !sub.Consumes(*t.Topic) {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			return &accessError{fmt.Errorf("%s: topic %s: the brokers do not let this client's principal DESCRIBE or READ it (%v): grant it READ and DESCRIBE on the topic", sub.Key(), *t.Topic, err)}
		case err != nil:
			continue // missing, or not ready: the source reports it
		}
		if !allowed(t.AuthorizedOperations, resp.Version, 8, kmsg.ACLOperationRead) {
			return &accessError{fmt.Errorf("%s: topic %s: its ACLs give this client's principal no READ: grant it READ on the topic", sub.Key(), *t.Topic)}
		}
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{c.GroupID}
	dg.IncludeAuthorizedOperations = true
	dresp, err := dg.RequestWith(ctx, cl)
	if errors.Is(err, kerr.GroupAuthorizationFailed) {
		// Finding the group's coordinator was refused already.
		return &accessError{fmt.Errorf("source.kafka.group_id: group %s: the brokers do not let this client's principal READ it (%v): grant it READ on the group", c.GroupID, err)}
	}
	if err != nil {
		return credentialsError(c, err, saslHook.dropped.Load())
	}
	for _, g := range dresp.Groups {
		if g.Group != c.GroupID {
			continue
		}
		switch err := kerr.ErrorForCode(g.ErrorCode); {
		case errors.Is(err, kerr.GroupAuthorizationFailed):
			return &accessError{fmt.Errorf("source.kafka.group_id: group %s: the brokers do not let this client's principal READ it (%v): grant it READ on the group", g.Group, err)}
		case err != nil && !errors.Is(err, kerr.GroupIDNotFound): // a new group still has its ACLs
			continue
		}
		if !allowed(g.AuthorizedOperations, dresp.Version, 3, kmsg.ACLOperationRead) {
			return &accessError{fmt.Errorf("source.kafka.group_id: group %s: its ACLs give this client's principal no READ: grant it READ on the group", g.Group)}
		}
	}
	return nil
}

// saslDropHook notes a SASLAuthenticate request whose answer could not be
// read: the broker closed the connection on reading the credentials.
type saslDropHook struct{ dropped atomic.Bool }

func (h *saslDropHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == int16(kmsg.SASLAuthenticate) && e2e.ReadErr != nil {
		h.dropped.Store(true)
	}
}

// allowed reports whether ops, the authorized operations a response of
// version v carries (from version since on), allow op: yes too when the
// broker did not say.
func allowed(ops int32, v, since int16, op kmsg.ACLOperation) bool {
	if ops == math.MinInt32 || v < since {
		return true
	}
	return ops&(1<<int32(op)) != 0 || ops&(1<<int32(kmsg.ACLOperationAll)) != 0
}

// credentialsError returns err, a request that failed, as an ErrAccess
// naming the SASL keys when the brokers refused the credentials: they
// answered so, or closed the connection on reading them (dropped), as
// Kafka before 1.0, and some Kafka-protocol brokers, do.
func credentialsError(c *config.Kafka, err error, dropped bool) error {
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		dropped && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)) {
		user := ""
		if c.SASL != nil {
			user = c.SASL.Username
		}
		return &accessError{fmt.Errorf("source.kafka.sasl: the brokers refused the SASL authentication of user %q: %w: check username, password (or password_file) and mechanism, and that the listener takes SASL", user, err)}
	}
	return err
}
