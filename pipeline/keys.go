package pipeline

import (
	"fmt"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/decode/json"
	"github.com/etl-project/etl/meta"
)

// metaOptions are what meta.CompileWith needs: the servers' version and
// ranges, and the key's decoder (decode.key.format).
func (p *Pipeline) metaOptions() meta.Options {
	return meta.Options{
		Version: p.serverVersion(), Ranges: p.serverRanges(),
		KeyFormat: p.cfg.KeyFormat(), NewKey: p.newKeyDecoder,
	}
}

// newKeyDecoder returns a decoder of record keys into chunks of schema s
// (the columns mapped from _key.NAME, or the staging columns the chain
// reads them from), column i from the key's field fields[i]: a JSON object
// (one per key), or a Confluent-framed Avro datum whose writer schema the
// value's registry serves. Writer fields no column reads are skipped, and
// a column whose field the key lacks takes its default (NULL for a
// Nullable).
func (p *Pipeline) newKeyDecoder(s *chunk.Schema, fields []string) (decode.Decoder, error) {
	switch p.cfg.KeyFormat() {
	case config.KeyJSON:
		return json.New(s, json.Options{
			Fields: fields, MaxRecordBytes: int(p.cfg.Decode.MaxRecordBytes),
			Framing: json.FramingSingle, TimeLayout: p.cfg.Decode.JSON.TimeLayout, Ranges: p.serverRanges(),
		})
	case config.KeyAvro:
		if p.lookup == nil {
			return nil, fmt.Errorf("avro keys need decode.avro.registry")
		}
		return avro.NewFramed(avro.FramingConfluent, "", p.lookup, s, avro.Options{
			Fields: fields, MaxRecordBytes: int(p.cfg.Decode.MaxRecordBytes),
			Validate: avro.ValidateOff, Ranges: p.serverRanges(),
		})
	}
	return nil, fmt.Errorf("decode.key.format %q decodes no fields", p.cfg.KeyFormat())
}

// appendTombstone appends to the staging chunk c the row of a record
// whose value is null (a Kafka tombstone), when the chain reads
// _tombstone (config.Tombstones): every column its default, the
// metadata columns (the key's fields among them) filled after it like
// any record's. It returns false when tombstones are not taken in.
func (p *Pipeline) appendTombstone(c *chunk.Chunk) bool {
	if !p.tombstones {
		return false
	}
	for _, col := range c.Cols {
		col.AppendDefault()
	}
	c.Rows++
	return true
}
