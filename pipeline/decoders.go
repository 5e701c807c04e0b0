package pipeline

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/schemaregistry"
	"github.com/etl-project/etl/sink/clickhouse"
)

// prewarmTimeout bounds the fetch of decode.avro.prewarm_subjects at
// startup: a registry that is down or does not answer delays the start by
// at most this much, and never stops it.
const prewarmTimeout = 10 * time.Second

// setupAvro prepares what the Avro decoders share: the registry client
// (confluent framing, with the configured subjects fetched at startup) or
// the writer schema from schema_file.
func (p *Pipeline) setupAvro(ctx context.Context) error {
	a := p.cfg.Decode.Avro
	if rs := a.ReaderSchema; rs != "" {
		if strings.HasPrefix(strings.TrimSpace(rs), "{") {
			p.readerSchema = rs
		} else {
			b, err := os.ReadFile(rs)
			if err != nil {
				return fmt.Errorf("decode.avro.reader_schema: %w", err)
			}
			p.readerSchema = string(b)
		}
	}
	if a.Framing != avro.FramingConfluent {
		b, err := os.ReadFile(a.SchemaFile)
		if err != nil {
			return fmt.Errorf("decode.avro.schema_file: %w", err)
		}
		p.avroSchema = string(b)
	}
	// The fields' types for the transform chain: those of the reader
	// schema, which every record is resolved to, or else of the one
	// writer schema.
	if known := p.readerSchema; known != "" || p.avroSchema != "" {
		if known == "" {
			known = p.avroSchema
		}
		types, err := avro.FieldTypes(known)
		if err != nil {
			return fmt.Errorf("decode.avro: %w", err)
		}
		p.avroFieldTypes = types
	}
	if a.Framing != avro.FramingConfluent {
		return nil
	}
	r := a.Registry
	var tc *tls.Config
	if r.TLS != nil && r.TLS.Enabled {
		var err error
		if tc, err = r.TLS.Config("decode.avro.registry.tls"); err != nil {
			return err
		}
	}
	password, err := r.Secret()
	if err != nil {
		return fmt.Errorf("decode.avro.registry.password_file: %w", err)
	}
	reg, err := schemaregistry.New(schemaregistry.Options{
		URL: r.URL.Value(), Username: r.Username, Password: password, TLS: tc, PasswordFunc: rereadSecret(r.PasswordFile, r.Secret),
		NegativeCacheTTL: a.NegativeCacheTTL.D(), Registerer: p.component("decode"), Log: p.log,
	})
	if err != nil {
		return fmt.Errorf("decode.avro.registry: %w", err)
	}
	p.registry = reg
	if len(a.PrewarmSubjects) > 0 {
		pctx, cancel := context.WithTimeout(ctx, prewarmTimeout)
		defer cancel()
		if err := reg.Prewarm(pctx, a.PrewarmSubjects); err != nil {
			// Not fatal: the schemas are fetched when records need them.
			p.log.Warn("could not fetch every prewarm subject; their schemas will be fetched on demand", "err", err)
		}
	}
	if p.avroFieldTypes == nil && len(p.cfg.Transform) > 0 {
		p.avroFieldTypes = p.registryFieldTypes(ctx)
	}
	return nil
}

// registryFieldTypes types the fields the transform chain reads from the
// latest schema of each prewarm subject (or of each topic's "<topic>-value"
// subject): a field takes the type the first subject gives it. Subjects
// the registry does not have, or a registry that does not answer within
// prewarmTimeout, type nothing: those fields must then be declared in
// decode.fields, and the error saying so names the registry's failure.
func (p *Pipeline) registryFieldTypes(ctx context.Context) map[string]string {
	subjects := p.subjects()
	ctx, cancel := context.WithTimeout(ctx, prewarmTimeout)
	defer cancel()
	types := map[string]string{}
	for _, subject := range subjects {
		s, err := p.registry.Latest(ctx, subject)
		if err != nil {
			p.log.Warn("cannot type the transform's fields from the registry", "subject", subject, "err", err)
			continue
		}
		ft, err := avro.FieldTypes(s.Text)
		if err != nil {
			p.log.Warn("cannot type the transform's fields from the registry", "subject", subject, "id", s.ID, "err", err)
			continue
		}
		for f, t := range ft {
			if _, ok := types[f]; !ok {
				types[f] = t
			}
		}
	}
	return types
}

// newAvroDecoder returns one worker's Avro decoder for target t.
func (p *Pipeline) newAvroDecoder(t *clickhouse.Target) (decode.Decoder, error) {
	var src avro.SchemaSource
	if p.registry != nil {
		src = registrySource{p.registry, p}
	}
	d, err := avro.NewFramed(p.cfg.Decode.Avro.Framing, p.avroSchema, src, t.Schema,
		avro.Options{Fields: t.Fields, MaxRecordBytes: int(p.cfg.Decode.MaxRecordBytes), ReaderSchema: p.readerSchema,
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
// The first time a schema id is served, the table's columns are read again
// before any record of it is decoded, so a column added for a new field
// (ALTER TABLE ... ADD COLUMN before the producers moved on) is filled from
// the first record that carries it.
type registrySource struct {
	c *schemaregistry.Client
	p *Pipeline
}

func (r registrySource) Lookup(id int32) (string, error) {
	s, err := r.c.Lookup(id)
	switch {
	case err == nil:
		if !r.p.schemaSeen(id) {
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
	if ch := r.p.schemaDescribed(id); ch != nil {
		return ch
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

// rereadSecret returns read when a password_file is set (file), so the
// client reads the file again where it logs in anew and a rotated secret
// is picked up; nil when the password is given in the configuration.
func rereadSecret(file string, read func() (string, error)) func() (string, error) {
	if file == "" {
		return nil
	}
	return read
}
