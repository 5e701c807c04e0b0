package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/sink/clickhouse"
	"github.com/etl-project/etl/transform"
)

// cdcLayout is the staged layout of decode.envelope: debezium: the
// chain's input is the rows the envelope makes (the row's fields typed by
// decode.fields or the columns they feed, and the envelope's fields), and
// the decoder stages the event's fields the envelope reads. With Avro,
// the staged fields are those of the registry's Envelope record (op,
// before.F, after.F, source.*, transaction.id, ts_ms): a null before or
// after leaves its fields absent, as JSON's null object does.
func cdcLayout(cfg *config.Config, outs []transform.Output, targets []*clickhouse.Target, known map[string]string) (*stagedShared, error) {
	declared := make(map[string]string, len(cfg.Decode.Fields)+len(transform.EnvelopeFields))
	maps.Copy(declared, cfg.Decode.Fields)
	maps.Copy(declared, transform.EnvelopeFields)
	rows, err := transform.InputsKnown(cfg.Transform, outs, declared, known)
	if err != nil {
		return nil, err
	}
	d, keyTypes := cfg.DebeziumSettings(), cfg.Decode.Fields
	if cfg.Decode.Format == config.FormatAvro {
		// The Envelope record itself: no wrapper. The writer schema's row
		// record types the key fields no column reads (known holds the
		// fields of its Value record, fields.RowSource).
		d.Wrapper = config.WrapperNone
		keyTypes = make(map[string]string, len(known)+len(cfg.Decode.Fields))
		maps.Copy(keyTypes, known)
		maps.Copy(keyTypes, cfg.Decode.Fields)
		for _, k := range d.Key {
			if _, ok := keyTypes[k]; !ok && !slices.Contains(rows.Names, k) {
				return nil, fmt.Errorf("decode.debezium.key: %q is not a field of the row record (after's Value) of the registry's latest schemas (%s), nor a column: name the source table's key fields", k, strings.Join(fields.Subjects(cfg), ", "))
			}
		}
	}
	env, err := transform.NewDebezium(d, rows, keyTypes)
	if err != nil {
		return nil, err
	}
	return &stagedShared{stage: env.Stage(), rows: rows, env: env, outs: outs, targets: targets}, nil
}

// cdcWarnEvery is how often a skipped change event of one reason is
// logged; every one is counted.
const cdcWarnEvery = time.Minute

// cdcSkipped counts a change event the envelope skipped, and logs it at
// most once a cdcWarnEvery per reason.
func (p *Pipeline) cdcSkipped(reason string, r *kgo.Record) {
	if c, ok := p.m.cdcSkipped[reason]; ok {
		c.Inc()
	}
	now := time.Now()
	if last, ok := p.m.cdcWarned.Load(reason); ok && now.Sub(last.(time.Time)) < cdcWarnEvery {
		return
	}
	p.m.cdcWarned.Store(reason, now)
	p.log.Warn("a change event was skipped: the envelope applies only c, r, u and d (counted in etl_cdc_skipped_total)",
		"reason", reason, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset)
}
