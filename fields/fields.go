// Package fields says what is known of the records' fields before any
// record is read: the Avro schemas the configuration names (schema_file,
// the reader schema, the registry's latest schemas), the Protobuf message
// (of the local schema, or of the registry's latest schemas: protobuf.go)
// and the fields' types
// the transform chain reads (schemas.go), the schema.Source the tables are
// derived from, and the field names a sink.clickhouse.columns entry or a
// transform expression is checked against, with a did-you-mean. The
// pipeline builds its decoders on them; etl validate, etl schema and
// etl tail (package inspect) check and derive with the same.
package fields

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/etl-project/etl/config"
	"github.com/etl-project/etl/decode/avro"
	"github.com/etl-project/etl/internal/names"
	"github.com/etl-project/etl/meta"
	"github.com/etl-project/etl/schema"
	"github.com/etl-project/etl/transform"
)

// Set holds the names the records' fields are known by before any record
// is read: those of the Avro schema every record is resolved to (the
// reader schema, or the one writer schema of schema_file), of the
// registry's latest schemas (validate -connect), or of decode.fields for
// JSON. Schemaless JSON (no decode.fields) has none: its fields are known
// only as records arrive, and a column they never fill is seen by
// etl_sink_defaulted_rows_total instead.
type Set struct {
	// From names the list in messages ("decode.fields", "the Avro schema
	// decode.avro.schema_file a.avsc").
	From string
	// names holds every field and every prefix of a dotted one ("user"
	// of "user.id": a record, or an array of records, that a Tuple or a
	// Nested structure takes whole).
	names map[string]bool
}

// NewSet returns an empty set named from.
func NewSet(from string) *Set {
	return &Set{From: from, names: map[string]bool{}}
}

// Add adds field name and its prefixes.
func (r *Set) Add(name string) {
	for {
		r.names[name] = true
		i := strings.LastIndexByte(name, '.')
		if i <= 0 {
			return
		}
		name = name[:i]
	}
}

// AddAll adds every name of o.
func (r *Set) AddAll(o *Set) {
	for n := range o.names {
		r.names[n] = true
	}
}

// Has reports whether name is a field (or a prefix of one).
func (r *Set) Has(name string) bool { return r.names[name] }

// Sorted is every name, for did-you-mean.
func (r *Set) Sorted() []string { return slices.Sorted(maps.Keys(r.names)) }

// FromAvro reads the fields of an Avro record schema: every top-level
// field (those without a ClickHouse type too) and every field of a nested
// record or of the elements of an array of records ("a.b").
func FromAvro(text, from string) (*Set, error) {
	cols, typed, err := avro.Columns(text)
	if err != nil {
		return nil, err
	}
	r := NewSet(from)
	for _, c := range cols {
		r.Add(c.Name)
	}
	for f := range typed {
		r.Add(f)
	}
	return r, nil
}

// FromSource reads the fields of what etl schema derives the tables from.
func FromSource(src schema.Source, from string) *Set {
	r := NewSet(from)
	for _, c := range src.Columns {
		r.Add(c.Name)
	}
	for f := range src.Fields {
		r.Add(f)
	}
	return r
}

// Offline is what the configuration alone says of the records' fields:
// the reader schema, else schema_file (Avro framings raw and
// single_object), the message of the local Protobuf schema (raw
// framing; a message the schema lacks is an error with a did-you-mean),
// else decode.fields (JSON). nil when it says nothing (schemaless JSON,
// Avro and Protobuf with only the registry).
func Offline(cfg *config.Config) (*Set, error) {
	if cfg.Decode.Format == config.FormatProtobuf {
		return offlineProtobuf(cfg)
	}
	if cfg.Decode.Format != config.FormatAvro {
		if len(cfg.Decode.Fields) == 0 {
			return nil, nil
		}
		r := NewSet("decode.fields")
		for f := range cfg.Decode.Fields {
			r.Add(f)
		}
		return r, nil
	}
	a := cfg.Decode.Avro
	if rs := a.ReaderSchema; rs != "" {
		text, from := rs, "the reader schema decode.avro.reader_schema"
		if !strings.HasPrefix(strings.TrimSpace(rs), "{") {
			b, err := os.ReadFile(rs)
			if err != nil {
				return nil, err
			}
			text, from = string(b), from+" "+rs
		}
		return FromAvro(text, from)
	}
	if a.Framing != avro.FramingConfluent && a.SchemaFile != "" {
		b, err := os.ReadFile(a.SchemaFile)
		if err != nil {
			return nil, err
		}
		return FromAvro(string(b), "the Avro schema decode.avro.schema_file "+a.SchemaFile)
	}
	return nil, nil
}

// CheckMapped checks every sink's sink.clickhouse.columns against the
// records' fields r: a column mapped to a field no record has, and that
// the transform chain does not derive, would hold its default in every
// row. Each such entry is an error naming the field and the closest known
// one. A nil r checks nothing.
func CheckMapped(cfg *config.Config, r *Set) []error {
	if r == nil {
		return nil
	}
	derived := map[string]bool{}
	for _, d := range transform.Derived(cfg.Transform) {
		derived[d] = true
	}
	if cfg.CDC() {
		// The debezium envelope's fields (_version, _deleted, ...).
		for f := range transform.EnvelopeFields {
			derived[f] = true
		}
	}
	var candidates []string
	var errs []error
	for _, ns := range cfg.SinkList() {
		ch := ns.ClickHouse
		if ch == nil {
			continue
		}
		for _, col := range slices.Sorted(maps.Keys(ch.Columns)) {
			field := ch.Columns[col]
			if meta.IsSource(field) {
				continue // the record's metadata, not a field
			}
			field = meta.Field(field)
			if r.Has(field) || derived[field] {
				continue
			}
			if candidates == nil {
				candidates = append(r.Sorted(), slices.Sorted(maps.Keys(derived))...)
			}
			msg := fmt.Sprintf("%s.columns.%s: field %q is not a field of the records: %s has no such field%s; column %s would hold its default in every row",
				cfg.KeyPath(ns), col, field, r.From, names.DidYouMean(field, candidates), col)
			if r.From == "decode.fields" {
				msg += " (with decode.fields, a field a column is mapped to must be declared there, with its type)"
			}
			errs = append(errs, fmt.Errorf("%s", msg))
		}
	}
	return errs
}

// CheckExpr checks the fields the transform chain's expressions read
// against the records' fields, when an Avro schema or a Protobuf
// message lists them all. With
// decode.fields it does not: a JSON field that goes unchanged into a
// column of its name need not be declared, and the tables are not known
// here (the chain is checked against them when it is compiled).
func CheckExpr(cfg *config.Config, r *Set) error {
	if r == nil || (cfg.Decode.Format != config.FormatAvro && cfg.Decode.Format != config.FormatProtobuf) || len(cfg.Transform) == 0 {
		return nil
	}
	// A record's metadata (_topic, _offset, ...) is read like a field.
	has := func(f string) bool { return r.Has(f) || meta.IsSource(f) }
	return transform.UnknownFields(cfg.Transform, has, r.Sorted(), r.From)
}

// offlineProtobuf is Offline for Protobuf: the fields of the local
// schema's message; nil with the registry alone.
func offlineProtobuf(cfg *config.Config) (*Set, error) {
	_, md, err := LocalProtobuf(context.Background(), cfg)
	if err != nil || md == nil {
		return nil, err
	}
	src, err := schema.FromProtobuf(md)
	if err != nil {
		return nil, fmt.Errorf("decode.protobuf.message %s: %w", md.FullName(), err)
	}
	from := "the Protobuf message " + string(md.FullName())
	if p := cfg.Decode.Protobuf; len(p.ProtoFiles) > 0 {
		from += " of decode.protobuf.proto_files " + strings.Join(p.ProtoFiles, ", ")
	} else {
		from += " of decode.protobuf.descriptor_set " + p.DescriptorSet
	}
	return FromSource(src, from), nil
}
