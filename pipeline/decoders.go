package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/fields"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/sink/clickhouse"
)

// setupAvro loads what the Avro decoders share (fields.LoadSchemas): the
// registry client (confluent framing, with the configured subjects
// fetched at startup) or the writer schema from schema_file.
func (p *Pipeline) setupAvro(ctx context.Context) error {
	s, err := fields.LoadSchemas(ctx, fields.Options{Config: p.cfg, Log: p.log, Registerer: p.component("decode")})
	if err != nil {
		return err
	}
	p.schemas = s
	if s.Registry != nil {
		p.lookup = registrySource{c: s.Registry, p: p}
	}
	return nil
}

// newAvroDecoder returns one worker's Avro decoder for target t.
func (p *Pipeline) newAvroDecoder(t *clickhouse.Target) (decode.Decoder, error) {
	d, err := avro.NewFramed(p.cfg.Decode.Avro.Framing, p.schemas.Writer, p.lookup, t.Schema,
		avro.Options{Fields: t.Fields, MaxRecordBytes: int(p.cfg.Decode.MaxRecordBytes), ReaderSchema: p.schemas.Reader,
			Validate: p.cfg.Decode.ValidateSchema, Ranges: p.serverRanges()})
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return d, nil
}

// serverRanges are the Date and DateTime ranges the decoders (and the
// transforms' conversions) hold values to: the narrowest of every server
// whose version is known (a replica not reached yet is not counted; the
// replicas of one table run one version), or chunk.DefaultRanges when no
// server answered yet; with the servers' time zone (the zone of DateTime
// columns without one of their own).
func (p *Pipeline) serverRanges() chunk.ServerRanges {
	var rs []chunk.ServerRanges
	for _, s := range p.sinks {
		for _, shard := range s.clients {
			for _, c := range shard {
				if v := c.ServerVersion(); v != "" {
					r := chunk.RangesFor(v)
					r.TZ = c.ServerTimezone()
					rs = append(rs, r)
				}
			}
		}
	}
	return chunk.Narrowest(rs...)
}

// registrySource adapts the registry client to the decoder's SchemaSource.
// In a run (p set), the first time a schema id is served the table's
// columns are read again before any record of it is decoded, so a column
// added for a new field (ALTER TABLE ... ADD COLUMN before the producers
// moved on) is filled from the first record that carries it. Without p
// (Parts: the tables are read once, at the start) a schema is served as
// soon as the registry has it.
type registrySource struct {
	c *schemaregistry.Client
	p *Pipeline
}

func (r registrySource) Lookup(id int32) (string, error) {
	s, err := r.c.Lookup(id)
	switch {
	case err == nil:
		if r.p != nil && !r.p.desc.schemaSeen(id) {
			return "", fmt.Errorf("%w: schema id %d is new: reading the table's columns again", avro.ErrSchemaPending, id)
		}
		return s.Text, nil
	case errors.Is(err, schemaregistry.ErrUnknownID):
		return "", fmt.Errorf("%w: %v", avro.ErrSchemaUnknown, err)
	default:
		return "", fmt.Errorf("%w: %v", avro.ErrSchemaPending, err)
	}
}

func (r registrySource) Wait(id int32) <-chan struct{} {
	if r.p != nil {
		if ch := r.p.desc.schemaDescribed(id); ch != nil {
			return ch
		}
	}
	return r.c.Wait(id)
}

// waitSchema parks l until the schema its next record needs has been
// fetched (or the pipeline stops), then schedules it again. The record is
// not consumed: it is decoded again after the wait.
func (p *Pipeline) waitSchema(l *lane, ready <-chan struct{}) {
	l.wait()
	p.waiters.Add(1)
	go func() {
		defer p.waiters.Done()
		select {
		case <-ready:
		case <-p.stopWaiters:
		}
		if l.ready() {
			p.runq.push(l)
		}
	}()
}
