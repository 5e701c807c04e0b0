package meta

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// KeyPrefix starts the source of a field of the record's decoded key:
// _key.user_id is the key's field user_id (_key.a.b reaches into a nested
// object or record). The key is decoded as decode.key.format says.
const KeyPrefix = "_key."

// Tombstone is the source that is true for a record whose value is null
// (a Kafka tombstone).
const Tombstone = "_tombstone"

// The key formats (decode.key.format).
const (
	KeyNone   = "none"
	KeyString = "string"
	KeyJSON   = "json"
	KeyAvro   = "avro"
)

// IsKeyField reports whether src is a field of the decoded key
// (_key.NAME).
func IsKeyField(src string) bool {
	return len(src) > len(KeyPrefix) && strings.HasPrefix(src, KeyPrefix)
}

// KeyField is the key's field a _key.NAME source names: NAME.
func KeyField(src string) string { return strings.TrimPrefix(src, KeyPrefix) }

// NewKeyDecoder returns a decoder of record keys into chunks of schema s,
// column i taking the key's field fields[i].
type NewKeyDecoder func(s *chunk.Schema, fields []string) (decode.Decoder, error)

// Options are what CompileWith needs besides the columns.
type Options struct {
	// Version is the oldest ClickHouse server version the table is on
	// ("" when unknown); Ranges its ranges.
	Version string
	Ranges  chunk.ServerRanges
	// KeyFormat is decode.key.format: "" or none (the key is bytes),
	// string (UTF-8 text), json or avro (decoded, its fields read as
	// _key.NAME by NewKey's decoder).
	KeyFormat string
	NewKey    NewKeyDecoder
}

// keyPart decodes the current record's key, once per record, into a
// one-row chunk whose columns the _key.NAME columns copy.
type keyPart struct {
	format string
	dec    decode.Decoder // json and avro
	c      *chunk.Chunk   // json and avro: the key's row
	cols   []int          // the filler's key columns: index into c.Cols per f.cols entry (-1 for others)
}

// compileKey adds the key decoder to f when the key is decoded (string,
// json, avro), building the key chunk of the columns in keyCols (indexes
// of s) from their _key.NAME sources. It returns f, a new filler when f
// is nil and the key is decoded.
func compileKey(f *Filler, s *chunk.Schema, srcs []string, keyCols []int, o Options) (*Filler, error) {
	format := o.KeyFormat
	if format == "" {
		format = KeyNone
	}
	if len(keyCols) > 0 && format != KeyJSON && format != KeyAvro {
		i := keyCols[0]
		return nil, fmt.Errorf("column %s reads %s, a field of the record's key, but decode.key.format is %s: set it to json or avro", s.Names[i], srcs[i], format)
	}
	if format == KeyNone {
		return f, nil
	}
	if f == nil {
		f = &Filler{}
	}
	k := &keyPart{format: format}
	f.key = k
	if format == KeyString {
		return f, nil
	}
	ks := &chunk.Schema{}
	var fields []string
	for _, i := range keyCols {
		ks.Names = append(ks.Names, s.Names[i])
		ks.Types = append(ks.Types, s.Types[i])
		fields = append(fields, KeyField(srcs[i]))
	}
	if o.NewKey == nil {
		return nil, fmt.Errorf("decode.key.format %s: no key decoder", format)
	}
	d, err := o.NewKey(ks, fields)
	if err != nil {
		return nil, fmt.Errorf("decode.key.format %s: %w", format, err)
	}
	c, err := chunk.New(ks)
	if err != nil {
		return nil, err
	}
	k.dec, k.c = d, c
	k.cols = make([]int, len(f.cols))
	for j := range f.cols {
		k.cols[j] = -1
		for ki, i := range keyCols {
			if f.cols[j].col == i {
				k.cols[j] = ki
			}
		}
	}
	return f, nil
}

// DecodesKey reports whether f decodes or checks the records' keys
// (DecodeKey does something).
func (f *Filler) DecodesKey() bool { return f != nil && f.key != nil }

// DecodeKey decodes record r's key for the Fill calls of r's rows that
// follow, under decode.key.format: string checks that it is UTF-8; json
// and avro decode it into the _key.NAME columns' values. A null key gives
// every field its column's default (NULL for a Nullable). A key that
// cannot be decoded is a *decode.Error naming the key, the record's
// offset and what is wrong; an Avro key whose schema is still being
// fetched returns the decoder's decode.SchemaPending unchanged (the
// record is decoded again later). f holds the key's row until the next
// call: a Filler that decodes keys is one worker's.
func (f *Filler) DecodeKey(r *kgo.Record) error {
	k := f.key
	if k == nil {
		return nil
	}
	if k.format == KeyString {
		if !utf8.Valid(r.Key) {
			return keyError(r, k.format, decode.ReasonCorrupt, errors.New("not valid UTF-8"))
		}
		return nil
	}
	k.c.Reset()
	if r.Key == nil {
		for _, col := range k.c.Cols {
			col.AppendDefault()
		}
		k.c.Rows = 1
		return nil
	}
	n, err := k.dec.Decode(r.Key, k.c)
	if err != nil {
		var de *decode.Error
		if !errors.As(err, &de) {
			return err // not the key's fault: a schema still being fetched
		}
		return keyError(r, k.format, de.Reason, err)
	}
	if n != 1 {
		k.c.Reset()
		return keyError(r, k.format, decode.ReasonCorrupt, fmt.Errorf("it makes %d rows, want 1", n))
	}
	return nil
}

// keyError is the error of a record whose key cannot be decoded.
func keyError(r *kgo.Record, format string, reason decode.Reason, err error) *decode.Error {
	return &decode.Error{Reason: reason, Err: fmt.Errorf("key %s (partition %d, offset %d) is not %s: %w",
		quoteKey(r.Key), r.Partition, r.Offset, keyFormatName(format), err)}
}

func keyFormatName(format string) string {
	switch format {
	case KeyJSON:
		return "a JSON object"
	case KeyAvro:
		return "a Confluent-framed Avro record"
	}
	return "a UTF-8 string"
}

// quoteKey quotes at most the first 64 bytes of a key.
func quoteKey(b []byte) string {
	const most = 64
	if len(b) > most {
		return strconv.Quote(string(b[:most])) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return strconv.Quote(string(b))
}

// set copies the key's decoded field (column ki of the key chunk)
// into the column, n times.
func (k *keyPart) set(ki int, col chunk.Column, from, n int) {
	col.Truncate(from)
	src := k.c.Cols[ki]
	for range n {
		col.AppendFrom(src, 0)
	}
}

// tombstoneSetter appends whether the record's value is null to a UInt8
// or Bool column.
func tombstoneSetter(t *chunk.Type) (setter, bool) {
	switch t.Kind {
	case chunk.KindUInt8:
		return func(r *kgo.Record, col chunk.Column, from, n int) error {
			c := col.(*chunk.Fixed[uint8])
			var v uint8
			if r.Value == nil {
				v = 1
			}
			c.Data = c.Data[:from]
			for range n {
				c.Data = append(c.Data, v)
			}
			return nil
		}, true
	case chunk.KindBool:
		return func(r *kgo.Record, col chunk.Column, from, n int) error {
			c := col.(*chunk.Fixed[bool])
			c.Data = c.Data[:from]
			for range n {
				c.Data = append(c.Data, r.Value == nil)
			}
			return nil
		}, true
	}
	return nil, false
}
