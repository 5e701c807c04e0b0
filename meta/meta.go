// Package meta fills columns from a Kafka record's own fields (its topic,
// partition, offset, timestamp, key, headers and value bytes) rather than
// from its decoded value.
//
// A column takes a record's metadata when sink.clickhouse.columns maps it to
// one of the sources below. Every row a record makes gets the same values:
// they are functions of the record alone (nothing like the time it was
// received), so a replay of the same records builds the same rows.
//
//	_topic            String, LowCardinality(String)
//	_partition        Int32, Int64, UInt32, UInt64
//	_offset           Int64, UInt64
//	_timestamp        DateTime, DateTime64(p), Int64 or UInt64 (milliseconds)
//	_timestamp_type   Int8..Int64 (0 create, 1 log_append, -1 none),
//	                  String ("create", "log_append", "none")
//	_key              String (a null key is ""), Nullable(String) (NULL)
//	_headers          Map(String, String) (servers 21.8 and later)
//	_headers.key      Array(String): the header keys, in order
//	_headers.value    Array(String), Array(Nullable(String)): their values
//	_raw              String: the record's value, its bytes unchanged
//	_tombstone        UInt8, Bool: 1 (true) when the value is null
//	_key.NAME         the field NAME of the key, decoded as
//	                  decode.key.format says (json, avro): any type
//	                  the key's decoder fills
//
// A source field:NAME names the record field NAME (the spelling that
// reaches a field whose name is one of the sources above); any other
// source is a field of the record.
package meta

import (
	"fmt"
	"maps"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// The metadata sources.
const (
	Topic         = "_topic"
	Partition     = "_partition"
	Offset        = "_offset"
	Timestamp     = "_timestamp"
	TimestampType = "_timestamp_type"
	Key           = "_key"
	Headers       = "_headers"
	HeaderKeys    = "_headers.key"
	HeaderValues  = "_headers.value"
	Raw           = "_raw"
)

// FieldPrefix quotes a record field: the source "field:_offset" is the
// record's field _offset, not the record's offset.
const FieldPrefix = "field:"

// Sources lists the metadata sources, in the order the documentation
// gives them.
var Sources = []string{Topic, Partition, Offset, Timestamp, TimestampType, Key, Headers, HeaderKeys, HeaderValues, Raw, Tombstone}

// IsSource reports whether src is a metadata source.
func IsSource(src string) bool {
	switch src {
	case Topic, Partition, Offset, Timestamp, TimestampType, Key, Headers, HeaderKeys, HeaderValues, Raw, Tombstone:
		return true
	}
	return IsKeyField(src)
}

// Field returns the record field a source that is not a metadata source
// names: src without its field: prefix.
func Field(src string) string { return strings.TrimPrefix(src, FieldPrefix) }

// Quote returns the source that reads the record field name: name itself,
// or name with the field: prefix when name is a metadata source.
func Quote(name string) string {
	if IsSource(name) {
		return FieldPrefix + name
	}
	return name
}

// DecoderFields returns the fields a value decoder reads for columns whose
// sources are srcs: "" (no field: the decoder appends the column's default,
// which Fill replaces) for a metadata source, the unquoted field otherwise.
// It returns srcs itself when no source needs either.
func DecoderFields(srcs []string) []string {
	var out []string
	for i, s := range srcs {
		f := s
		if IsSource(s) {
			f = ""
		} else if strings.HasPrefix(s, FieldPrefix) {
			f = Field(s)
		}
		if f != s && out == nil {
			out = append([]string(nil), srcs...)
		}
		if out != nil {
			out[i] = f
		}
	}
	if out == nil {
		return srcs
	}
	return out
}

// Types returns the column types a source fits, as they would be written
// in a CREATE TABLE, the first being the one etl schema proposes.
func Types(src string) []string {
	switch src {
	case Topic:
		return []string{"LowCardinality(String)", "String"}
	case Partition:
		return []string{"Int32", "Int64", "UInt32", "UInt64"}
	case Offset:
		return []string{"Int64", "UInt64"}
	case Timestamp:
		return []string{"DateTime64(3)", "DateTime", "Int64", "UInt64"}
	case TimestampType:
		return []string{"Int8", "Int16", "Int32", "Int64", "String"}
	case Key:
		return []string{"String", "Nullable(String)"}
	case Headers:
		return []string{"Map(String, String)"}
	case HeaderKeys:
		return []string{"Array(String)"}
	case HeaderValues:
		return []string{"Array(String)", "Array(Nullable(String))"}
	case Raw:
		return []string{"String"}
	case Tombstone:
		return []string{"UInt8", "Bool"}
	}
	if IsKeyField(src) {
		// Any type the key's decoder fills; a text is the guess etl
		// schema proposes.
		return []string{"String"}
	}
	return nil
}

// exprTypes are the types the transform chain reads the sources as when
// no column they flow into unchanged and no decode.fields entry gives
// one.
var exprTypes = map[string]string{
	Topic: "String", Partition: "Int32", Offset: "Int64", Timestamp: "DateTime64(3)", TimestampType: "Int8",
	Key: "Nullable(String)", HeaderKeys: "Array(String)", HeaderValues: "Array(String)", Raw: "String",
	Tombstone: "Bool",
}

// WithTypes returns types (a source field's name to its type, from a
// schema) with the types of the metadata sources the transform chain
// reads added (they win over a field of the same name: field:NAME reaches
// that one). keyFields are the key's fields (_key.NAME) the chain reads:
// read as String when no column they flow into unchanged or
// decode.fields entry types them ("" when the key lacks the field; a
// String, unlike a Nullable, compares to the Bool a filter takes).
func WithTypes(types map[string]string, keyFields ...string) map[string]string {
	out := make(map[string]string, len(types)+len(exprTypes)+len(keyFields))
	maps.Copy(out, types)
	maps.Copy(out, exprTypes)
	for _, k := range keyFields {
		out[k] = "String"
	}
	return out
}

// setter truncates col to from rows, then appends the value of its
// source for record r, n times.
type setter func(r *kgo.Record, col chunk.Column, from, n int) error

type column struct {
	col    int
	source string
	set    setter
	fast   fastKind
}

// fastKind names a column Fill fills without calling its setter.
type fastKind uint8

const (
	slow fastKind = iota
	partitionInt32
	partitionInt64
	offsetInt64
	offsetUInt64
	keyField // a field of the decoded key (Filler.key)
)

// fastOf is the fastKind of source src into a column of type t.
func fastOf(src string, t *chunk.Type) fastKind {
	switch k := t.Base().Kind; {
	case src == Partition && k == chunk.KindInt32:
		return partitionInt32
	case src == Partition && k == chunk.KindInt64:
		return partitionInt64
	case src == Offset && k == chunk.KindInt64:
		return offsetInt64
	case src == Offset && k == chunk.KindUInt64:
		return offsetUInt64
	}
	return slow
}

// Filler fills the metadata columns of chunks of one schema. Without a
// key to decode (DecodesKey false) it holds no state between calls and is
// safe for concurrent use; one that decodes keys holds the current
// record's key (DecodeKey) and belongs to one worker.
type Filler struct {
	cols []column
	name []string
	typ  []string
	key  *keyPart // nil when keys are bytes (decode.key.format none)
}

// Compile returns the filler of the columns of s whose sources (srcs[i]
// is column i's) are metadata sources, or nil when there is none.
// version is the oldest ClickHouse server version the table is on (""
// when unknown), rg its ranges (those the value decoders hold values
// to). A column whose type does not fit its source is refused, naming the
// column, the source and the types that fit.
func Compile(s *chunk.Schema, srcs []string, version string, rg chunk.ServerRanges) (*Filler, error) {
	return CompileWith(s, srcs, Options{Version: version, Ranges: rg})
}

// CompileWith is Compile with the record's key decoded as o.KeyFormat
// says: the filler then decodes each record's key (DecodeKey) even when
// no column reads it (a key that cannot be decoded rejects the record),
// and fills the columns of sources _key.NAME from it. A _key.NAME source
// without a json or avro key format is refused.
func CompileWith(s *chunk.Schema, srcs []string, o Options) (*Filler, error) {
	var f *Filler
	var keyCols []int
	version, rg := o.Version, o.Ranges
	for i, src := range srcs {
		if !IsSource(src) {
			continue
		}
		t := s.Types[i]
		if IsKeyField(src) {
			if f == nil {
				f = &Filler{}
			}
			keyCols = append(keyCols, i)
			f.cols = append(f.cols, column{col: i, source: src, fast: keyField})
			f.name = append(f.name, s.Names[i])
			f.typ = append(f.typ, t.Name)
			continue
		}
		set, ok := compileSetter(src, t, rg)
		if !ok {
			return nil, fmt.Errorf("column %s (%s) cannot hold %s: its type must be one of %s",
				s.Names[i], t.Name, src, strings.Join(Types(src), ", "))
		}
		if t.Base().Kind == chunk.KindMap && version != "" && !chunk.VersionAtLeast(version, 21, 8) {
			return nil, fmt.Errorf("column %s (%s) cannot hold %s: ClickHouse %s has no Map type (it came in 21.8); use two Array(String) columns fed by %s and %s, for example a Nested headers (key String, value String) mapped from %s",
				s.Names[i], t.Name, src, version, HeaderKeys, HeaderValues, Headers)
		}
		if f == nil {
			f = &Filler{}
		}
		f.cols = append(f.cols, column{col: i, source: src, set: set, fast: fastOf(src, t)})
		f.name = append(f.name, s.Names[i])
		f.typ = append(f.typ, t.Name)
	}
	return compileKey(f, s, srcs, keyCols, o)
}

// Columns returns the indexes of the columns f fills.
func (f *Filler) Columns() []int {
	out := make([]int, len(f.cols))
	for i, c := range f.cols {
		out[i] = c.col
	}
	return out
}

// Fill sets the metadata columns of rows [from, c.Rows) of c, which the
// value decoder appended for record r (a column it does not fill may be
// short of them, or hold its defaults), to r's values. On error (a
// timestamp outside the column's range) the metadata columns may be left
// short: the caller takes the record's rows back (c.Truncate(from)).
func (f *Filler) Fill(r *kgo.Record, c *chunk.Chunk, from int) *decode.Error {
	n := c.Rows - from
	if n <= 0 {
		return nil
	}
	for i := range f.cols {
		m := &f.cols[i]
		// The commonest columns (a partition, an offset) without an
		// indirect call.
		switch m.fast {
		case partitionInt32:
			fillFixed(c.Cols[m.col].(*chunk.Fixed[int32]), from, n, r.Partition)
			continue
		case partitionInt64:
			fillFixed(c.Cols[m.col].(*chunk.Fixed[int64]), from, n, int64(r.Partition))
			continue
		case offsetInt64:
			fillFixed(c.Cols[m.col].(*chunk.Fixed[int64]), from, n, r.Offset)
			continue
		case offsetUInt64:
			fillFixed(c.Cols[m.col].(*chunk.Fixed[uint64]), from, n, uint64(r.Offset))
			continue
		case keyField:
			f.key.set(f.key.cols[i], c.Cols[m.col], from, n)
			continue
		}
		if err := m.set(r, c.Cols[m.col], from, n); err != nil {
			return &decode.Error{Reason: decode.ReasonOutOfRange, Field: m.source, Column: f.name[i], Type: f.typ[i], Err: err}
		}
	}
	if c.Absent != nil {
		for i := range f.cols {
			if col := f.cols[i].col; int(c.Absent[col]) > from {
				c.Absent[col] = int32(from) // the rows hold values, not defaults
			}
		}
	}
	return nil
}

// fillFixed truncates col to from rows and appends v n times (n > 0).
func fillFixed[T int32 | int64 | uint64](col *chunk.Fixed[T], from, n int, v T) {
	d := append(col.Data[:from], v)
	for i := 1; i < n; i++ {
		d = append(d, v)
	}
	col.Data = d
}
