package pipeline

import (
	"fmt"
	"slices"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/meta"
)

// rawDecoder is decode.format raw: every record makes one row, and every
// column of it is a record's metadata (meta.Filler fills them all, the
// value's bytes going to the columns mapped from _raw). It parses
// nothing: it only counts the row.
type rawDecoder struct {
	max int
}

// newRawDecoder checks that every column of schema s takes a record's
// metadata (srcs[i] is column i's source) and that one takes its value.
func newRawDecoder(s *chunk.Schema, srcs []string, maxRecordBytes int) (*rawDecoder, error) {
	for i, src := range srcs {
		if !meta.IsSource(src) {
			return nil, fmt.Errorf("decode: decode.format %s: column %s reads field %q, but a raw record has no fields: map it to a record's metadata (%s) in sink.clickhouse.columns, or leave it to the server with exclude_columns",
				config.FormatRaw, s.Names[i], meta.Field(src), meta.Raw)
		}
	}
	if !slices.Contains(srcs, meta.Raw) {
		return nil, fmt.Errorf("decode: decode.format %s: no column takes the record's value: map a String column to %s in sink.clickhouse.columns", config.FormatRaw, meta.Raw)
	}
	return &rawDecoder{max: maxRecordBytes}, nil
}

// Decode implements decode.Decoder: one row, whose columns the filler
// appends. A null value (a tombstone) is refused as with every format; an
// empty one is an empty string.
func (d *rawDecoder) Decode(value []byte, c *chunk.Chunk) (int, error) {
	if value == nil {
		return 0, decode.NullValue(value)
	}
	if d.max > 0 && len(value) > d.max {
		return 0, decode.TooLarge(len(value), d.max)
	}
	c.Rows++
	return 1, nil
}
