package pipeline

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/fields"
)

// ErrUnavailable is what New's error wraps when no replica of a sink's
// ClickHouse could be reached or answered in time (connection refused, a
// name that does not resolve, a handshake or query that timed out): the
// configuration may well be right, and the same New can succeed once the
// server is back. Every other error of New is about what a server answered
// (no such table, a column type that cannot be encoded, a table
// exactly_once refuses) or about the configuration, and trying again
// would give the same answer. Test it with Unavailable.
var ErrUnavailable = errors.New("clickhouse unavailable")

// Unavailable reports whether err (from New) says that ClickHouse could
// not be reached or did not answer in time, so New is worth calling again
// later; see ErrUnavailable.
func Unavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// unavailableError marks err as ErrUnavailable without changing its text.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string        { return e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// unavailable marks err, a failure to reach any replica, as ErrUnavailable.
func unavailable(err error) error { return &unavailableError{err} }

// StartTimeout bounds one call of New for cfg, for a caller that retries
// New while ClickHouse is down. The driver bounds a connection's handshake
// with sink.clickhouse.dial_timeout, but a server that accepted the
// handshake and then stopped answering (frozen, or a query stuck behind a
// lock) holds a query until the context's deadline. New asks each replica
// at most a few questions, each of which can take a dial: two dial timeouts
// per replica, at least 15 s, plus the 10 s the schema prewarm may
// take, leave a healthy but slow start room to finish.
func StartTimeout(cfg *config.Config) time.Duration {
	var d time.Duration
	for _, ns := range cfg.SinkList() {
		for _, sh := range ns.ClickHouse.ShardList() {
			d += 2 * ns.ClickHouse.DialTimeout.D() * time.Duration(len(sh.Replicas))
		}
	}
	d = max(d, 15*time.Second)
	if cfg.Decode.Format == config.FormatAvro && len(cfg.Decode.Avro.PrewarmSubjects) > 0 ||
		cfg.Decode.Format == config.FormatProtobuf && len(cfg.Decode.Protobuf.PrewarmSubjects) > 0 {
		d += fields.PrewarmTimeout
	}
	return d
}

// RegisterStarting registers on reg the etl_pipeline_state gauge exactly
// as New does for a pipeline named name, with state "starting" at 1: what
// a caller serves on /metrics while New has not succeeded yet. reg must not
// be the registerer New is given (New registers its own gauge).
func RegisterStarting(reg prometheus.Registerer, name string) error {
	m := newComponentMetrics(func(string) prometheus.Registerer { return nil })
	return components(reg, name)("pipeline").Register(m.state)
}
