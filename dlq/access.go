package dlq

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrWriteDenied is the brokers saying, when New asked, that this client's
// principal may not write to the dead-letter topic.
var ErrWriteDenied = errors.New("the brokers do not let this client write to it")

// checkWrite asks the brokers whether this client may write to topic: a
// metadata request with the topic's authorized operations (Kafka 2.3 and
// later, KIP-430). It returns ErrWriteDenied (wrapped, naming why) when
// they say no, nil when they say yes or do not say (an older broker, a
// topic that does not exist yet), and the request's own error when it
// failed.
func checkWrite(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.IncludeTopicAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("metadata of topic %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			// Kafka answers so when the principal may not even describe
			// the topic, which WRITE would allow.
			return fmt.Errorf("topic %s: %w (%v)", topic, ErrWriteDenied, err)
		case err != nil:
			return nil // missing, or not ready: not the question here
		}
		ops := t.AuthorizedOperations
		if ops == math.MinInt32 || ops == 0 && resp.Version < 8 {
			return nil // the broker did not say
		}
		if ops&(1<<int32(kmsg.ACLOperationWrite)) == 0 && ops&(1<<int32(kmsg.ACLOperationAll)) == 0 {
			return fmt.Errorf("topic %s: %w (its ACLs give this client's principal no WRITE)", topic, ErrWriteDenied)
		}
		return nil
	}
	return nil
}
